// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The SIGSYS dispatcher: turns every trapped syscall into a call of the
 * user's callback and writes the callback's result back into RAX.  And
 * perwine_sigaction(): other signal handlers that keep the selector
 * right in the same way.
 *
 * The handler is installed with the raw rt_sigaction syscall, because
 * glibc's sigaction() always puts in its own restorer, and that
 * restorer's rt_sigreturn would trap again while the selector says TRAP.
 * Ours lives in the always-native range (native.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
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

static _Atomic(perwine_callback) dispatch_cb;
static void *_Atomic dispatch_ctx;
static struct kernel_sigaction previous;	/* the SIGSYS action before ours */
static int installed;

static long sigaction_raw(int sig, const struct kernel_sigaction *act,
			  struct kernel_sigaction *old)
{
	return perwine_native_syscall(SYS_rt_sigaction, sig, (long)act, (long)old,
				      sizeof(uint64_t), 0, 0);
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

/* The Unix side for as long as a handler runs: returns the value to resume with. */
static uint8_t enter_native(volatile uint8_t *sel)
{
	uint8_t resume = sel ? *sel : PERWINE_NATIVE;

	if (sel)
		*sel = PERWINE_NATIVE;
	return resume;
}

static void leave_native(volatile uint8_t *sel, uint8_t resume)
{
	uint64_t all = ~0ULL;

	if (resume == PERWINE_NATIVE)
		return;
	/*
	 * Going back to TRAP: a signal taken between this store and the
	 * sigreturn would run its handler with the selector at TRAP, so
	 * block everything; the sigreturn puts back the interrupted mask.
	 */
	perwine_native_syscall(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, sizeof(all), 0, 0);
	*sel = resume;
}

static void dispatch(int sig, siginfo_t *si, void *ucv)
{
	greg_t *regs = ((ucontext_t *)ucv)->uc_mcontext.gregs;
	volatile uint8_t *sel = perwine_self.selector;
	perwine_callback cb = atomic_load(&dispatch_cb);
	const siginfo_t *outer = perwine_self.trap;
	long args[6];
	uint8_t resume;

	if (si->si_code != SYS_USER_DISPATCH || !cb) {
		chain(sig, si, ucv);
		return;
	}
	/* The callback runs on the Unix side: its own syscalls are native. */
	resume = enter_native(sel);
	args[0] = regs[REG_RDI];
	args[1] = regs[REG_RSI];
	args[2] = regs[REG_RDX];
	args[3] = regs[REG_R10];
	args[4] = regs[REG_R8];
	args[5] = regs[REG_R9];
	perwine_self.trap = si;
	regs[REG_RAX] = cb(si->si_syscall, args, atomic_load(&dispatch_ctx));
	perwine_self.trap = outer;
	leave_native(sel, resume);
}

/* Handlers given to perwine_sigaction(), called through wrap_handler(). */
static struct sigaction user_action[_NSIG];

static void wrap_handler(int sig, siginfo_t *si, void *uc)
{
	volatile uint8_t *sel = perwine_self.selector;
	const struct sigaction *act = &user_action[sig];
	uint8_t resume = enter_native(sel);

	if (act->sa_flags & SA_SIGINFO)
		act->sa_sigaction(sig, si, uc);
	else
		act->sa_handler(sig);
	leave_native(sel, resume);
}

int perwine_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct kernel_sigaction kact, kold;
	long ret;

	if (sig <= 0 || sig >= _NSIG || sig == SIGSYS || sig == SIGKILL || sig == SIGSTOP)
		return -EINVAL;
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

const siginfo_t *perwine_trap_info(void)
{
	return perwine_self.trap;
}

int perwine_set_dispatcher(perwine_callback cb, void *ctx)
{
	struct kernel_sigaction act = {
		.handler = (void *)dispatch,
		/* NODEFER: a callback may run "Windows" code that traps again. */
		.flags = SA_SIGINFO | SA_RESTORER | SA_NODEFER | SA_ONSTACK,
		.restorer = perwine_restorer,
	};
	long ret;

	if (!cb) {
		if (!installed)
			return -ENOENT;
		ret = sigaction_raw(SIGSYS, &previous, NULL);
		if (ret < 0)
			return ret;
		installed = 0;
		atomic_store(&dispatch_cb, NULL);
		return 0;
	}
	atomic_store(&dispatch_ctx, ctx);
	atomic_store(&dispatch_cb, cb);
	if (installed)
		return 0;
	ret = sigaction_raw(SIGSYS, &act, &previous);
	if (ret < 0)
		return ret;
	installed = 1;
	return 0;
}
