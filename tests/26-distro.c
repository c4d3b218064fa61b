// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ABI v2 "For distributions and checkpoint/restore": the sysctl
 * kernel.perwine_dispatch, PTRACE_GET/SET_PERWINE_CONFIG on a stopped
 * tracee, and the PerWine: line of /proc/PID/status.  While the sysctl
 * is 0 every ON and SET on the system fails with EPERM: make check runs
 * this test alone, after all others but 99-audit (tests/Makefile.inc).
 */
#include <fcntl.h>
#include <sys/ptrace.h>
#include "tap.h"

#define SYSCTL "/proc/sys/kernel/perwine_dispatch"

static int sysctl_write(const char *value)
{
	int fd = open(SYSCTL, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, value, strlen(value));
	n = n < 0 ? -errno : 0;
	close(fd);
	return n;
}

static int sysctl_read(void)
{
	char buf[16] = "";
	int fd = open(SYSCTL, O_RDONLY);

	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = '?';
	if (fd >= 0)
		close(fd);
	return buf[0] == '0' || buf[0] == '1' ? buf[0] - '0' : -1;
}

/* Whatever happens, the system is left with the feature on. */
static void sysctl_restore(void)
{
	sysctl_write("1");
}

/*
 * The PerWine: line of a status file, without its tag and without its
 * last field, lookups= (a count this test does not follow: 33-status
 * does); "" if none.
 */
static void status_line(const char *path, char *out, size_t size)
{
	char *lookups;

	perwine_status_line(path, out, size);
	lookups = strstr(out, " lookups=");
	if (lookups)
		*lookups = 0;
}

static long set_cfg(const struct perwine_config *cfg)
{
	return prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, cfg, sizeof(*cfg), 0) ? -errno : 0;
}

static long ptrace_cfg(long req, pid_t pid, unsigned long size, void *data)
{
	return ptrace(req, pid, (void *)size, data) ? -errno : 0;
}

static volatile uint8_t child_sel, other_sel;

/* The tracee: configured, stopped, then checks what the tracer set. */
static void tracee(void)
{
	struct perwine_config cfg = {
		.selector = (uintptr_t)&child_sel,
		.start = 0x10000,
		.len = 0x2000,
		.flags = PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE,
	};

	if (set_cfg(&cfg) || ptrace(PTRACE_TRACEME, 0, 0, 0))
		_exit(10);
	raise(SIGSTOP);
	/* Resumed: the tracer set other_sel, 0x30000 + 0x1000, ON. */
	if (get_config(&cfg))
		_exit(11);
	_exit(cfg.selector == (uintptr_t)&other_sel && cfg.start == 0x30000 &&
	      cfg.len == 0x1000 && cfg.flags == PERWINE_FLAG_ON ? 0 : 12);
}

/*
 * A tracee with nothing set, whose tracer may PTRACE_SET its own
 * selector (test_sel, at the same address in the child) and then
 * PTRACE_DETACH it: it goes PER_WINE, stores TRAP and makes a raw
 * getppid().  Exit 0: it trapped by the selector (the recorder's 42),
 * 1: it ran natively, anything else: neither.
 */
static void enforced_tracee(void)
{
	long r, native;

	install_recorder();
	test_sel = PERWINE_NATIVE;
	native = getppid();
	if (ptrace(PTRACE_TRACEME, 0, 0, 0))
		_exit(10);
	raise(SIGSTOP);
	/* Detached: whatever the tracer set, or nothing. */
	if (set_perwine(1) < 0)
		_exit(11);
	trap_count = 0;
	memset(&trap_info, 0, sizeof(trap_info));
	r = trapped_call(SYS_getppid, 0, 0, 0);
	test_sel = PERWINE_NATIVE;	/* untrapped, the recorder did not */
	set_perwine(0);
	if (trap_count == 1 && r == trap_return && trap_info.si_code == SYS_USER_DISPATCH &&
	    trap_info.si_errno == PERWINE_TRAP_SELECTOR && trap_info.si_syscall == SYS_getppid)
		_exit(0);
	_exit(trap_count == 0 && r == native ? 1 : 12);
}

/* The stopped tracee's configuration is all zero (OFF, nothing set). */
static int tracee_off(pid_t pid)
{
	struct perwine_config cfg;

	memset(&cfg, 0xff, sizeof(cfg));
	return ptrace_cfg(PTRACE_GET_PERWINE_CONFIG, pid, sizeof(cfg), &cfg) == 0 && cfg.selector == 0 &&
	       cfg.start == 0 && cfg.len == 0 && cfg.flags == 0 && cfg.reserved == 0;
}

/* Turn the stopped tracee's configuration off again (SET, all zero). */
static long tracee_set_off(pid_t pid)
{
	struct perwine_config off;

	memset(&off, 0, sizeof(off));
	return ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, sizeof(off), &off);
}

/*
 * One PTRACE_SET that must fail with ERR (BAD, BAD_SIZE bytes) and leave
 * the tracee as it was (nothing set), and its control, the same call
 * without the fault (GOOD, GOOD_SIZE), which must succeed; the tracee is
 * left with nothing set.  Returns 1 when all that held; *bad_r and
 * *good_r get the two results.
 */
static int set_error_case(pid_t pid, const void *bad, unsigned long bad_size, long err,
			  const void *good, unsigned long good_size, long *bad_r, long *good_r)
{
	int unchanged, good_set, cleared;

	*bad_r = ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, bad_size, (void *)bad);
	unchanged = tracee_off(pid);
	*good_r = ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, good_size, (void *)good);
	good_set = !tracee_off(pid);
	/* Always clear, so that one failing case does not fail the next. */
	cleared = tracee_set_off(pid) == 0 && tracee_off(pid);
	return *bad_r == err && unchanged && *good_r == 0 && good_set && cleared;
}

int main(void)
{
	struct perwine_config cfg, on = {
		.selector = (uintptr_t)&test_sel,
		.flags = PERWINE_FLAG_ON,
	};
	struct {
		struct perwine_config cfg;
		uint64_t tail[2];
	} big;
	char line[256], want[256], path[64];
	unsigned char *page;
	int status;
	pid_t pid;
	long r;

	tap_require_perwine_v2();
	if (sysctl_read() < 0)
		tap_skip_all("no " SYSCTL " (a kernel without the sysctl patch)");
	if (geteuid() != 0)
		tap_skip_all("the sysctl checks need root");
	atexit(sysctl_restore);
	tap_plan(31);

	/* /proc/PID/status */
	status_line("/proc/thread-self/status", line, sizeof(line));
	tap_ok(strcmp(line, "off selector=0x0 start=0x0 len=0x0 flags=0x0") == 0,
	       "status of a thread with nothing set: 'off selector=0x0 start=0x0 len=0x0 flags=0x0' ('%s')", line);
	cfg = on;
	cfg.start = 0x40000;
	cfg.len = 0x3000;
	cfg.flags |= PERWINE_FLAG_SIGNAL_NATIVE;
	test_sel = PERWINE_NATIVE;
	if (set_cfg(&cfg) || set_perwine(1) < 0)
		tap_bail("cannot configure this thread: %s", strerror(errno));
	status_line("/proc/thread-self/status", line, sizeof(line));
	snprintf(want, sizeof(want), "on selector=%#lx start=0x40000 len=0x3000 flags=0x3",
		 (unsigned long)&test_sel);
	tap_ok(strcmp(line, want) == 0, "status in PER_WINE: '%s' ('%s')", want, line);
	set_perwine(0);
	status_line("/proc/thread-self/status", line, sizeof(line));
	snprintf(want, sizeof(want), "off selector=%#lx start=0x40000 len=0x3000 flags=0x3",
		 (unsigned long)&test_sel);
	tap_ok(strcmp(line, want) == 0, "status after PER_LINUX: off, the configuration kept ('%s')", line);
	prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);
	status_line("/proc/thread-self/status", line, sizeof(line));
	tap_ok(strcmp(line, "off selector=0x0 start=0x0 len=0x0 flags=0x0") == 0,
	       "status after OFF: all clear ('%s')", line);

	/* kernel.perwine_dispatch */
	tap_ok(sysctl_read() == 1, "kernel.perwine_dispatch is 1 by default");
	tap_ok(sysctl_write("2") == -EINVAL && sysctl_write("-1") == -EINVAL,
	       "kernel.perwine_dispatch takes only 0 and 1 (2, -1: EINVAL)");
	/* A configuration that is on before the switch. */
	install_recorder();
	if (dispatch_on(&test_sel, 0, 0) || set_perwine(1) < 0)
		tap_bail("cannot turn dispatch on: %s", strerror(errno));
	tap_ok(sysctl_write("0") == 0 && sysctl_read() == 0, "kernel.perwine_dispatch set to 0");
	trap_count = 0;
	r = trapped_call(SYS_getppid, 0, 0, 0);
	tap_ok(trap_count == 1 && r == trap_return,
	       "with 0, a configuration that was on still traps (%d trap, returned %ld)", trap_count, r);
	set_perwine(0);
	tap_ok(get_config(&cfg) == 0 && cfg.selector == (uintptr_t)&test_sel,
	       "with 0, GET works and reports the configuration");
	errno = 0;
	r = dispatch_on(&test_sel, 0, 0) == -1 ? -errno : 0;
	tap_ok(r == -EPERM, "with 0, ON: EPERM (%ld)", r);
	tap_ok(set_cfg(&on) == -EPERM, "with 0, SET with PERWINE_FLAG_ON: EPERM");
	memset(&cfg, 0, sizeof(cfg));
	tap_ok(set_cfg(&cfg) == 0 && get_config(&cfg) == 0 && cfg.flags == 0 && cfg.selector == 0,
	       "with 0, SET without PERWINE_FLAG_ON (OFF) works");
	tap_ok(prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0) == 0, "with 0, OFF works");
	tap_ok(sysctl_write("1") == 0 && dispatch_on(&test_sel, 0, 0) == 0,
	       "back to 1: ON works again");
	prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);

	/* PTRACE_GET/SET_PERWINE_CONFIG */
	pid = start_tracee(tracee);
	memset(&cfg, 0xff, sizeof(cfg));
	r = ptrace_cfg(PTRACE_GET_PERWINE_CONFIG, pid, sizeof(cfg), &cfg);
	tap_ok(r == 0 && cfg.selector == (uintptr_t)&child_sel && cfg.start == 0x10000 &&
	       cfg.len == 0x2000 && cfg.flags == (PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE) &&
	       cfg.reserved == 0, "PTRACE_GET_PERWINE_CONFIG reports the tracee's configuration (%ld)", r);
	memset(&big, 0xff, sizeof(big));
	r = ptrace_cfg(PTRACE_GET_PERWINE_CONFIG, pid, sizeof(big), &big);
	tap_ok(r == 0 && big.tail[0] == 0 && big.tail[1] == 0 && big.cfg.start == 0x10000,
	       "PTRACE_GET with a larger size zero-fills the rest (%ld)", r);
	tap_ok(ptrace_cfg(PTRACE_GET_PERWINE_CONFIG, pid, 31, &cfg) == -EINVAL,
	       "PTRACE_GET with size 31: EINVAL");
	tap_ok(ptrace_cfg(PTRACE_GET_PERWINE_CONFIG, pid, sizeof(cfg), NULL) == -EFAULT,
	       "PTRACE_GET to NULL: EFAULT");
	cfg = (struct perwine_config){ .selector = (uintptr_t)&other_sel, .start = 0x30000,
				       .len = 0x1000, .flags = PERWINE_FLAG_ON, .reserved = 1 };
	tap_ok(ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, sizeof(cfg), &cfg) == -EINVAL,
	       "PTRACE_SET with reserved != 0: EINVAL");
	cfg.reserved = 0;
	/*
	 * Past the page size: a configuration at the start of two zeroed
	 * pages (only the size rule can refuse it; copy_struct_from_user()
	 * would accept the zero tail), and one non-zero byte at a known
	 * offset within the size.  The one accepted here (start 0x20000) is
	 * replaced by the last PTRACE_SET below, whose point reads it back.
	 */
	page = zeroed_pages(2);
	memcpy(page, &cfg, sizeof(cfg));
	((struct perwine_config *)page)->start = 0x20000;
	r = ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, 4096, page);
	tap_ok(r == 0, "PTRACE_SET with a page-size struct and a zero tail: 0 (%ld)", r);
	page[4095] = 1;
	r = ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, 4096, page);
	tap_ok(r == -E2BIG, "PTRACE_SET with a non-zero byte at offset 4095 of a page-size struct: E2BIG (%ld)", r);
	page[4095] = 0;
	r = ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, 4097, page);
	tap_ok(r == -E2BIG, "PTRACE_SET with size 4097 (above the page size) and a zero tail: E2BIG (%ld)", r);
	munmap(page, 2 * 4096);
	sysctl_write("0");
	r = ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, sizeof(cfg), &cfg);
	sysctl_write("1");
	tap_ok(r == -EPERM, "PTRACE_SET with kernel.perwine_dispatch 0: EPERM (%ld)", r);
	r = ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, sizeof(cfg), &cfg);
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	status_line(path, line, sizeof(line));
	snprintf(want, sizeof(want), "off selector=%#lx start=0x30000 len=0x1000 flags=0x1",
		 (unsigned long)&other_sel);
	tap_ok(r == 0 && strcmp(line, want) == 0,
	       "PTRACE_SET sets the tracee's configuration, its status says so ('%s')", line);
	ptrace(PTRACE_CONT, pid, 0, 0);
	if (waitpid(pid, &status, 0) != pid)
		status = -1;
	tap_ok(exited_with(status, 0), "the tracee's own GET sees what the tracer set (exit %d)",
	       status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1);

	/*
	 * The errors of PTRACE_SET that it shares with SET, each with its
	 * control: the same call without the fault is accepted.  The
	 * tracee starts with nothing set (its parent has nothing on now) and
	 * each failed call must leave it so.
	 */
	{
		struct perwine_config good = { .selector = (uintptr_t)&test_sel, .flags = PERWINE_FLAG_ON },
				      bad, known;
		unsigned char buf_big[sizeof(struct perwine_config) + 8], good_big[sizeof(struct perwine_config) + 8];
		long bad_r, good_r, bad2_r;
		pid_t pid2;
		int good_ok, case_ok, status2;

		pid = start_tracee(enforced_tracee);
		if (!tracee_off(pid))
			tap_bail("the new tracee has a configuration already");

		known = good;
		/* Known flags; ACTIVATE and REDIRECT have tests of their own (35, 36). */
		known.flags = PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE;
		bad = known;
		bad.flags |= 0x10;		/* the first unknown bit */
		case_ok = set_error_case(pid, &bad, sizeof(bad), -EINVAL, &known, sizeof(known), &bad_r, &good_r);
		bad.flags = PERWINE_FLAG_ON | 0x80000000u;
		bad2_r = ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, sizeof(bad), &bad);
		tap_ok(case_ok && bad2_r == -EINVAL && tracee_off(pid),
		       "PTRACE_SET with an unknown flag bit (0x10: %ld, 0x80000000: %ld): EINVAL, nothing set; "
		       "with the known ones: 0 (%ld)", bad_r, bad2_r, good_r);

		bad2_r = ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, 0, &good);
		case_ok = set_error_case(pid, &good, 31, -EINVAL, &good, 32, &bad_r, &good_r);
		tap_ok(case_ok && bad2_r == -EINVAL && tracee_off(pid),
		       "PTRACE_SET with size 31 (%ld) or 0 (%ld): EINVAL, nothing set; with 32: 0 (%ld)",
		       bad_r, bad2_r, good_r);

		bad = good;
		bad.start = 0xfffffffffffff000ull;	/* start + len wraps to 0 */
		bad.len = 0x1000;
		good.start = 0xffffffffffffe000ull;	/* ends at 0xfffffffffffff000: no overflow */
		good.len = 0x1000;
		case_ok = set_error_case(pid, &bad, sizeof(bad), -EINVAL, &good, sizeof(good), &bad_r, &good_r);
		tap_ok(case_ok,
		       "PTRACE_SET with start + len overflowing (%#llx + %#llx): EINVAL (%ld), nothing set; "
		       "a range that ends below 2^64: 0 (%ld)", (unsigned long long)bad.start,
		       (unsigned long long)bad.len, bad_r, good_r);
		good.start = good.len = 0;

		bad = good;
		bad.selector = 0xffff800000000000ull;	/* kernel space: fails access_ok() */
		case_ok = set_error_case(pid, &bad, sizeof(bad), -EFAULT, &good, sizeof(good), &bad_r, &good_r);
		tap_ok(case_ok,
		       "PTRACE_SET with a selector that fails access_ok() (%#llx): EFAULT (%ld), nothing set; "
		       "the tracee's own: 0 (%ld)", (unsigned long long)bad.selector, bad_r, good_r);

		/* The struct, then 8 bytes this kernel does not know. */
		memset(good_big, 0, sizeof(good_big));
		memcpy(good_big, &good, sizeof(good));
		memcpy(buf_big, good_big, sizeof(buf_big));
		buf_big[sizeof(good)] = 1;
		case_ok = set_error_case(pid, buf_big, sizeof(buf_big), -E2BIG, good_big, sizeof(good_big), &bad_r,
					 &good_r);
		buf_big[sizeof(good)] = 0;
		buf_big[sizeof(buf_big) - 1] = 0x80;
		bad2_r = ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, sizeof(buf_big), buf_big);
		tap_ok(case_ok && bad2_r == -E2BIG && tracee_off(pid),
		       "PTRACE_SET with size %zu and a non-zero byte at offset %zu (%ld) or %zu (%ld): E2BIG, "
		       "nothing set; with a zero tail: 0 (%ld)", sizeof(buf_big), sizeof(good), bad_r,
		       sizeof(buf_big) - 1, bad2_r, good_r);

		/*
		 * A configuration set by the tracer is enforced once the tracee
		 * runs: its own selector at TRAP traps.  The control, another
		 * tracee that the tracer only detaches, runs natively.
		 */
		r = ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, sizeof(good), &good);
		memset(&cfg, 0xff, sizeof(cfg));
		if (r == 0 && ptrace_cfg(PTRACE_GET_PERWINE_CONFIG, pid, sizeof(cfg), &cfg) == 0 &&
		    cfg.selector != (uintptr_t)&test_sel)
			r = -EIO;
		ptrace(PTRACE_DETACH, pid, 0, 0);
		if (waitpid(pid, &status, 0) != pid)
			status = -1;
		pid2 = start_tracee(enforced_tracee);
		good_ok = tracee_off(pid2);
		ptrace(PTRACE_DETACH, pid2, 0, 0);
		if (waitpid(pid2, &status2, 0) != pid2)
			status2 = -1;
		tap_ok(r == 0 && exited_with(status, 0) && good_ok && exited_with(status2, 1),
		       "a configuration set by PTRACE_SET is enforced after PTRACE_DETACH: the tracee's raw "
		       "syscall at TRAP traps with si_errno PERWINE_TRAP_SELECTOR (SET %ld, exit %d); "
		       "without the SET (nothing set: %d) it runs natively (exit %d)", r,
		       status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1, good_ok,
		       status2 != -1 && WIFEXITED(status2) ? WEXITSTATUS(status2) : -1);
	}
	return tap_done();
}
