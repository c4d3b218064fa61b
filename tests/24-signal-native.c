// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ABI v2 PERWINE_FLAG_SIGNAL_NATIVE: at signal delivery the kernel saves
 * the selector in the frame and stores NATIVE; rt_sigreturn puts the
 * saved byte back, and a handler may change it.  A 64-bit frame keeps
 * the byte in a tagged word of its sigcontext (ABI v3, "Frame layout"),
 * and rt_sigreturn refuses a frame whose word is not a tag and a
 * selector byte.  Each check has a negative control: the same process
 * with v1 behaviour (the flag off), or a handler that keeps the frame
 * well-formed.
 */
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/time.h>
#include "tap.h"

#define TAP_POINTS 31

/*
 * Every case runs in a child of its own, killed when it has not ended
 * after this many seconds (generous: the suite also runs on a TCG guest
 * with a KASAN kernel); its points then fail and the next case runs.
 */
#define CASE_TIMEOUT 120
static int hung;	/* the last case's child was killed by the timeout */

/* A point of the last case: whatever it checks, it fails if the case hung. */
#define case_ok(cond, ...) tap_ok((cond) && !hung, __VA_ARGS__)

/* The shared page tells the parent what a child saw. */
struct seen {
	int handler_ran;	/* the handler was entered */
	int sel_in_handler;	/* the selector while it ran */
	int saved;		/* the byte its frame carries, -1: none */
	long handler_call;	/* its raw getppid() result */
	int traps;		/* SIGSYS traps counted */
	int trap_nr;		/* si_syscall of the last one */
	int sel_after;		/* the selector after the handler returned */
	int nested_saved;	/* the nested handler's frame byte */
	int nested_sel_after;	/* the selector after the nested one returned */
	int gid_after;		/* the spinning thread's gid after setgid() */
	unsigned long uc_flags;	/* the handler's frame's uc_flags */
	int segv_saved;		/* the selector when a failed sigreturn's SIGSEGV came */
};
static struct seen *seen;
static unsigned int config_flags;
static volatile int stop_spinning;

/* A 64-bit frame's selector word: the byte, and "PERWINE" after it. */
static unsigned long long *saved_word(ucontext_t *uc)
{
	return &uc->uc_mcontext.__reserved1[0];
}

/* The byte the frame carries; -1: none; -3: the bit without the tag. */
static int saved_byte(ucontext_t *uc)
{
	if (!(uc->uc_flags & PERWINE_UC_SELECTOR_SC))
		return -1;
	if ((*saved_word(uc) & ~0xffULL) != PERWINE_UC_SELECTOR_MAGIC)
		return -3;
	return (int)(*saved_word(uc) & 0xff);
}

static void set_saved_byte(ucontext_t *uc, uint8_t value)
{
	*saved_word(uc) = PERWINE_UC_SELECTOR_MAGIC | value;
}

static int enable(unsigned int flags)
{
	struct perwine_config cfg = { .selector = (uintptr_t)&test_sel, .flags = flags };

	if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, &cfg, sizeof(cfg), 0))
		return -errno;
	set_perwine(1);
	return 0;
}

/* A SIGSYS recorder that leaves the selector alone. */
static void count_sigsys(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	seen->traps++;
	seen->trap_nr = si->si_syscall;
	uc->uc_mcontext.gregs[REG_RAX] = 42;
	/* v1: let this handler's own sigreturn run natively. */
	if (!(config_flags & PERWINE_FLAG_SIGNAL_NATIVE))
		test_sel = PERWINE_NATIVE;
}

/* A plain handler that knows nothing of perwine. */
static void plain_alarm(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	seen->sel_in_handler = test_sel;
	seen->saved = saved_byte(ucv);
	seen->uc_flags = ((ucontext_t *)ucv)->uc_flags;
	seen->handler_call = test_syscall(SYS_getppid, 0, 0, 0);
	seen->handler_ran = 1;
	stop_spinning = 1;
}

static void install(int sig, void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO;
	sigaction(sig, &sa, NULL);
}

/*
 * The signal comes from a helper thread (no selector, not PER_WINE,
 * every signal blocked, so that no process-wide signal lands there): it
 * waits until the main thread spins at TRAP, for selector_page_lost
 * changes the selector's page, and only then sends SIGALRM to the main
 * thread, so the delivery always meets TRAP (a timer armed before the
 * store of TRAP raced it under load).
 */
static volatile int spinner_ready;
static uint8_t *sel_page;	/* selector_page_lost: its selector page */
static int sel_page_prot;

static void *signal_when_spinning(void *arg)
{
	pthread_t *spinner = arg;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (!spinner_ready)
		sched_yield();
	if (sel_page && mprotect(sel_page, 4096, sel_page_prot))
		_exit(5);
	pthread_kill(*spinner, SIGALRM);
	return NULL;
}

/* Start the helper; before PER_WINE and the selector, which it must not have. */
static void start_signaller(pthread_t *self)
{
	pthread_t t;

	*self = pthread_self();
	if (pthread_create(&t, NULL, signal_when_spinning, self))
		_exit(6);
}

/* Spin at TRAP, with no syscall, until a handler stops us. */
static void spin_at_trap(void)
{
	test_sel = PERWINE_TRAP;
	spinner_ready = 1;	/* after the store of TRAP: the helper may signal */
	while (!stop_spinning)
		;
	seen->sel_after = test_sel;
	test_sel = PERWINE_NATIVE;
}

static void alarm_interrupts_trap(void)
{
	pthread_t self;

	install(SIGSYS, count_sigsys);
	install(SIGALRM, plain_alarm);
	start_signaller(&self);
	if (enable(config_flags))
		_exit(3);
	spin_at_trap();
	_exit(0);
}

/* The trap's own SIGSYS: the handler runs NATIVE and may pick the state after it. */
static void sigsys_keep(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	seen->sel_in_handler = test_sel;
	seen->saved = saved_byte(ucv);
	seen->handler_call = test_syscall(SYS_getppid, 0, 0, 0);
	((ucontext_t *)ucv)->uc_mcontext.gregs[REG_RAX] = 7;
}

static void sigsys_redirect(int sig, siginfo_t *si, void *ucv)
{
	sigsys_keep(sig, si, ucv);
	set_saved_byte(ucv, PERWINE_NATIVE);
}

static void nested_inner(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	seen->nested_saved = saved_byte(ucv);
}

/*
 * The outer handler arms a CPU-time timer and spins, NATIVE as the
 * kernel left it, until the inner signal has come and gone.
 */
static volatile int inner_done;

static void nested_inner_done(int sig, siginfo_t *si, void *ucv)
{
	nested_inner(sig, si, ucv);
	inner_done = 1;
}

static void alarm_then_nested(int sig, siginfo_t *si, void *ucv)
{
	struct itimerval it = { .it_value.tv_usec = 10000 };

	seen->sel_in_handler = test_sel;
	seen->saved = saved_byte(ucv);
	setitimer(ITIMER_VIRTUAL, &it, NULL);
	while (!inner_done)
		;
	seen->nested_sel_after = test_sel;
	seen->handler_ran = 1;
	stop_spinning = 1;
	(void)sig;
	(void)si;
}

static void nested_signals(void)
{
	pthread_t self;

	install(SIGSYS, count_sigsys);
	install(SIGALRM, alarm_then_nested);
	install(SIGVTALRM, nested_inner_done);
	start_signaller(&self);
	if (enable(PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE))
		_exit(3);
	spin_at_trap();
	_exit(0);
}

/* A trap's own SIGSYS, with a handler that makes a raw syscall. */
static void trap_with(void (*fn)(int, siginfo_t *, void *))
{
	long r;

	install(SIGSYS, fn);
	if (enable(config_flags))
		_exit(3);
	test_sel = PERWINE_TRAP;
	r = test_syscall(SYS_getpid, 0, 0, 0);
	seen->sel_after = test_sel;
	test_sel = PERWINE_NATIVE;
	_exit(r == 7 ? 0 : 5);
}

static void trap_keep(void)
{
	trap_with(sigsys_keep);
}

static void trap_redirect(void)
{
	trap_with(sigsys_redirect);
}

/*
 * A handler leaves its frame's word bad, as a frame built by user space
 * with a stale PERWINE_UC_SELECTOR_SC might: rt_sigreturn must refuse
 * it (SIGSEGV) without writing the selector.  The SIGSEGV handler's own
 * frame saves the selector as the failed sigreturn left it.
 */
static unsigned long long bad_word;

static void sigsys_bad_word(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	/* Without SIGNAL_NATIVE the handler runs at TRAP and nothing is restored: go native. */
	if (!(config_flags & PERWINE_FLAG_SIGNAL_NATIVE))
		test_sel = PERWINE_NATIVE;
	sigsys_keep(sig, si, ucv);
	uc->uc_flags |= PERWINE_UC_SELECTOR_SC;
	*saved_word(uc) = bad_word;
}

static void segv_after_sigreturn(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	seen->segv_saved = saved_byte(ucv);
	_exit(9);
}

static void trap_bad_word(void)
{
	install(SIGSEGV, segv_after_sigreturn);
	trap_with(sigsys_bad_word);
}

/* glibc's SIGSETXID handler runs in a thread that spins at TRAP. */
static void *spinner(void *arg)
{
	(void)arg;
	install(SIGSYS, count_sigsys);
	if (enable(config_flags))
		_exit(3);
	test_sel = PERWINE_TRAP;
	spinner_ready = 1;
	while (!stop_spinning)
		;
	test_sel = PERWINE_NATIVE;
	seen->gid_after = (int)syscall(SYS_getgid);
	return NULL;
}

static void setxid_broadcast(void)
{
	pthread_t t;

	pthread_create(&t, NULL, spinner, NULL);
	while (!spinner_ready)
		;
	if (setgid(4242) != 0)
		_exit(4);
	stop_spinning = 1;
	pthread_join(t, NULL);
	_exit(0);
}

/* The selector page turns read-only or unreadable under a spinning thread. */
static void page_alarm(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	(void)ucv;
	seen->handler_ran = 1;
	stop_spinning = 1;
}

/* The helper changes the page, then signals: the delivery meets the changed page. */
static void selector_page_lost(void)
{
	struct perwine_config cfg;
	pthread_t self;

	sel_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sel_page == MAP_FAILED)
		_exit(4);
	install(SIGALRM, page_alarm);
	memset(&cfg, 0, sizeof(cfg));
	cfg.selector = (uintptr_t)sel_page;
	cfg.flags = config_flags;
	if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, &cfg, sizeof(cfg), 0))
		_exit(3);
	start_signaller(&self);
	set_perwine(1);
	spinner_ready = 1;
	while (!stop_spinning)
		;
	_exit(0);
}

/* One case: fn in a child of its own, with the timeout. */
static int run_case(const char *name, void (*fn)(void), unsigned int flags)
{
	int st;

	memset(seen, 0, sizeof(*seen));
	seen->saved = seen->nested_saved = seen->segv_saved = -2;
	seen->gid_after = -1;	/* the spinner never got there */
	inner_done = 0;
	config_flags = flags;
	stop_spinning = 0;
	st = run_child_timeout(fn, CASE_TIMEOUT, &hung);
	if (hung)
		printf("# %s: still running after %d s, killed: its points fail\n", name, CASE_TIMEOUT);
	return st;
}
#define run_with(fn, flags) run_case(#fn, fn, flags)

int main(void)
{
	const unsigned int v1 = PERWINE_FLAG_ON, v2 = PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE;
	long self = getpid();
	int st;

	tap_require_perwine_v2();
	tap_plan(TAP_POINTS);
	seen = mmap(NULL, sizeof(*seen), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	/* A plain SIGALRM handler interrupting code at TRAP. */
	st = run_with(alarm_interrupts_trap, v2);
	case_ok(exited_with(st, 0) && seen->handler_ran, "SIGNAL_NATIVE: a plain handler interrupts TRAP code");
	case_ok(seen->sel_in_handler == PERWINE_NATIVE, "the handler runs with the selector NATIVE (%d)",
	        seen->sel_in_handler);
	case_ok(seen->saved == PERWINE_TRAP, "its frame's tagged word carries the saved TRAP (%d)", seen->saved);
	case_ok((seen->uc_flags & PERWINE_UC_SELECTOR_SC) && !(seen->uc_flags & (PERWINE_UC_SELECTOR | 0xff0000)),
	        "the 64-bit frame sets PERWINE_UC_SELECTOR_SC only, no byte in uc_flags (%#lx)", seen->uc_flags);
	case_ok(seen->handler_call == self && seen->traps == 0,
	        "its raw getppid() runs natively (%ld, %d traps)", seen->handler_call, seen->traps);
	case_ok(seen->sel_after == PERWINE_TRAP, "rt_sigreturn puts TRAP back (%d)", seen->sel_after);

	st = run_with(alarm_interrupts_trap, v1);
	case_ok(exited_with(st, 0) && seen->handler_ran, "control, v1: the same handler runs");
	case_ok(seen->sel_in_handler == PERWINE_TRAP && seen->saved == -1,
	        "control, v1: it sees TRAP and its frame carries no selector (%d, %d)",
	        seen->sel_in_handler, seen->saved);
	case_ok(seen->handler_call == 42 && seen->traps == 1 && seen->trap_nr == SYS_getppid,
	        "control, v1: its getppid() is trapped (%ld, %d traps)", seen->handler_call, seen->traps);

	/* The SIGSYS of a trap. */
	st = run_with(trap_keep, v2);
	case_ok(exited_with(st, 0), "a trap's handler returns 7 in RAX (status %#x)", st);
	case_ok(seen->sel_in_handler == PERWINE_NATIVE && seen->saved == PERWINE_TRAP,
	        "the SIGSYS handler runs NATIVE, its frame saved TRAP (%d, %d)",
	        seen->sel_in_handler, seen->saved);
	case_ok(seen->handler_call == self, "the SIGSYS handler's raw getppid() runs natively (%ld)",
	        seen->handler_call);
	case_ok(seen->sel_after == PERWINE_TRAP, "after it returns the selector is TRAP again (%d)",
	        seen->sel_after);
	st = run_with(trap_redirect, v2);
	case_ok(exited_with(st, 0) && seen->sel_after == PERWINE_NATIVE,
	        "a handler that stores NATIVE in the saved byte returns to NATIVE (%d)", seen->sel_after);
	/* Frames whose word is no tag and selector byte: a bad frame. */
	bad_word = PERWINE_UC_SELECTOR_MAGIC | 0x5a;
	st = run_with(trap_bad_word, v2);
	case_ok(exited_with(st, 9), "a saved byte neither NATIVE nor TRAP: rt_sigreturn fails with SIGSEGV (%#x)", st);
	case_ok(seen->segv_saved == PERWINE_NATIVE, "... and leaves the selector NATIVE, not 0x5a (%d)",
	        seen->segv_saved);
	bad_word = 0x0123456789abcd00ULL | PERWINE_TRAP;
	st = run_with(trap_bad_word, v2);
	case_ok(exited_with(st, 9), "a word with TRAP but no tag: rt_sigreturn fails with SIGSEGV (%#x)", st);
	case_ok(seen->segv_saved == PERWINE_NATIVE, "... and leaves the selector NATIVE, not TRAP (%d)",
	        seen->segv_saved);
	st = run_with(trap_bad_word, v1);
	case_ok(exited_with(st, 0) && seen->sel_after == PERWINE_NATIVE,
	        "control, v1: the same frame returns and the selector stays the handler's NATIVE (%#x, %d)", st,
	        seen->sel_after);

	st = run_with(trap_keep, v1);
	case_ok(killed_by(st, SIGSYS),
	        "control, v1: the same handler's syscall traps inside SIGSYS: killed by SIGSYS (%#x)", st);

	/* Nested signals each keep their own byte. */
	st = run_with(nested_signals, v2);
	case_ok(exited_with(st, 0) && seen->handler_ran, "nested: SIGVTALRM inside a SIGALRM handler");
	case_ok(seen->saved == PERWINE_TRAP && seen->sel_in_handler == PERWINE_NATIVE,
	        "nested: the outer frame saved TRAP, the outer handler runs NATIVE (%d, %d)",
	        seen->saved, seen->sel_in_handler);
	case_ok(seen->nested_saved == PERWINE_NATIVE,
	        "nested: the inner frame saved the outer handler's NATIVE (%d)", seen->nested_saved);
	case_ok(seen->nested_sel_after == PERWINE_NATIVE && seen->sel_after == PERWINE_TRAP,
	        "nested: each sigreturn restores its own frame's byte (%d, then %d)",
	        seen->nested_sel_after, seen->sel_after);
	case_ok(seen->traps == 0, "nested: nothing trapped (%d)", seen->traps);

	/* glibc's own handlers: setgid() in another thread. */
	st = run_with(setxid_broadcast, v2);
	case_ok(exited_with(st, 0), "setgid() while another thread spins at TRAP (status %#x)", st);
	case_ok(seen->traps == 0 && seen->gid_after == 4242,
	        "SIGSETXID's handler ran natively in the TRAP thread: no trap, gid %d", seen->gid_after);
	/*
	 * v1: glibc's SIGSETXID handler knows nothing of perwine, its setxid
	 * syscall traps and so does every later syscall of that thread: the
	 * case does not end by itself, and the timeout ending it is part of
	 * the control (tap_ok, not case_ok).  The thread never took 4242.
	 */
	st = run_with(setxid_broadcast, v1);
	tap_ok(seen->traps >= 1 && seen->gid_after != 4242,
	       "control, v1: the handler's syscall %d is trapped and the thread does not take gid 4242 (%d)",
	       seen->trap_nr, seen->gid_after);

	/* A selector that cannot be read or written at delivery: SIGSEGV. */
	sel_page_prot = PROT_READ;
	st = run_with(selector_page_lost, v2);
	case_ok(killed_by(st, SIGSEGV) && !seen->handler_ran,
	        "a read-only selector at delivery: SIGSEGV before the handler (status %#x)", st);
	sel_page_prot = PROT_NONE;
	st = run_with(selector_page_lost, v2);
	case_ok(killed_by(st, SIGSEGV) && !seen->handler_ran,
	        "an unreadable selector at delivery: SIGSEGV before the handler (status %#x)", st);
	sel_page_prot = PROT_READ;
	st = run_with(selector_page_lost, v1);
	case_ok(exited_with(st, 0) && seen->handler_ran,
	        "control, v1: a read-only selector does not stop delivery (status %#x)", st);

	return tap_done();
}
