// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Stress, bounded in calls and time: what a Wine process does to the
 * kernel side, all at once.
 *
 *  - THREADS threads each flip their own selector and trap in a loop,
 *    and call code in a page whose protection another thread keeps
 *    flipping between PROT_EXEC and PROT_EXEC | PROT_NOSYSCALL, while
 *    that thread also maps and unmaps NOSYSCALL pages and forks.  Every
 *    trapped call's result is checked, and per thread the traps handled
 *    equal the traps issued: nothing lost, nothing doubled.
 *  - a fork/exec storm of PERWINE_PER_WINE children, each with its selector at
 *    TRAP when it execs: every new program starts clean.
 *  - selector memory unmapped or made PROT_NONE while threads use it:
 *    the process dies of SIGSEGV, and the kernel stays clean.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#include "tap.h"

#define THREADS		8
#define CALLS		3000
#define NR_MIX		3000
#define VMA_MARK	0x5eedL
#define PAGE		4096
#define EXECS		100
#define TIME_LIMIT	60	/* seconds per part, a hang is a failure */

/* mov %rdi, %rax; syscall; ret */
static const unsigned char stub[] = { 0x48, 0x89, 0xf8, 0x0f, 0x05, 0xc3 };

static long (*flip_page)(long nr);
static atomic_int stop, churn_started;
static atomic_long vma_seen;	/* VMA traps of all threads so far */

struct worker {
	pthread_t thread;
	long id;
	long calls;		/* iterations: CALLS, more until a VMA trap was seen */
	long issued, handled;	/* selector traps */
	long vma_traps, natives;	/* calls from the flipping page */
	long wrong;
	int enable;
};

static __thread struct worker *self;

static long mix(long a, long b)
{
	return a * 1000003 + b;
}

static long callback(long nr, const long args[6], void *ctx)
{
	(void)ctx;
	if (nr == NR_MIX) {
		self->handled++;
		return mix(args[0], args[1]);
	}
	if (nr == SYS_getppid && perwine_trap_info()->si_errno == PERWINE_TRAP_VMA) {
		self->vma_traps++;
		atomic_fetch_add(&vma_seen, 1);
		return VMA_MARK;
	}
	return -ENOSYS;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	long ppid = getppid();
	time_t start = time(NULL);

	self = w;
	w->enable = perwine_enable(PERWINE_THREAD_SELECTOR);
	if (w->enable)
		return NULL;
	/*
	 * CALLS at least, and on until some thread saw the page trap: a
	 * fast trap path may otherwise finish before the churn got a slice.
	 */
	for (long i = 0; i < CALLS || (!atomic_load(&vma_seen) && time(NULL) - start < TIME_LIMIT / 2);
	     i++) {
		w->calls++;
		long r, before = w->vma_traps;

		perwine_trap();
		w->issued++;
		r = test_syscall6(NR_MIX, w->id, i, 0, 0, 0, 0);
		perwine_native();
		if (r != mix(w->id, i))
			w->wrong++;
		/* Trapped by the VMA check or native: either, but exactly one. */
		r = flip_page(SYS_getppid);
		if (r == VMA_MARK ? w->vma_traps != before + 1 : (r != ppid || w->vma_traps != before))
			w->wrong++;
		if (r != VMA_MARK)
			w->natives++;
	}
	perwine_disable();
	return NULL;
}

/* Flips the page, maps and unmaps NOSYSCALL pages and forks, until told to stop. */
static void *churn_main(void *arg)
{
	long *rounds = arg;

	while (!atomic_load(&stop)) {
		void *p = mmap(NULL, PAGE, PROT_READ | PROT_EXEC | PROT_NOSYSCALL,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		pid_t pid;

		atomic_store(&churn_started, 1);
		mprotect((void *)flip_page, PAGE, PROT_READ | PROT_EXEC | PROT_NOSYSCALL);
		if (p != MAP_FAILED)
			munmap(p, PAGE);
		mprotect((void *)flip_page, PAGE, PROT_READ | PROT_EXEC);
		if ((++*rounds & 15) == 0) {
			pid = fork();
			if (pid == 0)
				_exit(0);
			if (pid > 0)
				waitpid(pid, NULL, 0);
		}
	}
	return NULL;
}

static void threads_part(void)
{
	struct worker w[THREADS];
	pthread_t churn;
	long rounds = 0, vma = 0, native = 0;
	int ok = 1, counted = 1;
	void *page;

	tap_ok(perwine_enable(PERWINE_THREAD_SELECTOR) == 0 &&
	       perwine_set_dispatcher(callback, NULL) == 0 &&
	       perwine_map_code(stub, sizeof(stub), PERWINE_MAP_NATIVE, &page) == 0,
	       "enable, dispatcher and the flipping page");
	flip_page = (long (*)(long))page;
	pthread_create(&churn, NULL, churn_main, &rounds);
	while (!atomic_load(&churn_started))
		sched_yield();
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .id = i + 1 };
		pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(w[i].thread, NULL);
		if (w[i].enable || w[i].wrong)
			ok = 0;
		if (w[i].calls < CALLS || w[i].issued != w[i].calls || w[i].handled != w[i].calls ||
		    w[i].vma_traps + w[i].natives != w[i].calls)
			counted = 0;
		printf("# thread %ld: %ld/%ld selector traps handled, %ld VMA traps, %ld native, %ld wrong\n",
		       w[i].id, w[i].handled, w[i].issued, w[i].vma_traps, w[i].natives, w[i].wrong);
		vma += w[i].vma_traps;
		native += w[i].natives;
	}
	atomic_store(&stop, 1);
	pthread_join(churn, NULL);
	tap_ok(ok, "%d threads x %d calls or more while the page flips: every result right", THREADS, CALLS);
	tap_ok(counted, "per thread: traps handled == traps issued, VMA traps + natives == calls");
	tap_ok(rounds > 0 && vma > 0 && native > 0,
	       "the churn ran (%ld rounds) and both answers were seen (%ld VMA traps, %ld native)",
	       rounds, vma, native);
	perwine_set_dispatcher(NULL, NULL);
	perwine_disable();
}

/* Child of the exec storm: armed, then execve of /bin/true. */
static void exec_armed_true(void)
{
	static char *argv[] = { "/bin/true", NULL };

	if (dispatch_on(&test_sel, (unsigned long)test_syscall_ret, 1) || set_perwine(1) == -1)
		_exit(20);
	if (mmap(NULL, PAGE, PROT_READ | PROT_NOSYSCALL, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
		_exit(21);
	test_sel = PERWINE_TRAP;
	test_syscall(SYS_execve, (long)argv[0], (long)argv, (long)(char *[]){ NULL });
	_exit(22);
}

static void exec_storm_part(void)
{
	int bad = 0;

	for (int i = 0; i < EXECS; i++)
		if (!exited_with(run_child(exec_armed_true), 0))
			bad++;
	tap_ok(bad == 0, "%d fork+execve of PER_WINE children with the selector at TRAP: %d failed",
	       EXECS, bad);
}

/* Threads spin on native syscalls while their selector page goes away. */
static volatile uint8_t *doomed;

static void *spin_main(void *arg)
{
	(void)arg;
	dispatch_on(doomed, 0, 0);
	for (;;)
		test_syscall(SYS_getppid, 0, 0, 0);
	return NULL;
}

static void selector_vanishes(int prot_none)
{
	pthread_t t[2];

	doomed = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (doomed == MAP_FAILED || set_perwine(1) == -1)
		_exit(30);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, spin_main, NULL);
	usleep(20000);
	/* The main thread has no selector; its own syscalls run on. */
	if (prot_none)
		mprotect((void *)doomed, PAGE, PROT_NONE);
	else
		munmap((void *)doomed, PAGE);
	for (;;)
		pause();
}

static void selector_unmapped(void)
{
	selector_vanishes(0);
}

static void selector_prot_none(void)
{
	selector_vanishes(1);
}

int main(void)
{
	time_t start = time(NULL);

	tap_require_perwine();
	tap_plan(7);
	alarm(3 * TIME_LIMIT);
	threads_part();
	exec_storm_part();
	tap_ok(killed_by(run_child(selector_unmapped), SIGSEGV),
	       "selector page unmapped under 2 spinning threads: SIGSEGV");
	tap_ok(killed_by(run_child(selector_prot_none), SIGSEGV),
	       "selector page made PROT_NONE under 2 spinning threads: SIGSEGV");
	printf("# stress took %lds\n", (long)(time(NULL) - start));
	return tap_done();
}
