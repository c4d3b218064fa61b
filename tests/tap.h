/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Small TAP and process helpers shared by the C tests.  Every check is a
 * TAP test point; a test program exits 1 when any point failed.
 */
#ifndef PERWINE_TESTS_TAP_H
#define PERWINE_TESTS_TAP_H

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <linux/audit.h>

#include "perwine.h"

static int tap_count, tap_failures;

static inline void tap_plan(int n)
{
	printf("1..%d\n", n);
	fflush(stdout);
}

static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!cond)
		tap_failures++;
	return cond;
}

/*
 * A test point that could not be checked here, with the reason: "ok N -
 * ... # SKIP why".  The TAP driver counts it as a skip, never as a pass
 * (and in the guest a skip fails the run).
 */
static inline void tap_skip(const char *why, const char *fmt, ...)
{
	va_list ap;

	printf("ok %d - ", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP %s\n", why);
	fflush(stdout);
}

static inline int tap_done(void)
{
	return tap_failures ? 1 : 0;
}

/* Stop the whole program: the harness reports it as an error. */
static inline void tap_bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	exit(1);
}

/*
 * The value of FIELD ("VmFlags", "ProtectionKey") in the smaps entry
 * that holds ADDR.  A negative check ("no ns flag") must not pass
 * because smaps or the entry is missing: both bail out.
 */
static inline void smaps_field(const void *addr, const char *field, char *buf, size_t size)
{
	unsigned long a = (unsigned long)addr, lo, hi;
	size_t n = strlen(field);
	char line[512];
	int inside = 0;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		tap_bail("cannot open /proc/self/smaps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			inside = lo <= a && a < hi;
		} else if (inside && strncmp(line, field, n) == 0 && line[n] == ':') {
			const char *value = line + n + 1;
			size_t len = strcspn(value, "\n");

			len = len < size ? len : size - 1;
			memcpy(buf, value, len);
			buf[len] = '\0';
			fclose(f);
			return;
		}
	}
	fclose(f);
	tap_bail("no %s line for %p in /proc/self/smaps", field, addr);
}

/* Does the VmFlags list of FLAGS hold the two-letter FLAG? */
static inline int vmflags_has(const char *flags, const char *flag)
{
	size_t n = strlen(flag);

	for (const char *p = flags; (p = strstr(p, flag)) != NULL; p += n)
		if ((p == flags || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
	return 0;
}

/* Does the mapping that holds ADDR have VmFlags FLAG ("ns")? */
static inline int smaps_has_flag(const void *addr, const char *flag)
{
	char flags[256];

	smaps_field(addr, "VmFlags", flags, sizeof(flags));
	return vmflags_has(flags, flag);
}

/* How many mappings of this process have VmFlags FLAG. */
static inline int smaps_count_flag(const char *flag)
{
	char line[512];
	int count = 0, entries = 0;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		tap_bail("cannot open /proc/self/smaps: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "VmFlags:", 8) != 0)
			continue;
		entries++;
		line[strcspn(line, "\n")] = '\0';
		count += vmflags_has(line + 8, flag);
	}
	fclose(f);
	if (!entries)
		tap_bail("/proc/self/smaps has no VmFlags lines");
	return count;
}

/*
 * A "NAME:  N kB" line of /proc/self/status ("VmNoSys"), in kB.  A
 * missing line bails out: a check that it stays 0 must not pass on a
 * kernel that does not have it.
 */
static inline long status_kb(const char *name)
{
	size_t n = strlen(name);
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		tap_bail("cannot open /proc/self/status: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, name, n) == 0 && line[n] == ':' &&
		    sscanf(line + n + 1, "%ld kB", &kb) == 1)
			break;
	fclose(f);
	if (kb < 0)
		tap_bail("no %s line in /proc/self/status", name);
	return kb;
}

/*
 * The PerWine: line of a status file (/proc/PID/status, or a task's),
 * without its tag and its newline; "" when the file or the line is
 * missing.
 */
static inline void perwine_status_line(const char *path, char *out, size_t size)
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

/* PR_WINE_DISPATCH_GET of the calling thread: 0 or -errno. */
static inline int get_config(struct perwine_config *cfg)
{
	memset(cfg, 0xff, sizeof(*cfg));
	return prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, cfg, sizeof(*cfg), 0) ? -errno : 0;
}

/*
 * Skip the whole program (reported, not passed), as on a distribution's
 * build daemon with a stock kernel; where perwine must be there (the
 * guest sets PERWINE_REQUIRE=1) that is a failure instead.
 */
static inline void tap_skip_all(const char *why)
{
	if (getenv("PERWINE_REQUIRE")) {
		printf("1..1\nnot ok 1 - %s (PERWINE_REQUIRE is set)\n", why);
		exit(1);
	}
	printf("1..0 # SKIP %s\n", why);
	exit(0);
}

static inline void tap_require_perwine(void)
{
	struct perwine_config cfg;
	char why[128];

	if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, &cfg, sizeof(cfg), 0) != 0) {
		snprintf(why, sizeof(why), "kernel without PER_WINE dispatch (%s)", strerror(errno));
		tap_skip_all(why);
	}
}

/* The same for ABI v2 (PR_WINE_DISPATCH_SET): SET with all zero is OFF. */
static inline void tap_require_perwine_v2(void)
{
	struct perwine_config off;

	tap_require_perwine();
	memset(&off, 0, sizeof(off));
	if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, &off, sizeof(off), 0) != 0)
		tap_skip_all("kernel without PR_WINE_DISPATCH_SET (ABI v2)");
}

/* Run fn in a forked child; returns its wait status. */
static inline int run_child(void (*fn)(void))
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		alarm(20);	/* a hang fails the test instead of the run */
		fn();
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/*
 * run_child() for children that use SIGALRM themselves: the deadline is
 * kept by the parent.  A child still running after SECONDS seconds is
 * killed with SIGKILL and *hung set (else cleared), so that one hang
 * fails the points of one case instead of stopping the whole run.
 * Returns the wait status, or -1.
 */
static inline int run_child_timeout(void (*fn)(void), unsigned int seconds, int *hung)
{
	struct timespec now, end, nap = { 0, 1000000 };
	pid_t pid, w;
	int status;

	*hung = 0;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		fn();
		_exit(0);
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += seconds;
	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			return status;
		if (w < 0 && errno != EINTR)
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			break;
		nanosleep(&nap, NULL);
		if (nap.tv_nsec < 50000000)	/* 1 ms, doubling up to 64 ms */
			nap.tv_nsec *= 2;
	}
	*hung = 1;
	kill(pid, SIGKILL);
	return waitpid(pid, &status, 0) == pid ? status : -1;
}

/* PAGES zeroed pages of fresh anonymous memory (never the stack's bytes). */
static inline unsigned char *zeroed_pages(size_t pages)
{
	void *p = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		tap_bail("mmap of %zu zeroed pages: %s", pages, strerror(errno));
	return p;
}

/*
 * Fork a tracee running fn, which starts with PTRACE_TRACEME and
 * raise(SIGSTOP); returns its pid once it has stopped.
 */
static inline pid_t start_tracee(void (*fn)(void))
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		alarm(20);
		fn();
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
		tap_bail("the tracee did not stop");
	return pid;
}

static inline int killed_by(int status, int sig)
{
	return status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == sig;
}

static inline int exited_with(int status, int code)
{
	return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

/*
 * test_syscall(nr, a1, a2, a3): a raw syscall instruction at a known
 * address; test_syscall_ret is the address right after it (si_call_addr).
 */
long test_syscall(long nr, long a1, long a2, long a3);
extern const char test_syscall_ret[];
__asm__(".text\n"
	".globl test_syscall\n"
	".type test_syscall, @function\n"
	"test_syscall:\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	mov %rdx, %rsi\n"
	"	mov %rcx, %rdx\n"
	"	syscall\n"
	".globl test_syscall_ret\n"
	"test_syscall_ret:\n"
	"	ret\n"
	".size test_syscall, . - test_syscall\n");

/* The same with six arguments, for the dispatcher's argument registers. */
long test_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6);
extern const char test_syscall6_ret[];
__asm__(".text\n"
	".globl test_syscall6\n"
	".type test_syscall6, @function\n"
	"test_syscall6:\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	mov %rdx, %rsi\n"
	"	mov %rcx, %rdx\n"
	"	mov %r8, %r10\n"
	"	mov %r9, %r8\n"
	"	mov 8(%rsp), %r9\n"
	"	syscall\n"
	".globl test_syscall6_ret\n"
	"test_syscall6_ret:\n"
	"	ret\n"
	".size test_syscall6, . - test_syscall6\n");

static inline int dispatch_on(volatile uint8_t *sel, unsigned long start, unsigned long len)
{
	return prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, (unsigned long)sel, start, len);
}

static inline int set_perwine(int on)
{
	return personality(on ? PERWINE_PER_WINE : PER_LINUX);
}

/*
 * A SIGSYS handler that records what it got, makes the trapped call
 * return trap_return and sets the selector back to native, so that the
 * handler's own sigreturn and the test's next libc call run natively.
 */
static volatile uint8_t test_sel;
static siginfo_t trap_info;
static volatile int trap_count;
static long trap_return = 42;

static void record_sigsys(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	test_sel = PERWINE_NATIVE;
	trap_info = *si;
	trap_count++;
	uc->uc_mcontext.gregs[REG_RAX] = trap_return;
}

static inline void install_sigsys(void (*handler)(int, siginfo_t *, void *))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
}

static inline void install_recorder(void)
{
	install_sigsys(record_sigsys);
}

/* One trapped raw syscall: selector TRAP, call, handler resets it. */
static inline long trapped_call(long nr, long a1, long a2, long a3)
{
	test_sel = PERWINE_TRAP;
	return test_syscall(nr, a1, a2, a3);
}

#endif
