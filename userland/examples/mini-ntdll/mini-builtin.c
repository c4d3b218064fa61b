// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * mini-ntdll's "builtin .so": Unix-side code loaded at run time, as Wine
 * loads its builtin DLLs' Unix libraries.  Its syscalls run natively:
 * with perwine only Windows memory traps, where Wine on SUD today turns
 * dispatch off for the whole process once such a library is loaded.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

long builtin_work(void);

long builtin_work(void)
{
	long pid = syscall(SYS_getpid);
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	close(fd);
	return pid;
}
