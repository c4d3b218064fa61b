// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ABI v2 "For distributions and checkpoint/restore": the sysctl
 * kernel.perwine_dispatch, PTRACE_GET/SET_PERWINE_CONFIG on a stopped
 * tracee, and the PerWine: line of /proc/PID/status.
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

/* The PerWine: line of a status file, without its tag; "" if none. */
static void status_line(const char *path, char *out, size_t size)
{
	char line[512];
	FILE *f = fopen(path, "re");

	out[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "PerWine:\t", 9) == 0) {
			size_t n = strcspn(line + 9, "\n");

			n = n < size ? n : size - 1;
			memcpy(out, line + 9, n);
			out[n] = 0;
		}
	fclose(f);
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
	int status;
	pid_t pid;
	long r;

	tap_require_perwine_v2();
	if (sysctl_read() < 0)
		tap_skip_all("no " SYSCTL " (a kernel without patch 0017)");
	if (geteuid() != 0)
		tap_skip_all("the sysctl checks need root");
	atexit(sysctl_restore);
	tap_plan(23);

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
	tap_ok(ptrace_cfg(PTRACE_SET_PERWINE_CONFIG, pid, 2 * 4096, &cfg) == -E2BIG,
	       "PTRACE_SET with a size above the page size: E2BIG");
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
	return tap_done();
}
