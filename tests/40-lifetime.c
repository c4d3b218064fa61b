// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Lifetime: a thread (CLONE_VM) keeps the personality with its config
 * cleared, a fork child keeps both, vfork clears, execve clears the
 * config and keeps the personality; two threads trap independently.
 * Dispatch applies (PerWine: on) only while the config is on: a PER_WINE
 * thread without one takes the plain syscall path.
 */
#include <pthread.h>
#include "tap.h"

/*
 * Whether dispatch applies to this thread, from its PerWine: line: 1
 * ("on"), 0 ("off"), -1 with no such line.
 */
static int status_on(void)
{
	char line[256];

	perwine_status_line("/proc/thread-self/status", line, sizeof(line));
	if (!line[0])
		return -1;
	return strncmp(line, "on ", 3) == 0;
}

/*
 * 0: config clear, dispatch off, PERWINE_PER_WINE kept; 1: config kept,
 * dispatch on, PERWINE_PER_WINE kept.
 */
static int state(void)
{
	struct perwine_config cfg;
	int per = (personality(0xffffffff) & PERWINE_PER_MASK) == PERWINE_PER_WINE;

	if (!per)
		return 10;
	if (get_config(&cfg))
		return 12;
	if (cfg.flags == 0 && cfg.selector == 0)
		return status_on() == 0 ? 0 : 13;
	if (cfg.flags == PERWINE_CONFIG_ON && cfg.selector == (uintptr_t)&test_sel)
		return status_on() == 1 ? 1 : 14;
	return 11;
}

static void *thread_state(void *arg)
{
	(void)arg;
	return (void *)(long)state();
}

static void fork_child(void)
{
	_exit(state());
}

static __thread volatile uint8_t my_sel;
static __thread int my_traps;

static void count_sigsys(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig, (void)si;
	my_sel = PERWINE_NATIVE;
	my_traps++;
	uc->uc_mcontext.gregs[REG_RAX] = 1000;
}

static void *trapping_thread(void *arg)
{
	long want_trap = (long)arg, ok = 1;
	int i;

	prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, (unsigned long)&my_sel, 0, 0);
	for (i = 0; i < 200; i++) {
		my_sel = want_trap ? PERWINE_TRAP : PERWINE_NATIVE;
		long r = test_syscall(SYS_getppid, 0, 0, 0);
		my_sel = PERWINE_NATIVE;
		if (r != (want_trap ? 1000 : getppid()))
			ok = 0;
	}
	return (void *)(long)(ok && my_traps == (want_trap ? 200 : 0));
}

int main(int argc, char **argv)
{
	pthread_t t1, t2;
	void *res1, *res2;
	pid_t pid;
	int st;

	if (argc > 1 && strcmp(argv[1], "--exec-child") == 0)
		return state();

	tap_require_perwine();
	tap_plan(6);
	dispatch_on(&test_sel, 0, 0);
	set_perwine(1);

	pthread_create(&t1, NULL, thread_state, NULL);
	pthread_join(t1, &res1);
	tap_ok((long)res1 == 0, "thread: config cleared, dispatch off, personality kept (%ld)", (long)res1);

	st = run_child(fork_child);
	tap_ok(exited_with(st, 1), "fork child: config, dispatch and personality kept (status %#x)", st);

	pid = vfork();
	if (pid == 0)
		_exit(state());
	waitpid(pid, &st, 0);
	tap_ok(exited_with(st, 0), "vfork child: config cleared, dispatch off, personality kept (status %#x)", st);

	pid = fork();
	if (pid == 0) {
		execl("/proc/self/exe", argv[0], "--exec-child", (char *)NULL);
		_exit(12);
	}
	waitpid(pid, &st, 0);
	tap_ok(exited_with(st, 0), "execve: config cleared, dispatch off (PerWine: off), personality kept (status %#x)", st);

	install_sigsys(count_sigsys);
	pthread_create(&t1, NULL, trapping_thread, (void *)1L);
	pthread_create(&t2, NULL, trapping_thread, (void *)0L);
	pthread_join(t1, &res1);
	pthread_join(t2, &res2);
	tap_ok(res1 != NULL, "thread with selector TRAP: 200 of 200 calls trapped and emulated");
	tap_ok(res2 != NULL, "thread with selector NATIVE at the same time: none trapped");
	return tap_done();
}
