// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperwine's context dispatcher (ABI v2 kernels): the handler sees the
 * whole register state and the stack, can redirect RIP and RSP, runs
 * with the selector NATIVE and picks the state after it returns through
 * perwine_context_selector(); SUD traps and other SIGSYS go to the
 * previous handler, on the Unix side; errno survives; SA_ONSTACK only on
 * request; glibc's reserved signals are refused.
 */
#include <sys/mman.h>
#include "tap.h"

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH	59
#define PR_SYS_DISPATCH_ON		1
#define PR_SYS_DISPATCH_OFF		0
#endif

static struct {
	greg_t regs[NGREG];
	long stack[8];
	int selector_in_handler;
	int saved;
	int calls;
	char *handler_sp;
	int set_after;		/* what to store in the saved byte, -1: leave it */
	long redirect_rip;	/* 0: resume after the syscall */
	long redirect_rsp;
	/* The first trap's frame: perwine_context_selector() and its word. */
	unsigned char *first_saved;
	char *first_word;
	int first_done;
} seen;

static void handler(ucontext_t *uc, const siginfo_t *si, void *ctx)
{
	unsigned char *saved = perwine_context_selector(uc);
	greg_t *r = uc->uc_mcontext.gregs;
	char here;

	(void)si;
	(void)ctx;
	seen.calls++;
	if (!seen.first_done) {
		seen.first_done = 1;
		seen.first_saved = saved;
		seen.first_word = (char *)&uc->uc_mcontext.__reserved1[0];
	}
	seen.handler_sp = &here;
	memcpy(seen.regs, r, sizeof(seen.regs));
	memcpy(seen.stack, (long *)r[REG_RSP], sizeof(seen.stack));
	seen.selector_in_handler = perwine_thread_selector;
	seen.saved = saved ? *saved : -1;
	errno = EIO;		/* the library must put the trapped code's errno back */
	r[REG_RAX] = 0x5157;
	if (saved && seen.set_after >= 0)
		*saved = (unsigned char)seen.set_after;
	if (seen.redirect_rip)
		r[REG_RIP] = seen.redirect_rip;
	if (seen.redirect_rsp)
		r[REG_RSP] = seen.redirect_rsp;
}

/*
 * Loads marker values into the callee-saved registers, pushes two stack
 * words and makes a raw syscall; returns RAX.  regs_syscall_ret is the
 * address after the instruction; regs_landing a place to redirect to,
 * which returns RAX + 1 with the original stack.
 */
long regs_syscall(long nr);
extern const char regs_syscall_ret[], regs_landing[];
__asm__(".text\n"
	".globl regs_syscall\n"
	"regs_syscall:\n"
	"	push %rbx\n"
	"	push %r12\n"
	"	push %r13\n"
	"	push %r14\n"
	"	push %r15\n"
	"	mov $0x1111, %rbx\n"
	"	mov $0x1212, %r12\n"
	"	mov $0x1313, %r13\n"
	"	mov $0x1414, %r14\n"
	"	mov $0x1515, %r15\n"
	"	mov $0xa5a5, %r10\n"
	"	push $0x5555\n"
	"	push $0x6666\n"
	"	mov %rdi, %rax\n"
	"	syscall\n"
	".globl regs_syscall_ret\n"
	"regs_syscall_ret:\n"
	"	add $16, %rsp\n"
	"	pop %r15\n"
	"	pop %r14\n"
	"	pop %r13\n"
	"	pop %r12\n"
	"	pop %rbx\n"
	"	ret\n"
	".globl regs_landing\n"
	"regs_landing:\n"
	"	add $1, %rax\n"
	"	jmp regs_syscall_ret\n"
	/* long rsp_syscall(nr): returns the RSP it resumed with after the syscall. */
	".globl rsp_syscall\n"
	"rsp_syscall:\n"
	"	push %rbx\n"
	"	mov %rsp, %rbx\n"
	"	mov %rdi, %rax\n"
	"	syscall\n"
	"	mov %rsp, %rax\n"
	"	mov %rbx, %rsp\n"
	"	pop %rbx\n"
	"	ret\n");
long rsp_syscall(long nr);

static long trap(long nr)
{
	long r;

	perwine_trap();
	r = regs_syscall(nr);
	perwine_native();
	return r;
}

/* SIGSYS of somebody else's: SUD's, with si_errno 0. */
static int previous_calls, previous_sel, previous_errno;
static volatile uint8_t sud_sel;

static void previous_sigsys(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	previous_calls++;
	previous_sel = perwine_thread_selector;
	previous_errno = si->si_errno;
	((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RAX] = 99;
	sud_sel = 0;		/* SUD ALLOW: let this handler's sigreturn through */
}

static void sud_trap_child(void)
{
	long r;

	if (prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0, &sud_sel))
		_exit(3);
	sud_sel = 1;		/* SUD BLOCK: SUD decides first */
	perwine_trap();
	r = regs_syscall(SYS_getppid);
	perwine_native();
	sud_sel = 0;
	prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0);
	_exit(r == 99 && previous_calls == 1 && seen.calls == 0 && previous_errno == 0 &&
	      previous_sel == PERWINE_NATIVE ? 0 : 4);
}

int main(void)
{
	static char altstack[64 * 1024];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	struct sigaction sa;
	long r;
	int st;

	tap_require_perwine_v2();
	tap_plan(24);

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = previous_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);

	tap_ok(perwine_set_context_dispatcher(handler, NULL, 0x80) == -EINVAL,
	       "an unknown flag: -EINVAL");
	tap_ok(perwine_enable(PERWINE_THREAD_SELECTOR) == 0 &&
	       perwine_set_context_dispatcher(handler, NULL, 0) == 0, "enable, context dispatcher");
	tap_ok(perwine_context_selector(NULL) == NULL, "perwine_context_selector(NULL) is NULL");

	seen.set_after = -1;
	errno = 4242;
	r = trap(0x1234);
	tap_ok(errno == 4242, "errno survives the handler (%d)", errno);
	tap_ok(r == 0x5157 && seen.calls == 1, "the handler's RAX is the result (%#lx)", r);
	tap_ok(seen.regs[REG_RAX] == 0x1234 && seen.regs[REG_R10] == 0xa5a5,
	       "RAX holds the number, R10 the fourth argument");
	tap_ok(seen.regs[REG_RBX] == 0x1111 && seen.regs[REG_R12] == 0x1212 && seen.regs[REG_R13] == 0x1313 &&
	       seen.regs[REG_R14] == 0x1414 && seen.regs[REG_R15] == 0x1515,
	       "every callee-saved register is visible");
	tap_ok(seen.regs[REG_RIP] == (greg_t)regs_syscall_ret, "RIP is the address after the syscall");
	tap_ok(seen.stack[0] == 0x6666 && seen.stack[1] == 0x5555, "the stack words at RSP are visible");
	tap_ok(seen.selector_in_handler == PERWINE_NATIVE, "the handler runs with the selector NATIVE");
	tap_ok(seen.saved == PERWINE_TRAP, "perwine_context_selector() gives the saved TRAP");

	/* The saved byte picks the state after the handler. */
	seen.set_after = PERWINE_NATIVE;
	perwine_trap();
	regs_syscall(0x1235);
	r = perwine_thread_selector;
	perwine_native();
	tap_ok(r == PERWINE_NATIVE, "a handler that stores NATIVE there resumes NATIVE");
	seen.set_after = -1;
	perwine_trap();
	regs_syscall(0x1236);
	r = perwine_thread_selector;
	perwine_native();
	tap_ok(r == PERWINE_TRAP, "a handler that leaves it resumes TRAP");

	/* RIP redirect: to regs_landing, which adds 1 to RAX. */
	seen.redirect_rip = (long)regs_landing;
	r = trap(0x1237);
	seen.redirect_rip = 0;
	tap_ok(r == 0x5158, "RIP redirected: the code resumes where the handler said (%#lx)", r);
	/* RSP redirect: the code resumes on another stack. */
	{
		static long other_stack[64];

		seen.redirect_rsp = (long)&other_stack[32];
		perwine_trap();
		r = rsp_syscall(0x1238);
		perwine_native();
		seen.redirect_rsp = 0;
		tap_ok(r == (long)&other_stack[32], "RSP redirected: the code resumes on the handler's stack");
	}

	/*
	 * ONSTACK: only on request.  Each point needs the handler to have
	 * run once for that trap (handler_sp is cleared before it), and the
	 * thread's stack is below this frame of main(), within 1 MiB.
	 */
	sigaltstack(&ss, NULL);
	seen.calls = 0;
	seen.handler_sp = NULL;
	r = trap(0x1);
	tap_ok(r == 0x5157 && seen.calls == 1 && seen.handler_sp &&
	       !(seen.handler_sp >= altstack && seen.handler_sp < altstack + sizeof(altstack)) &&
	       (uintptr_t)seen.handler_sp < (uintptr_t)&st &&
	       (uintptr_t)&st - (uintptr_t)seen.handler_sp < 1024 * 1024,
	       "without PERWINE_DISPATCH_ONSTACK the handler runs on the thread's stack (%d calls)",
	       seen.calls);
	perwine_set_context_dispatcher(handler, NULL, PERWINE_DISPATCH_ONSTACK);
	seen.calls = 0;
	seen.handler_sp = NULL;
	r = trap(0x2);
	tap_ok(r == 0x5157 && seen.calls == 1 &&
	       seen.handler_sp >= altstack && seen.handler_sp < altstack + sizeof(altstack),
	       "with PERWINE_DISPATCH_ONSTACK it runs on the sigaltstack (%d calls)", seen.calls);
	perwine_set_context_dispatcher(handler, NULL, 0);

	/* Other SIGSYS go to the previous handler, on the Unix side. */
	seen.calls = 0;
	st = run_child(sud_trap_child);
	tap_ok(exited_with(st, 0),
	       "a SUD trap (si_errno 0) goes to the previous handler, selector NATIVE (%#x)", st);

	/* The simple dispatcher replaces the context one and back. */
	tap_ok(perwine_set_dispatcher(NULL, NULL) == 0, "remove the dispatcher");
	tap_ok(perwine_set_context_dispatcher(NULL, NULL, 0) == -ENOENT, "removing it twice: -ENOENT");

	tap_ok(perwine_sigaction(32, NULL, NULL) == -EINVAL && perwine_sigaction(33, NULL, NULL) == -EINVAL,
	       "glibc's SIGCANCEL and SIGSETXID (32, 33) are refused");
	tap_ok(perwine_sigaction(SIGRTMIN, NULL, NULL) == 0, "SIGRTMIN is accepted");

	/*
	 * A frame without the saved byte: getcontext() fills no uc_flags of
	 * the kernel's, so it is NULL there.  The control is the first trap
	 * above, whose kernel frame (SIGNAL_NATIVE) carries the byte: there
	 * it pointed at the low byte of the tagged word __reserved1[0].
	 */
	{
		ucontext_t uc;
		unsigned char *none, *stale, *tagged;

		memset(&uc, 0, sizeof(uc));
		if (getcontext(&uc))
			tap_bail("getcontext: %s", strerror(errno));
		none = perwine_context_selector(&uc);
		tap_ok(!(uc.uc_flags & PERWINE_UC_SELECTOR_SC) && none == NULL &&
		       seen.first_done && seen.first_saved != NULL &&
		       (char *)seen.first_saved == seen.first_word,
		       "perwine_context_selector() is NULL for a getcontext() frame (uc_flags %#lx, %p), "
		       "the word's byte in a trap handler's frame (%p, the word at %p)",
		       (unsigned long)uc.uc_flags, (void *)none, (void *)seen.first_saved,
		       (void *)seen.first_word);
		/* The bit alone is not enough: the word must carry the tag. */
		uc.uc_flags |= PERWINE_UC_SELECTOR_SC;
		uc.uc_mcontext.__reserved1[0] = PERWINE_TRAP;
		stale = perwine_context_selector(&uc);
		uc.uc_mcontext.__reserved1[0] = PERWINE_UC_SELECTOR_MAGIC | PERWINE_TRAP;
		tagged = perwine_context_selector(&uc);
		tap_ok(stale == NULL && tagged == (unsigned char *)&uc.uc_mcontext.__reserved1[0] &&
		       *tagged == PERWINE_TRAP,
		       "the bit with an untagged word is NULL (%p), with the tag the word's byte (%p)",
		       (void *)stale, (void *)tagged);
	}
	perwine_disable();
	return tap_done();
}
