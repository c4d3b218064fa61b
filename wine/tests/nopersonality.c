// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Run a program under the personality() rule of Docker's default seccomp
 * profile (moby profiles/seccomp/default.json): personality(2) is allowed
 * only with 0, 0x8, 0x20000, 0x20008 or 0xffffffff (the query), anything
 * else fails with EPERM.  So PER_WINE (0x11) is refused while
 * PR_WINE_DISPATCH is not, and a Wine that registers perwine dispatch
 * without checking that it got the personality has no dispatch at all.
 *
 *   nopersonality [--trap] PROGRAM [ARG...]
 *
 * --trap: SECCOMP_RET_TRAP instead of EPERM (a SIGSYS, which kills a
 * program that has no handler for it yet).
 *
 * Exit status: the program's, or 2 when the filter cannot be installed
 * or the program not run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARG0_LO offsetof(struct seccomp_data, args[0])

static volatile sig_atomic_t trapped;

static void on_sigsys(int sig)
{
	(void)sig;
	trapped = 1;
}

int main(int argc, char **argv)
{
	int trap = argc > 1 && !strcmp(argv[1], "--trap");
	/* personality(arg) with arg's low 32 bits (the kernel takes an
	 * unsigned int) one of the allowed values: allow; otherwise EPERM. */
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_personality, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LO),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x0, 5, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x8, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x20000, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x20008, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffff, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, trap ? SECCOMP_RET_TRAP : SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(filter) / sizeof(filter[0]),
		.filter = filter,
	};

	argv += trap;
	argc -= trap;
	if (argc < 2) {
		fprintf(stderr, "usage: %s [--trap] PROGRAM [ARG...]\n", argv[0]);
		return 2;
	}
	if (trap)
		signal(SIGSYS, on_sigsys);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0)) {
		fprintf(stderr, "%s: seccomp filter: %s\n", argv[0], strerror(errno));
		return 2;
	}
	/* The filter works, or the run below proves nothing. */
	if (trap ? (syscall(__NR_personality, 0x11UL), !trapped) :
		   syscall(__NR_personality, 0x11UL) != -1 || errno != EPERM) {
		fprintf(stderr, "%s: personality(0x11) was not %s\n", argv[0],
			trap ? "trapped" : "refused");
		return 2;
	}
	signal(SIGSYS, SIG_DFL);
	execvp(argv[1], argv + 1);
	fprintf(stderr, "%s: %s: %s\n", argv[0], argv[1], strerror(errno));
	return 2;
}
