// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Interplay: a seccomp filter still applies to what PER_WINE lets run
 * natively, and with SUD and PER_WINE both on, SUD decides first.
 */
#include <stddef.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include "tap.h"

static void seccomp_child(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = f };
	long r;

	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		_exit(20);
	dispatch_on(&test_sel, 0, 0);
	set_perwine(1);
	test_sel = PERWINE_NATIVE;
	r = test_syscall(SYS_getppid, 0, 0, 0);
	_exit(r == -EPERM ? 0 : 21);
}

static volatile char sud_sel;

/* Both selectors must allow the handler's own sigreturn. */
static void allow_both(int sig, siginfo_t *si, void *uc)
{
	sud_sel = SYSCALL_DISPATCH_FILTER_ALLOW;
	record_sigsys(sig, si, uc);
}

static void sud_first_child(void)
{
	install_sigsys(allow_both);
	dispatch_on(&test_sel, 0, 0);
	set_perwine(1);
	if (prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0, &sud_sel))
		_exit(30);
	/* SUD blocks, PER_WINE says native: SUD's trap, si_errno 0. */
	sud_sel = SYSCALL_DISPATCH_FILTER_BLOCK;
	test_sel = PERWINE_NATIVE;
	test_syscall(SYS_getpid, 0, 0, 0);
	sud_sel = SYSCALL_DISPATCH_FILTER_ALLOW;
	if (trap_count != 1 || trap_info.si_errno != 0)
		_exit(31);
	/* SUD allows, PER_WINE traps: PER_WINE's trap. */
	trapped_call(SYS_getpid, 0, 0, 0);
	if (trap_count != 2 || trap_info.si_errno != PERWINE_TRAP_SELECTOR)
		_exit(32);
	_exit(0);
}

int main(void)
{
	int st;

	tap_require_perwine();
	tap_plan(2);
	st = run_child(seccomp_child);
	tap_ok(exited_with(st, 0), "seccomp EPERM for getppid applies when PER_WINE runs it natively (status %#x)", st);
	st = run_child(sud_first_child);
	tap_ok(exited_with(st, 0), "SUD and PER_WINE both on: SUD decides first (status %#x)", st);
	return tap_done();
}
