// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ABI v2 "A trap is never restarted": whatever RAX held, -512 and -513
 * (ERESTARTSYS, ERESTARTNOINTR) and -516 (ERESTART_RESTARTBLOCK)
 * included, the handler sees RIP == si_call_addr, returning resumes
 * after the instruction and the syscall never runs again.  The control
 * is upstream Syscall User Dispatch, which rewinds such a trap.
 */
#include <sys/mman.h>
#include "tap.h"

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH	59
#define PR_SYS_DISPATCH_OFF		0
#define PR_SYS_DISPATCH_ON		1
#define SYSCALL_DISPATCH_FILTER_ALLOW	0
#define SYSCALL_DISPATCH_FILTER_BLOCK	1
#endif

static int *traps;
static long rip_ok, handler_rax = 42;
static volatile uint8_t sud_sel;

static void count_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	(*traps)++;
	rip_ok = uc->uc_mcontext.gregs[REG_RIP] == (long)si->si_call_addr &&
		 si->si_call_addr == (void *)test_syscall_ret;
	trap_info = *si;
	uc->uc_mcontext.gregs[REG_RAX] = handler_rax;
	/* Both: let this handler's sigreturn run natively. */
	test_sel = PERWINE_NATIVE;
	sud_sel = SYSCALL_DISPATCH_FILTER_ALLOW;
}

/* SA_RESTART: a rewound -ERESTARTSYS would be restarted too. */
static void install_restarting(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = count_trap;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGSYS, &sa, NULL);
}

/*
 * SUD rewinds the trap: the handler's RAX becomes the number of a
 * syscall that runs when the instruction is executed again (natively:
 * the handler allowed syscalls).  The handler answers SYS_getppid, so
 * the call returns the parent's pid instead of being the handler's
 * result.
 */
static void sud_restart(void)
{
	long r;

	handler_rax = SYS_getppid;
	install_restarting();
	if (prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0, &sud_sel))
		_exit(3);
	sud_sel = SYSCALL_DISPATCH_FILTER_BLOCK;
	r = test_syscall(-512, 0, 0, 0);
	sud_sel = SYSCALL_DISPATCH_FILTER_ALLOW;
	_exit(r == getppid() ? 0 : 4);
}

int main(void)
{
	static const long codes[] = { -512, -513, -516, -514, -1 };
	unsigned int i;
	long r;
	int st;

	tap_require_perwine_v2();
	tap_plan(3 * 5 + 2);
	traps = mmap(NULL, sizeof(*traps), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	install_restarting();
	dispatch_on(&test_sel, 0, 0);
	set_perwine(1);

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		*traps = 0;
		test_sel = PERWINE_TRAP;
		r = test_syscall(codes[i], 0, 0, 0);
		test_sel = PERWINE_NATIVE;
		tap_ok(r == 42, "RAX %ld at TRAP: the call returns the handler's RAX (%ld)", codes[i], r);
		tap_ok(*traps == 1, "RAX %ld: exactly one trap, never restarted (%d)", codes[i], *traps);
		tap_ok(rip_ok && trap_info.si_syscall == (int)codes[i],
		       "RAX %ld: the handler saw RIP == si_call_addr and si_syscall %d",
		       codes[i], trap_info.si_syscall);
	}

	*traps = 0;
	st = run_child(sud_restart);
	tap_ok(*traps == 1, "control: SUD traps RAX -512 once (%d)", *traps);
	tap_ok(exited_with(st, 0),
	       "control: SUD rewinds it: the handler's RAX runs as a syscall (status %#x)",
	       st);
	return tap_done();
}
