// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * PROT_NOSYSCALL next to the rest of mm (ABI v2, "Exact NOSYSCALL
 * bookkeeping"): PROT_EXEC | PROT_NOSYSCALL gets the execute-only
 * protection key as PROT_EXEC does, remap_file_pages() keeps it, the
 * count of NOSYSCALL pages (VmNoSys: in /proc/PID/status) is exact and a
 * failed mmap(), mprotect() or pkey_mprotect() changes nothing; and a
 * PTRACE_SYSCALL tracer gets no syscall stop for a trapped syscall.
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include "tap.h"

#define PAGE 4096

/* mov $SYS_getpid, %eax; syscall; ret */
static const unsigned char getpid_code[] = { 0xb8, SYS_getpid, 0, 0, 0, 0x0f, 0x05, 0xc3 };

static int pkey_of(const void *addr)
{
	char buf[64];

	smaps_field(addr, "ProtectionKey", buf, sizeof(buf));
	return atoi(buf);
}

static const volatile unsigned char *read_at;

static void read_page(void)
{
	(void)*read_at;
}

/* Execute-only: the kernel gives PROT_EXEC alone a protection key that denies reads. */
static void test_exec_only(void)
{
	unsigned char *plain = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *nosys = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int kp, kn, sp, sn;
	long r;

	if (plain == MAP_FAILED || nosys == MAP_FAILED)
		tap_bail("mmap");
	memcpy(plain, getpid_code, sizeof(getpid_code));
	memcpy(nosys, getpid_code, sizeof(getpid_code));
	if (mprotect(plain, PAGE, PROT_EXEC) || mprotect(nosys, PAGE, PROT_EXEC | PROT_NOSYSCALL))
		tap_bail("mprotect(PROT_EXEC [| PROT_NOSYSCALL]): %s", strerror(errno));
	kp = pkey_of(plain);
	kn = pkey_of(nosys);
	tap_ok(kp != 0 && kn == kp && smaps_has_flag(nosys, "ns"),
	       "PROT_EXEC | PROT_NOSYSCALL gets PROT_EXEC's execute-only key (%d, %d)", kn, kp);
	read_at = plain;
	sp = run_child(read_page);
	read_at = nosys;
	sn = run_child(read_page);
	tap_ok(killed_by(sp, SIGSEGV) && killed_by(sn, SIGSEGV),
	       "reading either page is refused (status %#x, %#x)", sn, sp);
	trap_count = 0;
	r = ((long (*)(void))nosys)();
	tap_ok(r == 42 && trap_count == 1 && trap_info.si_errno == PERWINE_TRAP_VMA,
	       "and its syscall still traps (si_errno %d)", trap_info.si_errno);
	munmap(plain, PAGE);
	munmap(nosys, PAGE);
}

/* remap_file_pages() replaces the mapping's pages: the flag must stay. */
static void test_remap_file_pages(void)
{
	int fd = memfd_create("perwine-remap", 0);
	unsigned char page[PAGE], *map;
	long r;

	memset(page, 0xcc, sizeof(page));	/* int3 everywhere but the code */
	memcpy(page, getpid_code, sizeof(getpid_code));
	if (fd < 0 || write(fd, page, PAGE) != PAGE || write(fd, page, PAGE) != PAGE)
		tap_bail("memfd: %s", strerror(errno));
	map = mmap(NULL, 2 * PAGE, PROT_READ | PROT_EXEC | PROT_NOSYSCALL, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		tap_bail("mmap(MAP_SHARED, PROT_NOSYSCALL): %s", strerror(errno));
	/* Page 0 of the mapping shows page 1 of the file, page 1 page 0. */
	r = syscall(SYS_remap_file_pages, map, PAGE, 0, 1, 0);
	tap_ok(r == 0 && smaps_has_flag(map, "ns") && smaps_has_flag(map + PAGE, "ns"),
	       "remap_file_pages() keeps the ns flag on both pages (%ld)", r);
	trap_count = 0;
	r = ((long (*)(void))map)();
	tap_ok(r == 42 && trap_count == 1 && trap_info.si_errno == PERWINE_TRAP_VMA,
	       "and code in the remapped page still traps (%ld)", r);
	munmap(map, 2 * PAGE);
	close(fd);
}

/*
 * The tracee traps getppid() once at TRAP, then calls it natively; a
 * PTRACE_SYSCALL tracer must see the SIGSYS, and a syscall stop for the
 * native getppid only.
 */
static void tracee(void)
{
	if (ptrace(PTRACE_TRACEME, 0, 0, 0))
		_exit(90);
	raise(SIGSTOP);
	trap_count = 0;
	trapped_call(SYS_getppid, 0, 0, 0);
	test_syscall(SYS_getppid, 0, 0, 0);
	_exit(trap_count == 1 ? 0 : 91);
}

static void test_ptrace_syscall(void)
{
	int status, getppid_stops = 0, sigsys = 0, sigsys_before_stop = 0;
	struct user_regs_struct regs;
	pid_t pid;

	pid = start_tracee(tracee);
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL);
	for (int sig = 0;;) {
		if (ptrace(PTRACE_SYSCALL, pid, 0, sig) || waitpid(pid, &status, 0) != pid)
			break;
		sig = 0;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			ptrace(PTRACE_GETREGS, pid, 0, &regs);
			/* Entry and exit stops both show orig_rax: count pairs. */
			if (regs.orig_rax == SYS_getppid)
				getppid_stops++;
		} else {
			sig = WSTOPSIG(status);
			if (sig == SIGSYS) {
				sigsys++;
				sigsys_before_stop = getppid_stops == 0;
			}
		}
	}
	tap_ok(exited_with(status, 0), "the traced tracee ran its trapped and its native getppid (status %#x)",
	       status);
	tap_ok(sigsys == 1 && sigsys_before_stop,
	       "the tracer saw the SIGSYS of the trap, before any getppid stop (%d)", sigsys);
	tap_ok(getppid_stops == 2, "syscall stops for the native getppid only: entry and exit (%d stops)",
	       getppid_stops);
}

/* VmNoSys and the mapping at P after a call that must fail with ERR. */
static void failed_leaves_nothing(long ret, int err, const char *what, const void *p, long kb)
{
	int e = errno;

	tap_ok(ret == -1 && e == err && status_kb("VmNoSys") == kb && !smaps_has_flag(p, "ns"),
	       "%s fails with %s and leaves VmNoSys at %ld kB, no ns (%ld, %s, %ld kB)",
	       what, strerror(err), kb, ret, strerror(e), status_kb("VmNoSys"));
}

/* The exact count, and calls that fail before or while changing anything. */
static void test_exact_count(void)
{
	const int rx = PROT_READ | PROT_EXEC;
	long before = status_kb("VmNoSys");
	unsigned char *p = mmap(NULL, 3 * PAGE, rx | PROT_NOSYSCALL, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *hole = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *big;
	long kb, r;
	int e;

	if (p == MAP_FAILED || hole == MAP_FAILED || munmap(hole, PAGE))
		tap_bail("mmap: %s", strerror(errno));
	kb = status_kb("VmNoSys");
	mprotect(p + 2 * PAGE, PAGE, rx);
	tap_ok(kb == before + 12 && status_kb("VmNoSys") == before + 8,
	       "VmNoSys counts NOSYSCALL pages: +12 kB after mmap, +8 kB after one page is mprotected away (%ld, %ld, %ld)",
	       before, kb, status_kb("VmNoSys"));

	kb = status_kb("VmNoSys");
	failed_leaves_nothing(mprotect(p + 2 * PAGE, PAGE, rx | PROT_NOSYSCALL | 0x80), EINVAL,
			      "mprotect(PROT_NOSYSCALL | 0x80, an unknown bit)", p + 2 * PAGE, kb);
	failed_leaves_nothing(syscall(SYS_pkey_mprotect, p + 2 * PAGE, PAGE, rx | PROT_NOSYSCALL, 15), EINVAL,
			      "pkey_mprotect(PROT_NOSYSCALL) with a key never allocated", p + 2 * PAGE, kb);
	failed_leaves_nothing((long)mmap(p + 2 * PAGE, PAGE, rx | PROT_NOSYSCALL,
					 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0), EEXIST,
			      "mmap(PROT_NOSYSCALL, MAP_FIXED_NOREPLACE) over a mapping", p + 2 * PAGE, kb);
	r = mprotect(hole, PAGE, rx | PROT_NOSYSCALL);
	e = errno;
	tap_ok(r == -1 && e == ENOMEM && status_kb("VmNoSys") == kb,
	       "mprotect(PROT_NOSYSCALL) of unmapped memory fails with ENOMEM, VmNoSys unchanged (%s, %ld kB)",
	       strerror(e), status_kb("VmNoSys"));
	big = mmap(NULL, 1UL << 47, rx | PROT_NOSYSCALL, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	e = errno;
	tap_ok(big == MAP_FAILED && e == ENOMEM && status_kb("VmNoSys") == kb,
	       "mmap(PROT_NOSYSCALL) larger than the address space fails with ENOMEM, VmNoSys unchanged (%s, %ld kB)",
	       strerror(e), status_kb("VmNoSys"));

	munmap(p, 3 * PAGE);
	tap_ok(status_kb("VmNoSys") == before, "munmap() brings VmNoSys back to %ld kB (%ld)",
	       before, status_kb("VmNoSys"));
}

/*
 * Calls that fail after changing something: the count must follow what
 * changed.  mprotect() over [VMA][hole] changes the VMA, then fails with
 * ENOMEM at the hole.
 */
static void test_partial_mprotect(void)
{
	const int rx = PROT_READ | PROT_EXEC;
	unsigned char *p = mmap(NULL, 2 * PAGE, rx, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long before = status_kb("VmNoSys"), r;
	int e;

	if (p == MAP_FAILED || munmap(p + PAGE, PAGE))
		tap_bail("mmap: %s", strerror(errno));
	r = mprotect(p, 2 * PAGE, rx | PROT_NOSYSCALL);
	e = errno;
	tap_ok(r == -1 && e == ENOMEM && smaps_has_flag(p, "ns") && status_kb("VmNoSys") == before + 4,
	       "mprotect(+PROT_NOSYSCALL) over [VMA][hole]: ENOMEM after the VMA got ns, VmNoSys +4 kB (%s, %ld -> %ld)",
	       strerror(e), before, status_kb("VmNoSys"));
	r = mprotect(p, 2 * PAGE, rx);
	e = errno;
	tap_ok(r == -1 && e == ENOMEM && !smaps_has_flag(p, "ns") && status_kb("VmNoSys") == before,
	       "mprotect(-PROT_NOSYSCALL) over [NOSYSCALL VMA][hole]: ENOMEM after the VMA lost ns, VmNoSys back (%s, %ld)",
	       strerror(e), status_kb("VmNoSys"));
	munmap(p, PAGE);
}

/*
 * A split that vm.max_map_count refuses: the process is filled with
 * mappings up to the limit, less one, so the first of the two splits
 * of a middle-page mprotect() succeeds and the second fails.  Nothing
 * else changes the limit, so tests running beside this one are safe.
 */
static void test_split_refused(void)
{
	const int rx = PROT_READ | PROT_EXEC;
	unsigned char *p = mmap(NULL, 3 * PAGE, rx | PROT_NOSYSCALL, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t cap = 1 << 17, n = 0;
	void **fill = calloc(cap, sizeof(*fill));
	long before = status_kb("VmNoSys"), r;
	int e;

	if (p == MAP_FAILED || !fill)
		tap_bail("mmap/calloc: %s", strerror(errno));
	/* Alternating protections: no two fillers merge into one VMA. */
	while (n < cap) {
		fill[n] = mmap(NULL, PAGE, n & 1 ? PROT_READ : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (fill[n] == MAP_FAILED)
			break;
		n++;
	}
	if (n == 0 || n == cap)
		tap_bail("could not reach vm.max_map_count (%zu mappings)", n);
	munmap(fill[--n], PAGE);
	r = mprotect(p + PAGE, PAGE, rx);
	e = errno;
	while (n)
		munmap(fill[--n], PAGE);
	free(fill);
	tap_ok(r == -1 && e == ENOMEM && smaps_has_flag(p + PAGE, "ns") && status_kb("VmNoSys") == before,
	       "a split refused by vm.max_map_count: ENOMEM, the page keeps ns, VmNoSys unchanged (%s, %ld kB)",
	       strerror(e), status_kb("VmNoSys"));
	munmap(p, 3 * PAGE);
}

int main(void)
{
	tap_require_perwine_v2();
	tap_plan(18);
	install_recorder();
	trap_return = 42;
	if (dispatch_on(&test_sel, 0, 0) || set_perwine(1))
		tap_bail("PER_WINE on: %s", strerror(errno));
	test_exec_only();
	test_remap_file_pages();
	test_ptrace_syscall();
	test_exact_count();
	test_partial_mprotect();
	test_split_refused();
	return tap_done();
}
