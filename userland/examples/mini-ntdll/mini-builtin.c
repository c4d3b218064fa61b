// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * mini-ntdll's "ELF builtin DLL": a library that Windows code calls (in
 * the Windows x64 convention) but that is ELF, loaded with dlopen() as
 * Wine's dlopen_dll() loads its .so builtin DLLs.  It makes a raw
 * syscall from its own code, outside libc, while the caller's selector
 * says TRAP.  Wine on SUD therefore turns dispatch off for the whole
 * process once such a library is loaded
 * (signal_disable_syscall_dispatch()); mini-ntdll keeps dispatch on with
 * the selector dropped, so that only PROT_NOSYSCALL memory traps, and
 * this library's syscalls run natively.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

long __attribute__((ms_abi)) builtin_work(void);

long __attribute__((ms_abi)) builtin_work(void)
{
	long pid;
	int fd;

	/* A syscall instruction in this library, not in libc. */
	__asm__ __volatile__("syscall" : "=a"(pid) : "a"((long)SYS_getpid) : "rcx", "r11", "memory");
	/* And one through libc, whose range is always native. */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	close(fd);
	return pid;
}
