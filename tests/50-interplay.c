// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Interplay: a seccomp filter still applies to everything PERWINE_PER_WINE lets
 * run natively (selector NATIVE, the always-native range, no selector
 * with a NOSYSCALL mapping elsewhere), and with SUD and PERWINE_PER_WINE both
 * on, SUD decides first.
 */
#include <stddef.h>
#include <sys/mman.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include "tap.h"

static void filter_getppid_eperm(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		_exit(30);
}

/* Under the filter, every path of PERWINE_PER_WINE that runs getppid gets EPERM. */
static void seccomp_child(void)
{
	unsigned long ret_addr = (unsigned long)test_syscall_ret;

	filter_getppid_eperm();
	if (set_perwine(1) == -1)
		_exit(31);
	/* Selector NATIVE. */
	if (dispatch_on(&test_sel, 0, 0) || test_syscall(SYS_getppid, 0, 0, 0) != -EPERM)
		_exit(32);
	/* Always-native range, selector TRAP. */
	if (dispatch_on(&test_sel, ret_addr, 1))
		_exit(33);
	test_sel = PERWINE_TRAP;
	if (test_syscall(SYS_getppid, 0, 0, 0) != -EPERM)
		_exit(34);
	test_sel = PERWINE_NATIVE;
	/* No selector at all, and a PROT_NOSYSCALL mapping elsewhere. */
	if (dispatch_on(NULL, 0, 0) ||
	    mmap(NULL, 4096, PROT_READ | PROT_NOSYSCALL, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED ||
	    test_syscall(SYS_getppid, 0, 0, 0) != -EPERM)
		_exit(35);
	_exit(0);
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
	/* SUD blocks, PERWINE_PER_WINE says native: SUD's trap, si_errno 0. */
	sud_sel = SYSCALL_DISPATCH_FILTER_BLOCK;
	test_sel = PERWINE_NATIVE;
	test_syscall(SYS_getpid, 0, 0, 0);
	sud_sel = SYSCALL_DISPATCH_FILTER_ALLOW;
	if (trap_count != 1 || trap_info.si_errno != 0)
		_exit(31);
	/* SUD allows, PERWINE_PER_WINE traps: PERWINE_PER_WINE's trap. */
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
	tap_ok(exited_with(st, 0),
	       "seccomp EPERM for getppid on every native path: selector, range, VMA fallback (status %#x)",
	       st);
	st = run_child(sud_first_child);
	tap_ok(exited_with(st, 0), "SUD and PER_WINE both on: SUD decides first (status %#x)", st);
	return tap_done();
}
