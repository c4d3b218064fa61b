// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperwine: perwine_available, perwine_strerror, perwine_enable and
 * perwine_disable, with every error path.
 */
#include <pthread.h>

#include "tap.h"

static int personality_now(void)
{
	return personality(0xffffffff);
}

/* Disable with the selector still at TRAP: its syscalls must not trap. */
static void disable_while_trapping(void)
{
	if (perwine_enable(PERWINE_THREAD_SELECTOR))
		_exit(2);
	perwine_trap();
	if (perwine_disable())
		_exit(3);
	perwine_native();
	_exit(0);
}

/*
 * Enable with the selector byte already at TRAP: once the prctl has
 * registered it, the rest of enable's syscalls must still run natively
 * (no SIGSYS handler is installed: a trap would kill the child).
 */
static void enable_while_trapping(void)
{
	perwine_trap();
	if (perwine_enable(PERWINE_THREAD_SELECTOR))
		_exit(3);
	perwine_native();
	_exit(0);
}

/* The control: the same two syscalls made by hand trap at the second. */
static void raw_enable_while_trapping(void)
{
	perwine_trap();
	prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, (unsigned long)PERWINE_THREAD_SELECTOR, 0, 0);
	personality(PERWINE_PER_WINE);
	personality(PERWINE_PER_WINE);
	perwine_native();
	_exit(0);
}

static void *thread_main(void *arg)
{
	struct perwine_config cfg;
	long *out = arg;

	out[0] = perwine_disable();
	out[1] = perwine_enable(PERWINE_THREAD_SELECTOR);
	out[2] = get_config(&cfg) == 0 ? (long)cfg.selector : 0;
	out[3] = perwine_disable();
	return NULL;
}

int main(void)
{
	struct perwine_config cfg;
	const char *why = "unset";
	unsigned long fn = (unsigned long)perwine_syscall;
	long in_thread[4];
	pthread_t t;

	tap_require_perwine();
	tap_plan(29);

	tap_ok(perwine_available(&why) == 1 && why == NULL, "perwine_available says yes, no reason");
	tap_ok(perwine_available(NULL) == 1, "perwine_available takes a NULL reason");
	tap_ok(strstr(perwine_strerror(-EEXIST), "already") != NULL, "strerror(-EEXIST) is the library's");
	tap_ok(strcmp(perwine_strerror(-EPERM), strerror(EPERM)) == 0, "strerror(-EPERM) is libc's");
	tap_ok(strcmp(perwine_strerror(5), "not a perwine error code") == 0, "strerror of a positive code");

	personality(PER_LINUX | ADDR_NO_RANDOMIZE);
	tap_ok(perwine_enable(PERWINE_THREAD_SELECTOR) == 0, "enable with the thread selector");
	tap_ok(personality_now() == (PERWINE_PER_WINE | ADDR_NO_RANDOMIZE), "personality PER_WINE, flags kept");
	tap_ok(get_config(&cfg) == 0 && cfg.selector == (unsigned long)PERWINE_THREAD_SELECTOR &&
	       cfg.flags == (PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE),
	       "the kernel holds the thread selector, with SIGNAL_NATIVE (ABI v2)");
	tap_ok(cfg.len > 0 && cfg.start <= fn && fn < cfg.start + cfg.len,
	       "the always-native range holds perwine_syscall");
	tap_ok(perwine_enable(PERWINE_THREAD_SELECTOR) == -EEXIST, "enable twice: -EEXIST");
	tap_ok(get_config(&cfg) == 0 && (cfg.flags & PERWINE_FLAG_ON), "still on after the second enable");
	tap_ok(perwine_disable() == 0, "disable");
	tap_ok(personality_now() == (PER_LINUX | ADDR_NO_RANDOMIZE), "personality back, flags kept");
	tap_ok(get_config(&cfg) == 0 && cfg.flags == 0 && cfg.selector == 0, "the kernel config is off");
	tap_ok(perwine_disable() == -ENOENT, "disable when not enabled: -ENOENT");

	tap_ok(perwine_enable(NULL) == 0, "enable with a NULL selector");
	tap_ok(get_config(&cfg) == 0 && cfg.selector == 0 && (cfg.flags & PERWINE_FLAG_ON),
	       "NULL selector: on, PROT_NOSYSCALL regions only");
	tap_ok(perwine_disable() == 0, "disable after a NULL selector");

	tap_ok(perwine_enable((volatile uint8_t *)0xffff888000000000UL) == -EFAULT,
	       "a kernel address as selector: -EFAULT");
	tap_ok(personality_now() == (PER_LINUX | ADDR_NO_RANDOMIZE) && perwine_disable() == -ENOENT,
	       "a failed enable leaves the thread as it was");

	personality(PERWINE_PER_WINE);
	tap_ok(perwine_enable(PERWINE_THREAD_SELECTOR) == 0, "enable when already PER_WINE (perwine-run)");
	tap_ok(perwine_disable() == 0 && personality_now() == PER_LINUX,
	       "disable then goes back to PER_LINUX");

	tap_ok(exited_with(run_child(disable_while_trapping), 0),
	       "disable runs natively with the selector at TRAP");
	tap_ok(exited_with(run_child(enable_while_trapping), 0),
	       "enable runs natively with the selector already at TRAP");
	tap_ok(killed_by(run_child(raw_enable_while_trapping), SIGSYS),
	       "control: the same prctl and personality() made by hand trap (SIGSYS)");

	perwine_enable(PERWINE_THREAD_SELECTOR);
	pthread_create(&t, NULL, thread_main, in_thread);
	pthread_join(t, NULL);
	tap_ok(in_thread[0] == -ENOENT, "a new thread starts not enabled");
	tap_ok(in_thread[1] == 0, "a new thread enables itself");
	tap_ok(in_thread[2] != 0 && in_thread[2] != (long)PERWINE_THREAD_SELECTOR && in_thread[3] == 0,
	       "each thread registers its own selector");
	tap_ok(get_config(&cfg) == 0 && cfg.selector == (unsigned long)PERWINE_THREAD_SELECTOR,
	       "the main thread's config is untouched");
	perwine_disable();
	return tap_done();
}
