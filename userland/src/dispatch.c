// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The SIGSYS dispatcher: turns every trapped syscall into a call of the
 * user's callback (number and six argument registers, result to RAX) or
 * of a context handler (the whole ucontext, for emulators that redirect
 * RIP the way Wine's ntdll does).  And perwine_sigaction(): handlers of
 * other signals that must run on the Unix side.
 *
 * On a kernel with PERWINE_FLAG_SIGNAL_NATIVE (ABI v2), which
 * perwine_enable() turns on, the kernel itself stores NATIVE in the
 * selector when it delivers a signal and puts the interrupted byte back
 * at rt_sigreturn; every handler, glibc's own included, then runs on the
 * Unix side, and there is nothing for the library to do around them.  On
 * an ABI v1 kernel the library stores NATIVE itself and puts the byte
 * back before returning (enter_native/leave_native below).
 *
 * On a kernel with PERWINE_FLAG_REDIRECT (ABI v3) the simple dispatcher
 * takes no signal at all: the kernel returns a trapped syscall to
 * perwine_redirect_entry with the registers as the syscall instruction
 * left them, and the entry calls the callback (below).
 *
 * The SIGSYS handler is installed with the raw rt_sigaction syscall:
 * glibc's sigaction() always puts in its own restorer, whose rt_sigreturn
 * would trap on a v1 kernel while the selector says TRAP.  Ours lives in
 * the always-native range (native.c).
 */
#include <cpuid.h>
#include <errno.h>
#include <linux/audit.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include "internal.h"

/* struct sigaction as the x86-64 kernel takes it. */
struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

/*
 * What a trap is handed to.  A dispatcher is published whole, through
 * one pointer, so that a trap racing with a replacement sees the old
 * callback with the old context or the new with the new, never a mix.
 * A replaced one is never freed: a trap on another thread may still be
 * using it (one small record per perwine_set_*dispatcher() call).
 */
struct dispatcher {
	perwine_callback cb;			/* the simple dispatcher ... */
	perwine_context_handler handler;	/* ... or the context one */
	void *ctx;
	unsigned int flags;			/* PERWINE_DISPATCH_* */
};

static const struct dispatcher *_Atomic current;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kernel_sigaction previous;	/* the SIGSYS action before ours */
static int installed;

static long sigaction_raw(int sig, const struct kernel_sigaction *act,
			  struct kernel_sigaction *old)
{
	return perwine_native_syscall(SYS_rt_sigaction, sig, (long)act, (long)old,
				      sizeof(uint64_t), 0, 0);
}

unsigned char *perwine_context_selector(ucontext_t *uc)
{
#ifdef __x86_64__
	/* 64-bit and x32: the low byte of a tagged word of the sigcontext. */
	unsigned long long *word;

	if (!uc || !(uc->uc_flags & PERWINE_UC_SELECTOR_SC))
		return NULL;
	word = &uc->uc_mcontext.__reserved1[0];
	if ((*word & ~0xffULL) != PERWINE_UC_SELECTOR_MAGIC)
		return NULL;
	return (unsigned char *)word;
#else
	/* ia32: bits 16-23 of uc_flags, its third byte. */
	if (!uc || !(uc->uc_flags & PERWINE_UC_SELECTOR))
		return NULL;
	return (unsigned char *)&uc->uc_flags + PERWINE_UC_SELECTOR_SHIFT / 8;
#endif
}

/*
 * The Unix side for as long as a handler runs.  With SIGNAL_NATIVE the
 * kernel did it (the frame carries the saved byte); else store NATIVE
 * and return the value to resume with.
 */
static uint8_t enter_native(ucontext_t *uc, volatile uint8_t *sel)
{
	uint8_t resume;

	if (perwine_context_selector(uc) || !sel)
		return PERWINE_NATIVE;
	resume = *sel;
	*sel = PERWINE_NATIVE;
	return resume;
}

static void leave_native(volatile uint8_t *sel, uint8_t resume)
{
	uint64_t all = ~0ULL;

	if (resume == PERWINE_NATIVE)
		return;
	/*
	 * ABI v1 only: going back to TRAP, a signal taken between this
	 * store and the sigreturn would run its handler with the selector
	 * at TRAP, its syscalls and its libc restorer's rt_sigreturn
	 * trapped.  Block everything; the sigreturn puts back the
	 * interrupted mask.  (With SIGNAL_NATIVE the kernel restores the
	 * selector at sigreturn and there is no such window.)
	 */
	perwine_native_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, sizeof(all), 0, 0);
	*sel = resume;
}

/* A SIGSYS that is no trap of ours: give it to whoever had SIGSYS before. */
static void chain(int sig, siginfo_t *si, void *uc)
{
	struct kernel_sigaction dfl = { .handler = SIG_DFL };

	if (previous.handler == SIG_IGN)
		return;
	if (previous.handler == SIG_DFL) {
		/* Die of it, as if we had never been installed. */
		sigaction_raw(SIGSYS, &dfl, NULL);
		perwine_native_syscall(SYS_tgkill, perwine_native_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0),
				       perwine_native_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0), sig, 0, 0, 0);
		return;
	}
	if (previous.flags & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))previous.handler)(sig, si, uc);
	else
		((void (*)(int))previous.handler)(sig);
}

/* A trap of perwine's: SUD uses the same si_code, with si_errno 0. */
static int is_perwine_trap(const siginfo_t *si)
{
	return si->si_code == SYS_USER_DISPATCH &&
	       (si->si_errno == PERWINE_TRAP_SELECTOR || si->si_errno == PERWINE_TRAP_VMA);
}

static void dispatch(int sig, siginfo_t *si, void *ucv)
{
	const struct dispatcher *d = atomic_load_explicit(&current, memory_order_acquire);
	volatile uint8_t *sel = perwine_self.selector;
	const siginfo_t *outer = perwine_self.trap;
	ucontext_t *uc = ucv;
	greg_t *regs = uc->uc_mcontext.gregs;
	int saved_errno = errno;
	uint8_t resume;
	long args[6];

	/* Whatever runs now, the previous handler included, is Unix side. */
	resume = enter_native(uc, sel);
	if (!d || !is_perwine_trap(si)) {
		chain(sig, si, ucv);
	} else if (d->handler) {
		perwine_self.trap = si;
		d->handler(uc, si, d->ctx);
		perwine_self.trap = outer;
	} else {
		args[0] = regs[REG_RDI];
		args[1] = regs[REG_RSI];
		args[2] = regs[REG_RDX];
		args[3] = regs[REG_R10];
		args[4] = regs[REG_R8];
		args[5] = regs[REG_R9];
		perwine_self.trap = si;
		regs[REG_RAX] = d->cb(si->si_syscall, args, d->ctx);
		perwine_self.trap = outer;
	}
	errno = saved_errno;
	leave_native(sel, resume);
}

/*
 * The redirect entry.  The kernel returns here instead of raising
 * SIGSYS, with RAX the syscall number, the six argument registers,
 * RCX the address after the syscall instruction, R11 the RFLAGS, and
 * RSP where the trapped code had it.  A syscall keeps every register
 * but RAX, RCX and R11, the vector and x87 state included, and so must
 * the entry, whatever the callback and libc do to them: it steps over
 * the red zone below RSP, which the trapped code may use, saves the
 * general registers a C call may change with the return address, then
 * the extended state with XSAVE (FXSAVE where the CPU has none) in an
 * area of perwine_xsave_size bytes aligned to 64, and calls
 * perwine_redirect_dispatch() with the number and the saved registers:
 * the first six words are the arguments, in the order the callback
 * takes them, and the seventh the number, where the result goes.  Then
 * it restores it all, with the result in RAX, RFLAGS in R11 as SYSRET
 * leaves it, and jumps to the return address.  RBX and RBP, which the
 * C function keeps, hold the stack to come back to and the frame.
 */
#define PERWINE_XSAVE_MASK	0xff	/* x87, SSE, AVX, MPX, AVX-512: not AMX */

unsigned long perwine_xsave_size PERWINE_HIDDEN = 512 + 64;
int perwine_xsave PERWINE_HIDDEN;

__asm__(".text\n"
	".balign 16\n"
	".globl perwine_redirect_entry\n"
	".hidden perwine_redirect_entry\n"
	".type perwine_redirect_entry, @function\n"
	"perwine_redirect_entry:\n"
	"	lea -128(%rsp), %rsp\n"
	"	push %rbx\n"
	"	push %rbp\n"
	"	mov %rsp, %rbx\n"
	"	and $-16, %rsp\n"
	"	push %rcx\n"
	"	push %r11\n"
	"	push %rax\n"
	"	push %r9\n"
	"	push %r8\n"
	"	push %r10\n"
	"	push %rdx\n"
	"	push %rsi\n"
	"	push %rdi\n"
	"	mov %rsp, %rbp\n"
	"	sub perwine_xsave_size(%rip), %rsp\n"
	"	and $-64, %rsp\n"
	"	cmpl $0, perwine_xsave(%rip)\n"
	"	je 1f\n"
	/* XRSTOR wants the header's reserved bytes zero. */
	"	xor %eax, %eax\n"
	"	mov %rax, 512(%rsp)\n	mov %rax, 520(%rsp)\n"
	"	mov %rax, 528(%rsp)\n	mov %rax, 536(%rsp)\n"
	"	mov %rax, 544(%rsp)\n	mov %rax, 552(%rsp)\n"
	"	mov %rax, 560(%rsp)\n	mov %rax, 568(%rsp)\n"
	"	mov $" PERWINE_STR(PERWINE_XSAVE_MASK) ", %eax\n"
	"	xor %edx, %edx\n"
	"	xsave64 (%rsp)\n"
	"	jmp 2f\n"
	"1:	fxsave64 (%rsp)\n"
	"2:	cld\n"
	"	movslq 48(%rbp), %rdi\n"
	"	mov %rbp, %rsi\n"
	"	call perwine_redirect_dispatch\n"
	"	mov %rax, 48(%rbp)\n"
	"	cmpl $0, perwine_xsave(%rip)\n"
	"	je 3f\n"
	"	mov $" PERWINE_STR(PERWINE_XSAVE_MASK) ", %eax\n"
	"	xor %edx, %edx\n"
	"	xrstor64 (%rsp)\n"
	"	jmp 4f\n"
	"3:	fxrstor64 (%rsp)\n"
	"4:	mov %rbp, %rsp\n"
	"	pop %rdi\n"
	"	pop %rsi\n"
	"	pop %rdx\n"
	"	pop %r10\n"
	"	pop %r8\n"
	"	pop %r9\n"
	"	pop %rax\n"
	"	mov (%rsp), %r11\n"
	"	popfq\n"
	"	pop %rcx\n"
	"	mov %rbx, %rsp\n"
	"	pop %rbp\n"
	"	pop %rbx\n"
	"	lea 128(%rsp), %rsp\n"
	"	jmp *%rcx\n"
	".size perwine_redirect_entry, . - perwine_redirect_entry\n");

/* The size of the XSAVE area of the features the system enabled. */
__attribute__((constructor)) static void find_xsave(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return;
	__cpuid_count(0xd, 0, a, b, c, d);
	if (b < 512 + 64)
		return;
	perwine_xsave_size = b;
	perwine_xsave = 1;
}

/* The registers perwine_redirect_entry saved, args[] first. */
struct redirect_frame {
	long args[6];
	long rax;			/* the number; the result on the way back */
	unsigned long rflags;
	unsigned long rip;		/* after the syscall instruction */
};

long perwine_redirect_dispatch(long nr, struct redirect_frame *f) PERWINE_HIDDEN;

/*
 * A redirected trap: what dispatch() does for a SIGSYS, without the
 * signal.  The selector says why the syscall trapped: TRAP, the
 * selector; NATIVE, or none, the VMA rule.  A dispatcher that cannot
 * take it (a context dispatcher, or none, installed after this thread
 * was enabled) gets it as SIGSYS: the thread drops the redirect and the
 * syscall instruction runs again, every register as it was.
 */
long perwine_redirect_dispatch(long nr, struct redirect_frame *f)
{
	const struct dispatcher *d = atomic_load_explicit(&current, memory_order_acquire);
	volatile uint8_t *sel = perwine_self.selector;
	const siginfo_t *outer = perwine_self.trap;
	struct perwine_redirect_trap *outer_redirect = perwine_self.redirected;
	struct perwine_redirect_trap trap;
	int saved_errno;
	uint8_t resume;
	long ret;

	if (!d || !d->cb) {
		/* Unless the kernel refuses: it would come back here forever. */
		if (perwine_thread_redirect(0))
			return -ENOSYS;
		f->rip -= PERWINE_SYSCALL_INSN_LEN;
		return f->rax;
	}
	saved_errno = errno;
	resume = sel ? *sel : PERWINE_NATIVE;
	if (resume != PERWINE_NATIVE)
		*sel = PERWINE_NATIVE;
	trap.si_built = 0;
	trap.cause = resume == PERWINE_TRAP ? PERWINE_TRAP_SELECTOR : PERWINE_TRAP_VMA;
	trap.nr = nr;
	trap.site = f->rip - PERWINE_SYSCALL_INSN_LEN;
	perwine_self.trap = &trap.si;
	perwine_self.redirected = &trap;
	ret = d->cb(nr, f->args, d->ctx);
	perwine_self.trap = outer;
	perwine_self.redirected = outer_redirect;
	if (resume != PERWINE_NATIVE)
		*sel = resume;
	errno = saved_errno;
	return ret;
}

/*
 * The dispatcher installed now takes redirected traps: a callback.  A
 * thread enabled before any is installed keeps SIGSYS, which an emulator
 * with a SIGSYS handler of its own expects, until it installs one.
 */
int perwine_dispatcher_redirects(void)
{
	const struct dispatcher *d = atomic_load_explicit(&current, memory_order_acquire);

	return d && d->cb;
}

/* Install, replace or (d NULL) remove the dispatcher. */
static int install(const struct dispatcher *d)
{
	struct kernel_sigaction act = {
		.handler = (void *)dispatch,
		/* NODEFER: a callback may run "Windows" code that traps again. */
		.flags = SA_SIGINFO | SA_RESTORER | SA_NODEFER,
		.restorer = perwine_restorer,
	};
	long ret = 0;

	pthread_mutex_lock(&install_lock);
	if (!d) {
		if (!installed) {
			ret = -ENOENT;
		} else if ((ret = sigaction_raw(SIGSYS, &previous, NULL)) == 0) {
			installed = 0;
			atomic_store_explicit(&current, NULL, memory_order_release);
		}
		pthread_mutex_unlock(&install_lock);
		return ret;
	}
	if (d->flags & PERWINE_DISPATCH_ONSTACK)
		act.flags |= SA_ONSTACK;
	/* Published before the handler can see it. */
	atomic_store_explicit(&current, d, memory_order_release);
	ret = sigaction_raw(SIGSYS, &act, installed ? NULL : &previous);
	if (ret == 0)
		installed = 1;
	pthread_mutex_unlock(&install_lock);
	return ret;
}

static int set_dispatcher(perwine_callback cb, perwine_context_handler handler, void *ctx,
			  unsigned int flags)
{
	struct dispatcher *d;

	if (flags & ~PERWINE_DISPATCH_ONSTACK)
		return -EINVAL;
	if (!cb && !handler)
		return install(NULL);
	d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->cb = cb;
	d->handler = handler;
	d->ctx = ctx;
	d->flags = flags;
	return install(d);
}

/*
 * The calling thread follows the dispatcher at once: the redirect for a
 * callback, SIGSYS for a context handler.  Other threads change at their
 * next perwine_enable(), or, for a context handler, at their next trap.
 */
int perwine_set_dispatcher(perwine_callback cb, void *ctx)
{
	int ret = set_dispatcher(cb, NULL, ctx, 0);

	if (ret == 0 && cb)
		perwine_thread_redirect(1);
	return ret;
}

int perwine_set_context_dispatcher(perwine_context_handler handler, void *ctx, unsigned int flags)
{
	int ret = set_dispatcher(NULL, handler, ctx, flags);

	if (ret == 0 && handler)
		perwine_thread_redirect(0);
	return ret;
}

/* What the kernel would have put in the SIGSYS of a redirected trap. */
static void build_siginfo(struct perwine_redirect_trap *t)
{
	memset(&t->si, 0, sizeof(t->si));
	t->si.si_signo = SIGSYS;
	t->si.si_code = SYS_USER_DISPATCH;
	t->si.si_errno = t->cause;
	t->si.si_call_addr = (void *)(t->site + PERWINE_SYSCALL_INSN_LEN);
	t->si.si_syscall = (int)t->nr;
	t->si.si_arch = AUDIT_ARCH_X86_64;
	t->si_built = 1;
}

const siginfo_t *perwine_trap_info(void)
{
	struct perwine_redirect_trap *t = perwine_self.redirected;

	if (t && perwine_self.trap == &t->si && !t->si_built)
		build_siginfo(t);
	return perwine_self.trap;
}

/*
 * perwine_sigaction() on an ABI v1 kernel: the user's handlers, called
 * through wrap_handler(), which keeps the selector NATIVE around them.
 */
static struct sigaction user_action[_NSIG];

static void wrap_handler(int sig, siginfo_t *si, void *uc)
{
	volatile uint8_t *sel = perwine_self.selector;
	const struct sigaction *act = &user_action[sig];
	int saved_errno = errno;
	uint8_t resume = enter_native(uc, sel);

	if (act->sa_flags & SA_SIGINFO)
		act->sa_sigaction(sig, si, uc);
	else
		act->sa_handler(sig);
	errno = saved_errno;
	leave_native(sel, resume);
}

/* Does this kernel have ABI v2 (SET, SIGNAL_NATIVE)?  A NULL SET faults there. */
int perwine_kernel_signal_native(void)
{
	static _Atomic int known;	/* 0 unknown, 1 no, 2 yes */
	int k = atomic_load(&known);

	if (!k) {
		long ret = perwine_native_syscall(SYS_prctl, PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, 0,
						  PERWINE_CONFIG_SIZE_VER0, 0, 0);

		k = ret == -EFAULT ? 2 : 1;
		atomic_store(&known, k);
	}
	return k == 2;
}

int perwine_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct kernel_sigaction kact, kold;
	long ret;

	if (sig <= 0 || sig >= _NSIG || sig == SIGSYS || sig == SIGKILL || sig == SIGSTOP)
		return -EINVAL;
	/* glibc's own: SIGCANCEL and SIGSETXID live below SIGRTMIN. */
	if (sig >= 32 && sig < SIGRTMIN)
		return -EINVAL;
	/* The kernel keeps the selector right around every handler. */
	if (perwine_kernel_signal_native())
		return sigaction(sig, act, old) ? -errno : 0;

	ret = sigaction_raw(sig, NULL, &kold);
	if (ret < 0)
		return ret;
	if (old) {
		if (kold.handler == (void *)wrap_handler) {
			*old = user_action[sig];
		} else {
			memset(old, 0, sizeof(*old));
			old->sa_handler = (void (*)(int))kold.handler;
			old->sa_flags = (int)kold.flags;
			memcpy(&old->sa_mask, &kold.mask, sizeof(kold.mask));
		}
	}
	if (!act)
		return 0;
	memset(&kact, 0, sizeof(kact));
	memcpy(&kact.mask, &act->sa_mask, sizeof(kact.mask));
	if (act->sa_handler == SIG_DFL || act->sa_handler == SIG_IGN) {
		kact.handler = (void *)act->sa_handler;
		kact.flags = act->sa_flags & ~SA_SIGINFO;
	} else {
		user_action[sig] = *act;
		kact.handler = (void *)wrap_handler;
		kact.flags = act->sa_flags | SA_SIGINFO | SA_RESTORER;
		kact.restorer = perwine_restorer;
	}
	return sigaction_raw(sig, &kact, NULL);
}
