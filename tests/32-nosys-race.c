// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ABI v2.1 "The NOSYSCALL record never passes through zero": while one
 * thread mprotect()s the process's only PROT_NOSYSCALL page back and
 * forth between RX and RWX, keeping PROT_NOSYSCALL, another thread calls
 * getpid from that page at selector NATIVE.  Every call must trap (the
 * handler answers -1000); none may return a pid.  A kernel that
 * accounts such an mprotect as -n then +n clears the "has NOSYSCALL
 * pages" bit for a moment, and a syscall entry that reads it then runs
 * natively.  A fixed number of calls, so the test ends; the race needs
 * two CPUs to show (make vm-check boots two).
 */
#include <pthread.h>
#include <sys/mman.h>

#include "tap.h"

#define PAGE 4096
#define CALLS 50000
#define RACE_ANSWER (-1000)

static const unsigned char stub[] = { 0x48, 0x89, 0xf8, 0x0f, 0x05, 0xc3 };	/* mov %rdi,%rax; syscall; ret */
static unsigned char *page;
static volatile int done;
static long flips;

static void answer(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	if (si->si_code == SYS_USER_DISPATCH && si->si_errno == PERWINE_TRAP_VMA)
		trap_count++;
	uc->uc_mcontext.gregs[REG_RAX] = RACE_ANSWER;
}

static void *flipper(void *arg)
{
	static const int prot[2] = { PROT_READ | PROT_EXEC | PROT_NOSYSCALL,
				     PROT_READ | PROT_WRITE | PROT_EXEC | PROT_NOSYSCALL };

	(void)arg;
	while (!done) {
		if (mprotect(page, PAGE, prot[flips & 1]))
			return (void *)1;
		flips++;
	}
	return NULL;
}

int main(void)
{
	long (*call)(long), r, pids = 0, others = 0, before;
	pthread_t t;
	void *ret;
	int i;

	tap_require_perwine_v2();
	tap_plan(4);
	page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));
	memcpy(page, stub, sizeof(stub));
	if (mprotect(page, PAGE, PROT_READ | PROT_EXEC | PROT_NOSYSCALL))
		tap_bail("mprotect(PROT_NOSYSCALL): %s", strerror(errno));
	call = (long (*)(long))page;
	before = status_kb("VmNoSys");
	install_sigsys(answer);
	if (dispatch_on(&test_sel, 0, 0) || set_perwine(1) == -1)
		tap_bail("PER_WINE: %s", strerror(errno));

	if (pthread_create(&t, NULL, flipper, NULL))
		tap_bail("pthread_create");
	for (i = 0; i < CALLS; i++) {
		r = call(SYS_getpid);
		if (r == getpid())
			pids++;
		else if (r != RACE_ANSWER)
			others++;
	}
	done = 1;
	pthread_join(t, &ret);

	tap_ok(pids == 0 && others == 0,
	       "%d getpid calls from the flipping NOSYSCALL page: none ran natively (%ld pids, %ld other results)",
	       CALLS, pids, others);
	tap_ok(trap_count == CALLS, "each call was one VMA trap (%d of %d)", trap_count, CALLS);
	tap_ok(ret == NULL && flips > 0, "the other thread flipped the page %ld times meanwhile", flips);
	tap_ok(status_kb("VmNoSys") == before && before == PAGE / 1024,
	       "VmNoSys is still the page's %d kB (%ld)", PAGE / 1024, status_kb("VmNoSys"));
	return tap_done();
}
