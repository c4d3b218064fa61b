// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The PROT_NOSYSCALL fallback: code in such a page traps with si_errno
 * PERWINE_TRAP_VMA, with the selector NATIVE or without one; mprotect
 * back to plain PROT_EXEC stops it; the VMA of the syscall instruction
 * (IP - 2) decides; no effect without PERWINE_PER_WINE; smaps shows "ns".
 */
#include <pthread.h>
#include <sys/mman.h>
#include "tap.h"

#define PAGE 4096

/* mov $SYS_getpid, %eax; syscall; ret */
static const unsigned char getpid_code[] = { 0xb8, SYS_getpid, 0, 0, 0, 0x0f, 0x05, 0xc3 };

static long (*place(unsigned char *at))(void)
{
	memcpy(at, getpid_code, sizeof(getpid_code));
	return (long (*)(void))at;
}

/*
 * The kernel caches the VMA answer per thread: every change of the
 * page's protection or mapping must be seen by the next syscall.
 * Returns how many of the calls gave the wrong answer.
 */
static int flip_and_call(long (*fn)(void), unsigned char *page, int rounds)
{
	int wrong = 0;
	long before;

	for (int i = 0; i < rounds; i++) {
		int nosys = i & 1;

		mprotect(page, PAGE, PROT_READ | PROT_EXEC | (nosys ? PROT_NOSYSCALL : 0));
		before = trap_count;
		if (fn() != (nosys ? 77 : getpid()) || trap_count != before + nosys)
			wrong++;
	}
	return wrong;
}

/* Map the code afresh at the same address, with or without PROT_NOSYSCALL. */
static long remap_and_call(unsigned char *at, int nosys)
{
	if (mmap(at, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != at)
		return -1;
	place(at);
	mprotect(at, PAGE, PROT_READ | PROT_EXEC | (nosys ? PROT_NOSYSCALL : 0));
	return ((long (*)(void))at)();
}

/* Another thread flips the page; this one must see each flip at once. */
static struct {
	unsigned char *page;
	volatile int phase, done;
	int wrong;
} shared;

static void *caller_thread(void *arg)
{
	long (*fn)(void) = (long (*)(void))shared.page;
	pid_t pid = getpid();

	(void)arg;
	/* A new thread has no configuration: the VMA rule needs one. */
	prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, 0, 0, 0);
	for (int i = 1; i <= 40; i++) {
		while (shared.phase != i)
			;
		if (fn() != ((i & 1) ? 77 : pid))
			shared.wrong++;
		shared.done = i;
	}
	return NULL;
}

static int flip_from_other_thread(void)
{
	pthread_t t;

	shared.phase = shared.done = shared.wrong = 0;
	pthread_create(&t, NULL, caller_thread, NULL);
	for (int i = 1; i <= 40; i++) {
		mprotect(shared.page, PAGE, PROT_READ | PROT_EXEC | ((i & 1) ? PROT_NOSYSCALL : 0));
		shared.phase = i;
		while (shared.done != i)
			;
	}
	pthread_join(t, NULL);
	return shared.wrong;
}

int main(void)
{
	unsigned char *p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long (*fn)(void), (*edge)(void);
	pid_t pid = getpid();
	long r;

	tap_require_perwine();
	tap_plan(18);
	install_recorder();
	trap_return = 77;

	fn = place(p);
	tap_ok(mprotect(p, PAGE, PROT_READ | PROT_EXEC | PROT_NOSYSCALL) == 0,
	       "mprotect(PROT_READ | PROT_EXEC | PROT_NOSYSCALL)");
	tap_ok(smaps_has_flag(p, "ns"), "/proc/self/smaps VmFlags shows ns");
	r = fn();
	tap_ok(r == pid && trap_count == 0, "without PER_WINE, PROT_NOSYSCALL has no effect (%ld)", r);

	dispatch_on(&test_sel, 0, 0);
	set_perwine(1);
	test_sel = PERWINE_NATIVE;
	r = fn();
	tap_ok(r == 77 && trap_count == 1, "selector NATIVE, NOSYSCALL page: traps (%ld)", r);
	tap_ok(trap_info.si_errno == PERWINE_TRAP_VMA && trap_info.si_code == SYS_USER_DISPATCH &&
	       trap_info.si_syscall == SYS_getpid && trap_info.si_call_addr == (void *)(p + 7),
	       "si_errno PERWINE_TRAP_VMA, si_syscall and si_call_addr of the page's syscall");

	prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, 0, 0, 0);
	r = fn();
	tap_ok(r == 77 && trap_count == 2, "no selector registered: the VMA check still traps");
	prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);
	r = fn();
	tap_ok(r == pid && trap_count == 2,
	       "PER_WINE without a configuration: PROT_NOSYSCALL has no effect (%ld)", r);
	prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, 0, 0, 0);

	tap_ok(mprotect(p, PAGE, PROT_READ | PROT_EXEC) == 0 && !smaps_has_flag(p, "ns"),
	       "mprotect back to PROT_READ | PROT_EXEC clears ns");
	r = fn();
	tap_ok(r == pid && trap_count == 2, "plain PROT_EXEC page runs natively again");

	/* syscall in the last two bytes of a NOSYSCALL page, ret on the next, plain page. */
	mprotect(p, 2 * PAGE, PROT_READ | PROT_WRITE);
	memcpy(p + PAGE - 7, getpid_code, sizeof(getpid_code));
	edge = (long (*)(void))(p + PAGE - 7);
	mprotect(p, PAGE, PROT_READ | PROT_EXEC | PROT_NOSYSCALL);
	mprotect(p + PAGE, PAGE, PROT_READ | PROT_EXEC);
	r = edge();
	tap_ok(r == 77 && trap_count == 3, "syscall in the last 2 bytes of a NOSYSCALL page traps");
	/* And the other way round: the IP after it lies in a NOSYSCALL page. */
	mprotect(p, PAGE, PROT_READ | PROT_EXEC);
	mprotect(p + PAGE, PAGE, PROT_READ | PROT_EXEC | PROT_NOSYSCALL);
	r = edge();
	tap_ok(r == pid && trap_count == 3, "syscall before a NOSYSCALL page runs natively (IP - 2 decides)");

	fn = (long (*)(void))mmap(NULL, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC | PROT_NOSYSCALL,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	place((unsigned char *)fn);
	r = fn();
	tap_ok(r == 77 && trap_count == 4, "mmap(PROT_NOSYSCALL) traps too");
	r = syscall(SYS_pkey_mprotect, (void *)fn, PAGE, PROT_READ | PROT_EXEC, -1);
	tap_ok(r == 0 && fn() == pid && trap_count == 4, "pkey_mprotect without it runs natively");

	tap_ok(flip_and_call(fn, (unsigned char *)fn, 100) == 0,
	       "100 mprotect flips: each next syscall from the page sees the new protection");
	tap_ok(remap_and_call((unsigned char *)fn, 1) == 77, "unmapped and mapped again with NOSYSCALL: traps");
	tap_ok(remap_and_call((unsigned char *)fn, 0) == pid, "mapped again without it: runs natively");
	tap_ok(remap_and_call((unsigned char *)fn, 1) == 77, "and with it again: traps");
	shared.page = (unsigned char *)fn;
	tap_ok(flip_from_other_thread() == 0,
	       "40 flips by another thread: each seen by this thread's next syscall");
	return tap_done();
}
