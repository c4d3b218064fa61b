// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * An x32 process under PER_WINE (built with -mx32 by tests/34-x32.sh).
 * x32 syscalls enter like 64-bit ones, with __X32_SYSCALL_BIT in the
 * number, and their signal frames are built and undone by x32's own
 * code (x32_setup_rt_frame(), x32_rt_sigreturn), which the ABI says
 * keep the selector like the 64-bit ones:
 *
 * - a syscall at selector TRAP traps with its x32 number in si_syscall;
 * - with PERWINE_FLAG_SIGNAL_NATIVE a handler starts at NATIVE, its
 *   frame carries the byte it interrupted as a 64-bit frame does (the
 *   tagged word uc_mcontext.__reserved1[0], PERWINE_UC_SELECTOR_SC in
 *   uc_flags), and x32_rt_sigreturn puts that byte back;
 * - the control: without the flag the handler starts at TRAP, the frame
 *   carries nothing and the byte the handler stored stays.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "tap.h"

#ifndef __ILP32__
#error "tests/34-x32.c is an x32 program: build it with -mx32"
#endif

#define X32_SYSCALL_BIT	0x40000000
#define X32_GETPID	(X32_SYSCALL_BIT | 39)
#define TRAPPED_RESULT	4242

static volatile uint8_t sel;
static volatile int sigsys_calls, sigsys_nr, sigsys_errno;
static volatile unsigned int sigsys_arch;

/* getpid by a syscall instruction of this program's own text. */
static long raw_getpid(void)
{
	long long r;

	__asm__ volatile("syscall" : "=a"(r) : "0"((long long)X32_GETPID) : "rcx", "r11", "memory");
	return (long)r;
}

/* The byte a frame carries for rt_sigreturn, or -1: an x32 frame keeps it as a 64-bit one does. */
static int frame_selector(ucontext_t *uc)
{
	unsigned long long word = uc->uc_mcontext.__reserved1[0];

	if (!(uc->uc_flags & PERWINE_UC_SELECTOR_SC) || (word & ~0xffULL) != PERWINE_UC_SELECTOR_MAGIC)
		return -1;
	return (int)(word & 0xff);
}

static void frame_selector_native(ucontext_t *uc)
{
	if (frame_selector(uc) != -1)
		uc->uc_mcontext.__reserved1[0] = PERWINE_UC_SELECTOR_MAGIC | PERWINE_NATIVE;
}

static void on_sigsys(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	sigsys_calls++;
	sigsys_nr = si->si_syscall;
	sigsys_arch = si->si_arch;
	sigsys_errno = si->si_errno;
	uc->uc_mcontext.gregs[REG_RAX] = TRAPPED_RESULT;
	/* The interrupted code goes on natively, whatever the flag. */
	sel = PERWINE_NATIVE;
	frame_selector_native(uc);
}

static volatile int usr1_calls, usr1_entry_sel, usr1_saved, ready;
static volatile unsigned long usr1_uc_flags;

static void on_usr1(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	(void)si;
	usr1_entry_sel = sel;
	usr1_uc_flags = uc->uc_flags;
	usr1_saved = frame_selector(uc);
	/*
	 * Without the flag the handler's own rt_sigreturn would trap:
	 * store NATIVE as a handler written for SUD does.  With it the
	 * selector is NATIVE already and this store changes nothing.
	 */
	sel = PERWINE_NATIVE;
	usr1_calls++;
}

static void *kicker(void *arg)
{
	pthread_t target = *(pthread_t *)arg;

	while (!ready)
		;
	pthread_kill(target, SIGUSR1);
	return NULL;
}

static int configure(uint32_t flags)
{
	struct perwine_config cfg = {
		.selector = (uintptr_t)&sel,
		.flags = PERWINE_FLAG_ON | flags,
	};

	sel = PERWINE_NATIVE;
	return prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, (unsigned long)&cfg, sizeof(cfg), 0);
}

/*
 * SIGUSR1 from another thread while this one spins at TRAP (no syscall
 * at TRAP but the signal's); returns the selector found after the
 * handler returned.
 */
static int usr1_at_trap(void)
{
	pthread_t self = pthread_self(), t;
	int after;

	usr1_calls = 0;
	ready = 0;
	if (pthread_create(&t, NULL, kicker, &self))
		tap_bail("pthread_create failed");
	sel = PERWINE_TRAP;
	ready = 1;
	while (!usr1_calls)
		;
	after = sel;
	sel = PERWINE_NATIVE;
	pthread_join(t, NULL);
	return after;
}

int main(void)
{
	struct sigaction sa;
	long r;
	int after;

	tap_require_perwine_v2();
	tap_plan(9);
	/* A lost signal or a hang fails the test instead of stopping make check. */
	alarm(60);

	memset(&sa, 0, sizeof(sa));
	sa.sa_flags = SA_SIGINFO;
	sa.sa_sigaction = on_sigsys;
	sigaction(SIGSYS, &sa, NULL);
	sa.sa_sigaction = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);

	tap_ok(configure(PERWINE_FLAG_SIGNAL_NATIVE) == 0 && set_perwine(1) != -1,
	       "x32: SET with SIGNAL_NATIVE and personality(PER_WINE)");

	sel = PERWINE_TRAP;
	r = raw_getpid();
	tap_ok(r == TRAPPED_RESULT && sigsys_calls == 1,
	       "x32 getpid at TRAP: trapped once, the handler's result returned (%d traps)", sigsys_calls);
	tap_ok(sigsys_nr == X32_GETPID && sigsys_arch == AUDIT_ARCH_X86_64 &&
	       sigsys_errno == PERWINE_TRAP_SELECTOR,
	       "x32 trap: si_syscall %#x (x32 getpid), si_arch %#x, si_errno %d", sigsys_nr, sigsys_arch,
	       sigsys_errno);
	tap_ok(sel == PERWINE_NATIVE && raw_getpid() == getpid(),
	       "after the handler: selector NATIVE, x32 getpid runs natively");

	after = usr1_at_trap();
	tap_ok(usr1_calls == 1 && usr1_entry_sel == PERWINE_NATIVE,
	       "SIGNAL_NATIVE: the x32 handler starts at NATIVE (%d)", usr1_entry_sel);
	tap_ok(usr1_saved == PERWINE_TRAP && !(usr1_uc_flags & (PERWINE_UC_SELECTOR | 0xff0000)),
	       "SIGNAL_NATIVE: the x32 frame's tagged word carries the interrupted TRAP (%d; uc_flags %#lx)",
	       usr1_saved, usr1_uc_flags);
	tap_ok(after == PERWINE_TRAP, "SIGNAL_NATIVE: x32_rt_sigreturn puts TRAP back (%d)", after);

	/* The control: the same without the flag. */
	if (configure(0))
		tap_bail("SET without SIGNAL_NATIVE: %s", strerror(errno));
	after = usr1_at_trap();
	tap_ok(usr1_calls == 1 && usr1_entry_sel == PERWINE_TRAP && usr1_saved == -1 &&
	       !(usr1_uc_flags & (PERWINE_UC_SELECTOR | PERWINE_UC_SELECTOR_SC)),
	       "control, no SIGNAL_NATIVE: the handler starts at TRAP, the frame carries no byte (uc_flags %#lx)",
	       usr1_uc_flags);
	tap_ok(after == PERWINE_NATIVE, "control: the handler's NATIVE stays after sigreturn (%d)", after);

	return tap_done();
}
