// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ABI v2 "A trap is never restarted": whatever RAX held, -512 and -513
 * (ERESTARTSYS, ERESTARTNOINTR) and -516 (ERESTART_RESTARTBLOCK)
 * included, the handler sees RIP == si_call_addr, returning resumes
 * after the instruction and the syscall never runs again; for the
 * selector, the VMA rule and a compat (int $0x80) trap alike.  ABI v2.1:
 * the same holds for upstream Syscall User Dispatch, which the series
 * fixes ("entry: never restart a syscall that Syscall User Dispatch
 * trapped"); an unfixed kernel rewinds a SUD trap of -512 or -513 and
 * runs the handler's RAX as a syscall, and shows the handler -EINTR in
 * RAX for -514 and -516, which these points catch.  ABI v3: seccomp's
 * SECCOMP_RET_TRAP too ("seccomp: never restart a syscall that
 * SECCOMP_RET_TRAP trapped").
 */
#include <stddef.h>
#include <sys/mman.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include "tap.h"

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH	59
#define PR_SYS_DISPATCH_OFF		0
#define PR_SYS_DISPATCH_ON		1
#define SYSCALL_DISPATCH_FILTER_ALLOW	0
#define SYSCALL_DISPATCH_FILTER_BLOCK	1
#endif

/* Shared with the children, which the handler runs in too. */
static struct {
	int traps;
	long seen_rax;	/* RAX as the handler found it */
} *shared;
static long rip_ok, handler_rax = 42;
static volatile uint8_t sud_sel;

static void count_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	shared->traps++;
	shared->seen_rax = uc->uc_mcontext.gregs[REG_RAX];
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
 * Under SUD and seccomp the handler answers SYS_getppid: were the trap
 * rewound, the instruction would run again natively (the handler allowed
 * syscalls, the filter allows getppid) with that number, and the call
 * would return the parent's pid instead of the handler's value.  Exit
 * status: 0 when the handler's value came back, 4 when the parent's pid
 * did (rewound), 5 otherwise.
 */
static long child_code;

static int child_result(long r)
{
	return r == SYS_getppid ? 0 : r == getppid() ? 4 : 5;
}

static void sud_once(void)
{
	long r;

	handler_rax = SYS_getppid;
	install_restarting();
	if (prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0, &sud_sel))
		_exit(3);
	sud_sel = SYSCALL_DISPATCH_FILTER_BLOCK;
	r = test_syscall(child_code, 0, 0, 0);
	sud_sel = SYSCALL_DISPATCH_FILTER_ALLOW;
	_exit(child_result(r));
}

/* A filter that traps child_code (the architecture is this test's). */
static void seccomp_once(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)child_code, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	handler_rax = SYS_getppid;
	install_restarting();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		_exit(3);
	_exit(child_result(test_syscall(child_code, 0, 0, 0)));
}

/* mov %rdi,%rax; syscall; ret  and  mov %edi,%eax; int $0x80; ret */
static const unsigned char syscall_stub[] = { 0x48, 0x89, 0xf8, 0x0f, 0x05, 0xc3 };
static const unsigned char int80_stub[] = { 0x89, 0xf8, 0xcd, 0x80, 0xc3 };

static long (*code_page(const unsigned char *code, size_t len, int prot))(long)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));
	memcpy(p, code, len);
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC | prot))
		tap_bail("mprotect: %s", strerror(errno));
	return (long (*)(long))p;
}

int main(void)
{
	static const long codes[] = { -512, -513, -516, -514, -1 };
	unsigned int i;
	long r;
	int st;

	tap_require_perwine_v2();
	long (*nosys)(long) = code_page(syscall_stub, sizeof(syscall_stub), PROT_NOSYSCALL);
	long (*int80)(long) = code_page(int80_stub, sizeof(int80_stub), 0);

	tap_plan(3 * 5 + 2 + 2 * 4 * 3);
	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));
	install_restarting();
	dispatch_on(&test_sel, 0, 0);
	set_perwine(1);

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		shared->traps = 0;
		test_sel = PERWINE_TRAP;
		r = test_syscall(codes[i], 0, 0, 0);
		test_sel = PERWINE_NATIVE;
		tap_ok(r == 42, "RAX %ld at TRAP: the call returns the handler's RAX (%ld)", codes[i], r);
		tap_ok(shared->traps == 1, "RAX %ld: exactly one trap, never restarted (%d)", codes[i], shared->traps);
		tap_ok(rip_ok && trap_info.si_syscall == (int)codes[i],
		       "RAX %ld: the handler saw RIP == si_call_addr and si_syscall %d",
		       codes[i], trap_info.si_syscall);
	}

	/* The rip_ok check above is test_syscall's; these count traps and results. */
	shared->traps = 0;
	r = nosys(-513);
	tap_ok(r == 42 && shared->traps == 1 && trap_info.si_errno == PERWINE_TRAP_VMA,
	       "RAX -513 in a NOSYSCALL page: one VMA trap, the handler's RAX (%ld, %d traps)", r, shared->traps);
	shared->traps = 0;
	test_sel = PERWINE_TRAP;
	r = int80(-513);
	test_sel = PERWINE_NATIVE;
	tap_ok(r == 42 && shared->traps == 1 && trap_info.si_arch == AUDIT_ARCH_I386,
	       "EAX -513 by int $0x80 at TRAP: one compat trap, the handler's RAX (%ld, %d traps)", r,
	       shared->traps);

	for (i = 0; i < 2 * 4; i++) {
		const char *what = i < 4 ? "SUD" : "seccomp RET_TRAP";

		child_code = codes[i % 4];
		shared->traps = 0;
		shared->seen_rax = 0;
		st = run_child(i < 4 ? sud_once : seccomp_once);
		tap_ok(shared->traps == 1, "%s traps RAX %ld exactly once (%d)", what, child_code, shared->traps);
		tap_ok(shared->seen_rax == child_code, "%s: the handler sees RAX %ld (%ld; -4: taken for a restart)",
		       what, child_code, shared->seen_rax);
		tap_ok(exited_with(st, 0),
		       "%s: RAX %ld is not restarted, the handler's RAX comes back (status %#x; 4: rewound)",
		       what, child_code, st);
	}
	return tap_done();
}
