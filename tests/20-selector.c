// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The selector byte: NATIVE runs the syscall, TRAP delivers SIGSYS with
 * the ABI's siginfo and the handler's RAX as the result, the syscall
 * never runs, and the always-native range is exempt.
 */
#include <sys/ioctl.h>
#include "tap.h"

int main(void)
{
	int fds[2], queued = -1;
	long r;

	tap_require_perwine();
	tap_plan(16);
	install_recorder();

	tap_ok(dispatch_on(&test_sel, 0, 0) == 0, "PR_WINE_DISPATCH_ON with a selector");
	tap_ok((set_perwine(1) & PERWINE_PER_MASK) == PER_LINUX, "personality(PER_WINE) returns the old type");
	tap_ok((personality(0xffffffff) & PERWINE_PER_MASK) == PERWINE_PER_WINE, "personality query reports PER_WINE");

	test_sel = PERWINE_NATIVE;
	r = test_syscall(SYS_getppid, 0, 0, 0);
	tap_ok(r == getppid() && trap_count == 0, "selector NATIVE: getppid runs natively (%ld)", r);

	r = trapped_call(SYS_getpid, 0, 0, 0);
	tap_ok(r == 42 && trap_count == 1, "selector TRAP: getpid returns the handler's RAX (%ld)", r);
	tap_ok(trap_info.si_signo == SIGSYS && trap_info.si_code == SYS_USER_DISPATCH,
	       "SIGSYS with si_code SYS_USER_DISPATCH (%d)", trap_info.si_code);
	tap_ok(trap_info.si_syscall == SYS_getpid, "si_syscall is the number (%d)", trap_info.si_syscall);
	tap_ok(trap_info.si_arch == AUDIT_ARCH_X86_64, "si_arch is AUDIT_ARCH_X86_64");
	tap_ok(trap_info.si_errno == PERWINE_TRAP_SELECTOR, "si_errno is PERWINE_TRAP_SELECTOR (%d)",
	       trap_info.si_errno);
	tap_ok(trap_info.si_call_addr == (void *)test_syscall_ret,
	       "si_call_addr is the address after the syscall instruction");

	/* A trapped write() must not write. */
	if (pipe(fds) == 0) {
		r = trapped_call(SYS_write, fds[1], (long)"x", 1);
		ioctl(fds[0], FIONREAD, &queued);
	}
	tap_ok(r == 42 && queued == 0, "a trapped write() writes nothing (%d bytes queued)", queued);

	trap_return = -EPERM;
	r = trapped_call(SYS_getppid, 0, 0, 0);
	tap_ok(r == -EPERM, "the handler can return an error (%ld)", r);
	trap_return = 42;

	/* The always-native range covers test_syscall's return address. */
	tap_ok(dispatch_on(&test_sel, (unsigned long)test_syscall,
			   test_syscall_ret - (const char *)test_syscall + 1) == 0,
	       "re-register with test_syscall as the always-native range");
	r = trapped_call(SYS_getppid, 0, 0, 0);
	test_sel = PERWINE_NATIVE;
	tap_ok(r == getppid() && trap_count == 3, "selector TRAP inside the native range runs natively");

	/* Any other personality type stops enforcement, the config stays. */
	dispatch_on(&test_sel, 0, 0);
	set_perwine(0);
	r = trapped_call(SYS_getppid, 0, 0, 0);
	test_sel = PERWINE_NATIVE;
	tap_ok(r == getppid() && trap_count == 3, "personality PER_LINUX: selector TRAP is ignored");

	personality(PERWINE_PER_WINE | ADDR_NO_RANDOMIZE);
	r = trapped_call(SYS_getpid, 0, 0, 0);
	tap_ok(r == 42 && trap_count == 4, "PER_WINE | ADDR_NO_RANDOMIZE still traps");
	return tap_done();
}
