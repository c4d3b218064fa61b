// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperwine under load: threads trapping at once and a timer signal
 * interrupting the foreign side, with every trapped call's result
 * checked and every trap counted (nothing lost, nothing doubled).
 */
#include <pthread.h>
#include <sys/time.h>

#include "tap.h"

#define NR_MIX		2000
#define THREADS		4
#define CALLS		3000

#include <sys/mman.h>
#include <sys/resource.h>

static __thread long handled;
static volatile long alarms, alarms_at_trap;
/*
 * Set between perwine_trap() and the trapped call, cleared when the
 * callback starts: while it is set the selector is TRAP.
 */
static __thread volatile int foreign;
/* The control's callback counts calls that are not the loop's own. */
static long *strays;

static long mix(long a, long b)
{
	return a * 31 + b;
}

static long callback(long nr, const long args[6], void *ctx)
{
	(void)ctx;
	foreign = 0;
	handled++;
	if (nr != NR_MIX && strays)
		(*strays)++;
	return nr == NR_MIX ? mix(args[0], args[1]) : -ENOSYS;
}

/* It lands on the foreign side too: perwine_sigaction() makes that safe. */
static void on_alarm(int sig)
{
	(void)sig;
	getppid();
	alarms++;
	if (foreign)
		alarms_at_trap++;
}

/* CALLS trapped calls; returns how many came back with a wrong result. */
static long trap_loop(long id)
{
	long wrong = 0;

	for (long i = 0; i < CALLS; i++) {
		perwine_trap();
		foreign = 1;
		if (test_syscall6(NR_MIX, id, i, 0, 0, 0, 0) != mix(id, i))
			wrong++;
		foreign = 0;
		perwine_native();
	}
	return wrong;
}

struct worker {
	pthread_t thread;
	long id, enable, wrong, handled;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	w->enable = perwine_enable(PERWINE_THREAD_SELECTOR);
	w->wrong = w->enable ? CALLS : trap_loop(w->id);
	w->handled = handled;
	perwine_disable();
	return NULL;
}

/*
 * The same loop with a plain sigaction() handler.  With the ABI v2
 * kernel's SIGNAL_NATIVE, which perwine_enable() turns on, it works.
 * The control drops that flag (ABI v1 behaviour): the handler's
 * getppid() and the rt_sigreturn of libc's restorer then reach the
 * callback as foreign calls, and the process cannot come out right.
 */
static int plain_v1;

static void plain_handler_loop(void)
{
	struct itimerval every = { { 0, 200 }, { 0, 200 } };
	struct perwine_config cfg;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	/* The timer replaces run_child()'s alarm: a CPU limit ends a hang. */
	struct rlimit cpu = { 30, 30 };

	setrlimit(RLIMIT_CPU, &cpu);
	/* This child inherited the parent's enabled thread and count: start over. */
	handled = 0;
	perwine_disable();
	if (perwine_enable(PERWINE_THREAD_SELECTOR) || perwine_set_dispatcher(callback, NULL))
		_exit(3);
	if (plain_v1) {
		get_config(&cfg);
		cfg.flags = PERWINE_FLAG_ON;	/* nor the redirect of ABI v3 */
		cfg.redirect = 0;
		cfg.redirect_info = 0;
		if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, &cfg, sizeof(cfg), 0))
			_exit(5);
	}
	setitimer(ITIMER_REAL, &every, NULL);
	if (trap_loop(0) == 0 && handled == CALLS && *strays == 0)
		_exit(0);
	_exit(4);
}

int main(void)
{
	struct itimerval every = { { 0, 200 }, { 0, 200 } }, off = { { 0, 0 }, { 0, 0 } };
	struct worker w[THREADS];
	struct sigaction sa;
	long wrong;
	int ok = 1, status;

	tap_require_perwine();
	tap_plan(8);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;

	tap_ok(perwine_sigaction(SIGALRM, &sa, NULL) == 0 &&
	       perwine_enable(PERWINE_THREAD_SELECTOR) == 0 &&
	       perwine_set_dispatcher(callback, NULL) == 0, "timer handler, enable and dispatcher set");
	setitimer(ITIMER_REAL, &every, NULL);
	wrong = trap_loop(0);
	setitimer(ITIMER_REAL, &off, NULL);
	tap_ok(wrong == 0, "%d trapped calls under a timer signal: %ld wrong results", CALLS, wrong);
	tap_ok(handled == CALLS && alarms > 0, "every trap handled once: %ld of %d (%ld timer signals)",
	       handled, CALLS, alarms);
	tap_ok(alarms_at_trap > 0, "%ld of the timer signals interrupted the foreign side (selector TRAP)",
	       alarms_at_trap);
	strays = mmap(NULL, sizeof(*strays), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	*strays = 0;
	status = run_child(plain_handler_loop);
	tap_ok(exited_with(status, 0) && *strays == 0,
	       "SIGNAL_NATIVE: the same loop with a plain sigaction() handler is right (status %#x)", status);
	*strays = 0;
	plain_v1 = 1;
	status = run_child(plain_handler_loop);
	tap_ok(!exited_with(status, 0) && (*strays > 0 || WIFSIGNALED(status)),
	       "control, v1: with a plain sigaction() handler the loop breaks (status %#x, %ld foreign calls)",
	       status, *strays);
	strays = NULL;

	for (int i = 0; i < THREADS; i++) {
		w[i].id = i + 1;
		pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(w[i].thread, NULL);
		if (w[i].enable || w[i].wrong || w[i].handled != CALLS) {
			printf("# thread %ld: enable %ld, wrong %ld, handled %ld\n", w[i].id,
			       w[i].enable, w[i].wrong, w[i].handled);
			ok = 0;
		}
	}
	tap_ok(ok, "%d threads x %d trapped calls at once: all right, all counted", THREADS, CALLS);
	tap_ok(handled == CALLS, "the threads' traps were not counted in the main thread");
	perwine_disable();
	return tap_done();
}
