// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Who gets killed by which signal: a bad selector value (SIGSYS), an
 * unmapped selector (SIGSEGV), a trap while SIGSYS is blocked or
 * ignored (SIGSYS), a trap inside the SIGSYS handler (SIGSYS, no loop).
 */
#include <sys/mman.h>
#include "tap.h"

static void bad_selector_value(uint8_t value)
{
	dispatch_on(&test_sel, 0, 0);
	set_perwine(1);
	test_sel = value;
	test_syscall(SYS_getpid, 0, 0, 0);
	test_sel = PERWINE_NATIVE;
	_exit(3);
}

static void bad_value(void)
{
	bad_selector_value(2);
}

static void bad_value_255(void)
{
	bad_selector_value(255);
}

static void unmapped_selector(void)
{
	uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	dispatch_on(page, 0, 0);
	munmap(page, 4096);
	set_perwine(1);
	getppid();
	_exit(3);
}

static void sigsys_blocked(void)
{
	sigset_t set;

	install_recorder();
	sigemptyset(&set);
	sigaddset(&set, SIGSYS);
	sigprocmask(SIG_BLOCK, &set, NULL);
	dispatch_on(&test_sel, 0, 0);
	set_perwine(1);
	trapped_call(SYS_getpid, 0, 0, 0);
	_exit(3);
}

static void sigsys_ignored(void)
{
	signal(SIGSYS, SIG_IGN);
	dispatch_on(&test_sel, 0, 0);
	set_perwine(1);
	trapped_call(SYS_getpid, 0, 0, 0);
	_exit(3);
}

static void trap_in_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	/* The selector is still TRAP: this traps with SIGSYS blocked. */
	test_syscall(SYS_getpid, 0, 0, 0);
	_exit(4);
}

static void recursive_trap(void)
{
	install_sigsys(trap_in_handler);
	dispatch_on(&test_sel, 0, 0);
	set_perwine(1);
	trapped_call(SYS_getpid, 0, 0, 0);
	_exit(3);
}

static const struct {
	void (*child)(void);
	int signal;
	const char *what;
} kills[] = {
	{ bad_value, SIGSYS, "selector value 2 kills with SIGSYS" },
	{ bad_value_255, SIGSYS, "selector value 255 kills with SIGSYS" },
	{ unmapped_selector, SIGSEGV, "selector unmapped after registration kills with SIGSEGV" },
	{ sigsys_blocked, SIGSYS, "trap with SIGSYS blocked kills with SIGSYS" },
	{ sigsys_ignored, SIGSYS, "trap with SIGSYS ignored kills with SIGSYS" },
	{ recursive_trap, SIGSYS, "trap inside the SIGSYS handler kills, no recursion" },
};

int main(void)
{
	const int n = sizeof(kills) / sizeof(kills[0]);

	tap_require_perwine();
	tap_plan(n);
	for (int i = 0; i < n; i++) {
		int st = run_child(kills[i].child);

		tap_ok(killed_by(st, kills[i].signal), "%s (status %#x)", kills[i].what, st);
	}
	return tap_done();
}
