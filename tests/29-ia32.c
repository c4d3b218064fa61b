// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A 32-bit process (gcc -m32) under PER_WINE, built and run by
 * tests/29-ia32.sh: the selector and PROT_NOSYSCALL both, through
 * glibc's vDSO entry (__kernel_vsyscall: SYSCALL on AMD, SYSENTER on
 * Intel), int $0x80 and a SYSCALL of its own.  Traps report
 * AUDIT_ARCH_I386 and the i386 number.  Standalone: libperwine and
 * tests/tap.h are 64-bit only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef __i386__
#error "build with -m32"
#endif

/* The uapi values (ABI v1); the kernel headers of the build host may predate them. */
#define PR_WINE_DISPATCH	0x57494e45
#define PR_WINE_DISPATCH_ON	1
#define PER_WINE		0x0011
#define PERWINE_NATIVE		0
#define PERWINE_TRAP		1
#define PERWINE_TRAP_SELECTOR	1
#define PERWINE_TRAP_VMA	2
#define PROT_NOSYSCALL		0x40
#define SYS_USER_DISPATCH	2
#define I386_GETPID		20

int personality(unsigned long persona);

static int count, failures;

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	failures += !cond;
}

static volatile uint8_t sel;
static volatile int traps;
static siginfo_t info;

static void on_sigsys(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	sel = PERWINE_NATIVE;
	info = *si;
	traps++;
	uc->uc_mcontext.gregs[REG_EAX] = 42;
}

static int trapped(int why, int nr)
{
	return info.si_code == SYS_USER_DISPATCH && info.si_errno == why &&
	       info.si_arch == AUDIT_ARCH_I386 && info.si_syscall == nr;
}

/* A page of 32-bit code, ordinary or PROT_NOSYSCALL. */
static void *code_page(const unsigned char *code, size_t len, int nosys)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, code, len);
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC | (nosys ? PROT_NOSYSCALL : 0)))
		return NULL;
	return p;
}

/* mov $20, %eax; int $0x80; ret */
static const unsigned char int80[] = { 0xb8, I386_GETPID, 0, 0, 0, 0xcd, 0x80, 0xc3 };

/*
 * __kernel_vsyscall's own sequence around a SYSCALL of this page: the
 * kernel returns to the vDSO's landing pad, which pops the three words
 * and returns to the caller.
 * push %ecx; push %edx; push %ebp; mov %ecx, %ebp; mov $20, %eax; syscall; ud2
 */
static const unsigned char fast[] = { 0x51, 0x52, 0x55, 0x89, 0xcd, 0xb8, I386_GETPID, 0, 0, 0,
				       0x0f, 0x05, 0x0f, 0x0b };

static sigjmp_buf ill_env;

static void on_sigill(int sig)
{
	siglongjmp(ill_env, sig);
}

/* The CPU vendor: Intel's enter the kernel by SYSENTER from the vDSO. */
static int intel(void)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");
	int yes = 0;

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "vendor_id", 9) == 0) {
			yes = strstr(line, "GenuineIntel") != NULL;
			break;
		}
	if (f)
		fclose(f);
	return yes;
}

int main(void)
{
	struct sigaction sa;
	int (*plain80)(void), (*nosys80)(void), (*nosysfast)(void), (*plainfast)(void);
	int r, pid = getpid(), ppid = getppid();

	if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, (unsigned long)&sel, 0, 0)) {
		printf("1..0 # SKIP kernel without PER_WINE dispatch (%s)\n", strerror(errno));
		return getenv("PERWINE_REQUIRE") ? 1 : 0;
	}
	printf("1..8\n# CPU vendor: %s\n", intel() ? "Intel (vDSO uses SYSENTER)" : "not Intel (vDSO uses SYSCALL)");
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
	signal(SIGILL, on_sigill);
	personality(PER_WINE);
	ok((personality(0xffffffff) & 0xff) == PER_WINE, "a 32-bit process takes the PER_WINE personality");

	/* Through glibc: syscall() goes through the vDSO's fast entry. */
	sel = PERWINE_TRAP;
	r = syscall(SYS_getpid);
	ok(r == 42 && traps == 1 && trapped(PERWINE_TRAP_SELECTOR, I386_GETPID),
	   "glibc's syscall(SYS_getpid) at TRAP: traps as i386 getpid and returns through the vDSO (%d, arch %#x)",
	   r, info.si_arch);
	ok(getpid() == pid && traps == 1, "at NATIVE glibc's syscalls run natively");

	plain80 = code_page(int80, sizeof(int80), 0);
	nosys80 = code_page(int80, sizeof(int80), 1);
	nosysfast = code_page(fast, sizeof(fast), 1);
	plainfast = code_page(fast, sizeof(fast), 0);
	if (!plain80 || !nosys80 || !nosysfast || !plainfast) {
		printf("Bail out! mmap/mprotect: %s\n", strerror(errno));
		return 1;
	}
	sel = PERWINE_TRAP;
	r = plain80();
	ok(r == 42 && traps == 2 && trapped(PERWINE_TRAP_SELECTOR, I386_GETPID) &&
	   info.si_call_addr == (char *)plain80 + 7,
	   "int $0x80 at TRAP: traps with the address after it (%p)", info.si_call_addr);
	r = nosys80();
	ok(r == 42 && traps == 3 && trapped(PERWINE_TRAP_VMA, I386_GETPID),
	   "int $0x80 in a NOSYSCALL page at NATIVE: traps (errno %d)", info.si_errno);

	r = sigsetjmp(ill_env, 1) ? -SIGILL : nosysfast();
	ok(r == -SIGILL || (r == 42 && traps == 4 && trapped(PERWINE_TRAP_VMA, I386_GETPID)),
	   "SYSCALL in a NOSYSCALL page: %s (%d, errno %d)",
	   r == -SIGILL ? "the CPU refuses it" : "traps, decided from where it came", r, info.si_errno);
	r = sigsetjmp(ill_env, 1) ? -SIGILL : plainfast();
	ok(r == -SIGILL || r == pid, "SYSCALL in an ordinary page, a NOSYSCALL page elsewhere: %s (%d)",
	   r == -SIGILL ? "the CPU refuses it" : "native", r);

	/* glibc's vDSO entry with a NOSYSCALL page present. */
	traps = 0;
	r = getppid();
	if (intel())
		ok(r == 42 && traps == 1 && trapped(PERWINE_TRAP_VMA, 64),
		   "Intel: glibc's getppid() by SYSENTER traps while a NOSYSCALL page exists (%d)", r);
	else
		ok(r == ppid && traps == 0,
		   "glibc's getppid() by the vDSO's SYSCALL runs natively beside a NOSYSCALL page (%d)", r);
	return failures ? 1 : 0;
}
