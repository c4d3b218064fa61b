// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The PROT_NOSYSCALL fallback: code in such a page traps with si_errno
 * PERWINE_TRAP_VMA, with the selector NATIVE or without one; mprotect
 * back to plain PROT_EXEC stops it; the VMA of the syscall instruction
 * (IP - 2) decides; no effect without PER_WINE; smaps shows "ns".
 */
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

static int smaps_has_ns(void *addr)
{
	char line[512], want[32];
	int in = 0, found = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return 0;
	snprintf(want, sizeof(want), "%lx-", (unsigned long)addr);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' ') && line[0] != 'V')
			in = strncmp(line, want, strlen(want)) == 0;
		if (in && strncmp(line, "VmFlags:", 8) == 0)
			found = strstr(line, " ns") != NULL;
	}
	fclose(f);
	return found;
}

int main(void)
{
	unsigned char *p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long (*fn)(void), (*edge)(void);
	pid_t pid = getpid();
	long r;

	tap_require_perwine();
	tap_plan(13);
	install_recorder();
	trap_return = 77;

	fn = place(p);
	tap_ok(mprotect(p, PAGE, PROT_READ | PROT_EXEC | PROT_NOSYSCALL) == 0,
	       "mprotect(PROT_READ | PROT_EXEC | PROT_NOSYSCALL)");
	tap_ok(smaps_has_ns(p), "/proc/self/smaps VmFlags shows ns");
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
	tap_ok(r == 77 && trap_count == 3, "no configuration at all: the VMA check still traps");

	tap_ok(mprotect(p, PAGE, PROT_READ | PROT_EXEC) == 0 && !smaps_has_ns(p),
	       "mprotect back to PROT_READ | PROT_EXEC clears ns");
	r = fn();
	tap_ok(r == pid && trap_count == 3, "plain PROT_EXEC page runs natively again");

	/* syscall in the last two bytes of a NOSYSCALL page, ret on the next, plain page. */
	mprotect(p, 2 * PAGE, PROT_READ | PROT_WRITE);
	memcpy(p + PAGE - 7, getpid_code, sizeof(getpid_code));
	edge = (long (*)(void))(p + PAGE - 7);
	mprotect(p, PAGE, PROT_READ | PROT_EXEC | PROT_NOSYSCALL);
	mprotect(p + PAGE, PAGE, PROT_READ | PROT_EXEC);
	r = edge();
	tap_ok(r == 77 && trap_count == 4, "syscall in the last 2 bytes of a NOSYSCALL page traps");
	/* And the other way round: the IP after it lies in a NOSYSCALL page. */
	mprotect(p, PAGE, PROT_READ | PROT_EXEC);
	mprotect(p + PAGE, PAGE, PROT_READ | PROT_EXEC | PROT_NOSYSCALL);
	r = edge();
	tap_ok(r == pid && trap_count == 4, "syscall before a NOSYSCALL page runs natively (IP - 2 decides)");

	fn = (long (*)(void))mmap(NULL, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC | PROT_NOSYSCALL,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	place((unsigned char *)fn);
	r = fn();
	tap_ok(r == 77 && trap_count == 5, "mmap(PROT_NOSYSCALL) traps too");
	r = syscall(SYS_pkey_mprotect, (void *)fn, PAGE, PROT_READ | PROT_EXEC, -1);
	tap_ok(r == 0 && fn() == pid && trap_count == 5, "pkey_mprotect without it runs natively");
	return tap_done();
}
