// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A 32-bit process (gcc -m32) under PER_WINE, built and run by
 * tests/29-ia32.sh: the selector and PROT_NOSYSCALL both, through
 * glibc's vDSO entry (__kernel_vsyscall: SYSCALL on AMD, SYSENTER on
 * Intel), int $0x80 and a SYSCALL of its own.  Traps report
 * AUDIT_ARCH_I386 and the i386 number.  The fast entries (SYSENTER,
 * SYSCALL) are judged at the vDSO's landing pad, where they return:
 * beside NOSYSCALL pages and with an LDT, as in every 32-bit Wine
 * process, glibc's syscalls run natively.  Then PERWINE_FLAG_SIGNAL_NATIVE
 * with ia32 signal frames: SA_SIGINFO frames carry the selector byte
 * in uc_flags, rt_sigreturn refuses one that is neither NATIVE nor TRAP,
 * frames without SA_SIGINFO leave it alone.  Standalone: libperwine and
 * tests/tap.h are 64-bit only.
 */
#define _GNU_SOURCE
#include <asm/ldt.h>
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
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef __i386__
#error "build with -m32"
#endif

/* The uapi values (ABI v1); the kernel headers of the build host may predate them. */
#define PR_WINE_DISPATCH	0x57494e45
#define PR_WINE_DISPATCH_ON	1
#define PR_WINE_DISPATCH_SET	3	/* ABI v2 */
#define PERWINE_FLAG_ON		0x1
#define PERWINE_FLAG_SIGNAL_NATIVE	0x2
#define PERWINE_UC_SELECTOR	0x100	/* uc_flags: the frame carries the byte ... */
#define PERWINE_UC_SELECTOR_SHIFT	16	/* ... in bits 16-23 */
#define PER_WINE		0x0011
#define PERWINE_NATIVE		0
#define PERWINE_TRAP		1
#define PERWINE_TRAP_SELECTOR	1
#define PERWINE_TRAP_VMA	2
#define PROT_NOSYSCALL		0x40
#define SYS_USER_DISPATCH	2
#define I386_GETPID		20
#define I386_MUNMAP		91
#define I386_MODIFY_LDT		123
#define I386_WRITE		4
#define I386_EXIT_GROUP		252
#define I386_TGKILL		270

/* The ABI v2 configuration: the same 32 bytes in a 32-bit process. */
struct perwine_config {
	uint64_t selector;
	uint64_t start;
	uint64_t len;
	uint32_t flags;
	uint32_t reserved;
};
_Static_assert(sizeof(struct perwine_config) == 32, "struct perwine_config is 32 bytes");

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

/* A point this CPU cannot check: a TAP skip with the reason, never a pass. */
static void skip(const char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void skip(const char *why, const char *fmt, ...)
{
	va_list ap;

	printf("ok %d - ", ++count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" # SKIP %s\n", why);
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
 * and returns to the caller.  A native return or a trap that resumed
 * after the SYSCALL instead would hit the ud2.
 * push %ecx; push %edx; push %ebp; mov %ecx, %ebp; mov $20, %eax; syscall; ud2
 */
static const unsigned char fast[] = { 0x51, 0x52, 0x55, 0x89, 0xcd, 0xb8, I386_GETPID, 0, 0, 0,
				       0x0f, 0x05, 0x0f, 0x0b };
#define FAST_SYSCALL_AT 10	/* offset of the SYSCALL */

/* Where a SIGILL came from: its si_addr and the EIP its frame saved. */
static sigjmp_buf ill_env;
static void *volatile ill_addr;
static volatile unsigned long ill_eip;

static void on_sigill(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	ill_addr = si->si_addr;
	ill_eip = (unsigned long)uc->uc_mcontext.gregs[REG_EIP];
	siglongjmp(ill_env, sig);
}

/*
 * Run a fast stub: its result, or -SIGILL.  The CPU refused the SYSCALL
 * (Intel, in 32-bit mode) only when the SIGILL is at the SYSCALL itself
 * and no trap came before it; a SIGILL anywhere else (the ud2 after it)
 * is a kernel that resumed at the wrong place.
 */
static int run_fast(int (*stub)(void), int *refused)
{
	int traps_before = traps;
	void *at = (char *)stub + FAST_SYSCALL_AT;

	ill_addr = NULL;
	ill_eip = 0;
	*refused = 0;
	if (sigsetjmp(ill_env, 1)) {
		*refused = ill_addr == at && ill_eip == (unsigned long)at && traps == traps_before;
		return -SIGILL;
	}
	return stub();
}

/*
 * The 32-bit vDSO's sigreturn landing pad: the address after the int $0x80
 * of __kernel_sigreturn (popl %eax; movl $119, %eax; int $0x80), or 0.
 */
static unsigned long vdso_sigreturn_pad(void)
{
	static const unsigned char seq[] = { 0x58, 0xb8, 119, 0, 0, 0, 0xcd, 0x80 };
	unsigned long start, end, pad = 0;
	char line[256];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (!strstr(line, "[vdso]") || sscanf(line, "%lx-%lx", &start, &end) != 2)
			continue;
		for (; start + sizeof(seq) <= end; start++)
			if (!memcmp((const void *)start, seq, sizeof(seq))) {
				pad = start + sizeof(seq);
				break;
			}
		break;
	}
	if (f)
		fclose(f);
	return pad;
}

/*
 * getpid() by int $0x80 from a code segment of the LDT, entered and left
 * by far jumps through far pointers (under TCG, QEMU 7.2 does the stack
 * accesses of a far call and return as supervisor ones, which SMAP
 * faults): mov $20, %eax; int $0x80; ljmp *far_back.
 */
static struct far_ptr {
	uint32_t off;
	uint16_t sel;
} __attribute__((packed)) far_to, far_back;
static unsigned char getpid_ljmp[] = { 0xb8, I386_GETPID, 0, 0, 0, 0xcd, 0x80, 0xff, 0x2d, 0, 0, 0, 0 };
#define GETPID_LJMP_PTR 9	/* where the code wants &far_back */
#define LDT_SEL(entry) ((entry) << 3 | 4 | 3)	/* TI = LDT, RPL 3 */

/* Run getpid_ljmp at SEL:OFF; EAX when it jumps back. */
static long ldt_getpid(uint16_t sel, uint32_t off)
{
	long r;

	far_to.off = off;
	far_to.sel = sel;
	__asm__ volatile("call 2f\n"
			 "2:\tpop %%ecx\n\t"
			 "lea 1f-2b(%%ecx), %%ecx\n\t"
			 "mov %%ecx, %[back_off]\n\t"
			 "mov %%cs, %%cx\n\t"
			 "mov %%cx, %[back_sel]\n\t"
			 "ljmp *%[to]\n"
			 "1:"
			 : "=a"(r), [back_off] "=m"(far_back.off), [back_sel] "=m"(far_back.sel)
			 : [to] "m"(far_to)
			 : "memory", "ecx", "edx");
	return r;
}

/* A raw int $0x80 from this program's text: exact call site, never through the vDSO. */
static long raw80(long nr, long a, long b, long c)
{
	long r;

	__asm__ volatile("int $0x80" : "=a"(r) : "0"(nr), "b"(a), "c"(b), "d"(c) : "memory");
	return r;
}

/* LDT entry @entry: a 32-bit segment of 4 GiB at @base, by int $0x80; 0 or -1. */
static int ldt_set(unsigned int entry, uint32_t base, unsigned int contents)
{
	struct user_desc d = {
		.entry_number = entry, .base_addr = base, .limit = 0xfffff, .seg_32bit = 1,
		.contents = contents, .limit_in_pages = 1, .useable = 1,
	};

	return raw80(I386_MODIFY_LDT, 1, (long)(uintptr_t)&d, sizeof(d)) ? -1 : 0;
}

/*
 * glibc's own syscalls trap (a kernel that judges the vDSO's fast
 * entries on a call site it cannot know): nothing printed or exited
 * through glibc would work any more, every call returning the handler's
 * 42.  Report by int $0x80 from this program's text, and stop.
 */
static void bail_libc_traps(const char *what)
{
	char line[256];
	int n = snprintf(line, sizeof(line),
			 "not ok %d - %s: it trapped\nBail out! glibc's syscalls trap: nothing after this can run\n",
			 ++count, what);

	raw80(I386_WRITE, 1, (long)(uintptr_t)line, n);
	raw80(I386_EXIT_GROUP, 1, 0, 0);
}

/*
 * tgkill(tgid, tid, sig) by int $0x80 from a page of its own, which the
 * signal cases register as the always-native range: it runs natively
 * at TRAP, and the signal it sends is delivered on its way back, while
 * the selector says TRAP.
 * push %ebx; mov 8(%esp),%ebx; mov 12(%esp),%ecx; mov 16(%esp),%edx;
 * mov $270,%eax; int $0x80; pop %ebx; ret
 */
static const unsigned char tgkill80[] = { 0x53, 0x8b, 0x5c, 0x24, 0x08, 0x8b, 0x4c, 0x24, 0x0c,
					  0x8b, 0x54, 0x24, 0x10, 0xb8, I386_TGKILL & 0xff, I386_TGKILL >> 8,
					  0, 0, 0xcd, 0x80, 0x5b, 0xc3 };

/* What a SIGUSR1 handler saw. */
static volatile int usr1_calls, usr1_sel;
static volatile unsigned long usr1_uc_flags;

/*
 * The handlers store NATIVE before they return: without SIGNAL_NATIVE
 * (or for a frame without SA_SIGINFO) the selector is still TRAP and
 * their sigreturn would trap.  With it this changes nothing: the kernel
 * writes the frame's byte back at rt_sigreturn.
 */
static void on_usr1_info(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	(void)si;
	usr1_sel = sel;
	usr1_uc_flags = uc->uc_flags;
	usr1_calls++;
	sel = PERWINE_NATIVE;
}

static void on_usr1_plain(int sig)
{
	(void)sig;
	usr1_sel = sel;
	usr1_calls++;
	sel = PERWINE_NATIVE;
}

struct usr1_case {
	int set;		/* the SET's result: 0 or -errno */
	int calls;		/* handler calls */
	int traps;		/* SIGSYS traps meanwhile (none expected) */
	int sel_in;		/* the selector in the handler */
	unsigned long uc_flags;	/* the frame's uc_flags (SA_SIGINFO only) */
	int sel_after;		/* the selector after it returned */
};

/*
 * Register the selector with FLAGS and the tgkill page as the
 * always-native range, then send SIGUSR1 to this thread at TRAP, to a
 * handler with SA_SIGINFO or without.
 */
static void usr1_at_trap(unsigned int flags, int siginfo, int (*kill80)(int, int, int), int tgid, int tid,
			 struct usr1_case *c)
{
	struct perwine_config cfg = {
		.selector = (uintptr_t)&sel,
		.start = (uintptr_t)kill80,
		.len = 4096,
		.flags = flags,
	};
	struct sigaction sa;
	int before = traps;

	memset(c, 0, sizeof(*c));
	c->sel_in = c->sel_after = -1;
	memset(&sa, 0, sizeof(sa));
	if (siginfo) {
		sa.sa_sigaction = on_usr1_info;
		sa.sa_flags = SA_SIGINFO;
	} else {
		sa.sa_handler = on_usr1_plain;
	}
	sigaction(SIGUSR1, &sa, NULL);
	c->set = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, (unsigned long)&cfg, sizeof(cfg), 0) ? -errno : 0;
	if (c->set)
		return;
	usr1_calls = 0;
	usr1_sel = -1;
	usr1_uc_flags = 0;
	sel = PERWINE_TRAP;
	kill80(tgid, tid, SIGUSR1);
	c->sel_after = sel;
	sel = PERWINE_NATIVE;
	c->calls = usr1_calls;
	c->sel_in = usr1_sel;
	c->uc_flags = usr1_uc_flags;
	c->traps = traps - before;
}

/* A handler that leaves BYTE as the frame's saved selector. */
static volatile unsigned int leave_byte;

static void on_usr1_leave(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	(void)si;
	uc->uc_flags &= ~(0xffUL << PERWINE_UC_SELECTOR_SHIFT);
	uc->uc_flags |= (unsigned long)leave_byte << PERWINE_UC_SELECTOR_SHIFT;
}

/*
 * In a child, with SIGNAL_NATIVE and the selector NATIVE: a SIGUSR1
 * whose handler leaves BYTE in its frame.  The child's wait status: it
 * exits 0 when its rt_sigreturn took the frame.
 */
static int leave_in_frame(unsigned int byte)
{
	struct perwine_config cfg = {
		.selector = (uintptr_t)&sel,
		.flags = PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE,
	};
	struct sigaction sa;
	int st = -1, took;
	pid_t pid = fork();

	if (pid == 0) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_usr1_leave;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGUSR1, &sa, NULL);
		leave_byte = byte;
		sel = PERWINE_NATIVE;
		if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, (unsigned long)&cfg, sizeof(cfg), 0))
			_exit(3);
		raise(SIGUSR1);
		took = sel == byte;
		sel = PERWINE_NATIVE;	/* before _exit's syscall */
		_exit(took ? 0 : 4);
	}
	if (pid > 0)
		waitpid(pid, &st, 0);
	return st;
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
	int (*kill80)(int, int, int);
	struct usr1_case native, v1, plain;
	int st_bad, st_good;
	int r, refused, before, tid, ldt_ok, pid = getpid(), ppid = getppid();
	char why[128];

	/* Each point on its own line at once: a crash loses nothing printed. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, (unsigned long)&sel, 0, 0)) {
		printf("1..0 # SKIP kernel without PER_WINE dispatch (%s)\n", strerror(errno));
		return getenv("PERWINE_REQUIRE") ? 1 : 0;
	}
	printf("1..13\n# CPU vendor: %s\n", intel() ? "Intel (vDSO uses SYSENTER)" : "not Intel (vDSO uses SYSCALL)");
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
	sa.sa_sigaction = on_sigill;
	sigaction(SIGILL, &sa, NULL);
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

	before = traps;
	r = run_fast(nosysfast, &refused);
	snprintf(why, sizeof(why), "this CPU refuses SYSCALL in 32-bit mode (SIGILL at the instruction, %p)", ill_addr);
	if (refused)
		skip(why, "SYSCALL in a NOSYSCALL page: native, judged at the landing pad");
	else
		ok(r == pid && traps == before,
		   "SYSCALL in a NOSYSCALL page at NATIVE: native, judged at the vDSO's landing pad where it returns "
		   "(%d, %d traps; SIGILL at %p, EIP %#lx)", r, traps - before, ill_addr, ill_eip);
	before = traps;
	r = run_fast(plainfast, &refused);
	snprintf(why, sizeof(why), "this CPU refuses SYSCALL in 32-bit mode (SIGILL at the instruction, %p)", ill_addr);
	if (refused)
		skip(why, "SYSCALL in an ordinary page, a NOSYSCALL page elsewhere: native");
	else
		ok(r == pid && traps == before,
		   "SYSCALL in an ordinary page, a NOSYSCALL page elsewhere: native, back through the landing pad "
		   "(%d; SIGILL at %p, EIP %#lx)", r, ill_addr, ill_eip);

	/*
	 * glibc's vDSO entry with a NOSYSCALL page present, then with an LDT
	 * as well (made by int $0x80 from this program's text, whose call
	 * site is exact): the fast entry returns to the vDSO, which is where
	 * it is judged, whatever code segment or CPU.
	 */
	traps = 0;
	r = getppid();
	if (traps)
		bail_libc_traps("glibc's getppid() by the vDSO beside a NOSYSCALL page runs natively");
	ok(r == ppid && traps == 0,
	   "glibc's getppid() by the vDSO's %s runs natively beside a NOSYSCALL page (%d, %d traps)",
	   intel() ? "SYSENTER" : "SYSCALL", r, traps);
	{
		ldt_ok = ldt_set(0, 0, MODIFY_LDT_CONTENTS_DATA) == 0;
		traps = 0;
		r = ldt_ok ? getppid() : -1;
		if (traps)
			bail_libc_traps("with an LDT too: glibc's getppid() runs natively");
		if (!ldt_ok)
			skip("modify_ldt() failed: no CONFIG_MODIFY_LDT_SYSCALL?",
			     "with an LDT too: glibc's getppid() runs natively");
		else
			ok(r == ppid && traps == 0,
			   "with an LDT too, as every 32-bit Wine process has: glibc's getppid() runs natively (%d, %d traps)",
			   r, traps);
	}

	/*
	 * The vDSO's sigreturn runs whatever the selector says, judged on
	 * the linear call site: getpid by int $0x80 from an LDT code segment
	 * whose base puts EIP after it on the vDSO's sigreturn landing pad,
	 * the code itself in a page of its own, traps at TRAP (on EIP alone
	 * it ran natively).
	 */
	{
		unsigned long pad = vdso_sigreturn_pad();
		void *seg;

		memcpy(getpid_ljmp + GETPID_LJMP_PTR, &(uint32_t){ (uint32_t)(uintptr_t)&far_back }, 4);
		seg = code_page(getpid_ljmp, sizeof(getpid_ljmp), 0);
		if (!seg) {
			printf("Bail out! mmap/mprotect: %s\n", strerror(errno));
			return 1;
		}
		/* base + (pad - 7) is the page: the int $0x80 ends at EIP == pad. */
		if (!pad || !ldt_ok ||
		    ldt_set(1, (uint32_t)(uintptr_t)seg + 7 - (uint32_t)pad, MODIFY_LDT_CONTENTS_CODE)) {
			skip(!pad ? "no 32-bit vDSO sigreturn found (vdso32=0?)" : "modify_ldt() failed",
			     "int $0x80 from an LDT segment, EIP on the vDSO's sigreturn pad: traps");
		} else {
			traps = 0;
			sel = PERWINE_TRAP;
			r = ldt_getpid(LDT_SEL(1), (uint32_t)pad - 7);
			sel = PERWINE_NATIVE;
			ok(r == 42 && traps == 1 && trapped(PERWINE_TRAP_SELECTOR, I386_GETPID),
			   "int $0x80 from an LDT segment, EIP on the vDSO's sigreturn pad, the code elsewhere, TRAP: "
			   "traps (%d, %d traps, pad %#lx)", r, traps, pad);
		}
	}

	/*
	 * PERWINE_FLAG_SIGNAL_NATIVE with ia32 frames (ABI v2.1).  First the
	 * NOSYSCALL pages go, by int $0x80 from this program, so that what
	 * follows runs without the VMA check.
	 */
	sel = PERWINE_NATIVE;
	if (raw80(I386_MUNMAP, (long)(uintptr_t)nosys80, 4096, 0) ||
	    raw80(I386_MUNMAP, (long)(uintptr_t)nosysfast, 4096, 0)) {
		printf("Bail out! munmap of the NOSYSCALL pages failed\n");
		return 1;
	}
	kill80 = code_page(tgkill80, sizeof(tgkill80), 0);
	if (!kill80) {
		printf("Bail out! mmap/mprotect: %s\n", strerror(errno));
		return 1;
	}
	tid = syscall(SYS_gettid);
	usr1_at_trap(PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE, 1, kill80, pid, tid, &native);
	usr1_at_trap(PERWINE_FLAG_ON, 1, kill80, pid, tid, &v1);
	usr1_at_trap(PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE, 0, kill80, pid, tid, &plain);
	/* Control: the same signal at TRAP without the flag leaves the selector to the handler. */
	ok(native.set == 0 && native.calls == 1 && native.traps == 0 && native.sel_in == PERWINE_NATIVE &&
	   (native.uc_flags & PERWINE_UC_SELECTOR) &&
	   ((native.uc_flags >> PERWINE_UC_SELECTOR_SHIFT) & 0xff) == PERWINE_TRAP &&
	   native.sel_after == PERWINE_TRAP &&
	   v1.set == 0 && v1.calls == 1 && v1.traps == 0 && v1.sel_in == PERWINE_TRAP &&
	   !(v1.uc_flags & PERWINE_UC_SELECTOR) && v1.sel_after == PERWINE_NATIVE,
	   "SIGNAL_NATIVE, ia32 SA_SIGINFO frame of a signal at TRAP: the handler runs at NATIVE (%d), uc_flags "
	   "carries TRAP in bits 16-23 (%#lx), TRAP again after it (%d); without the flag the handler sees TRAP (%d), "
	   "uc_flags %#lx (SET %d/%d, calls %d/%d, traps %d/%d)",
	   native.sel_in, native.uc_flags, native.sel_after, v1.sel_in, v1.uc_flags, native.set, v1.set,
	   native.calls, v1.calls, native.traps, v1.traps);
	/* Control: the SA_SIGINFO handler above, with the same flags, ran at NATIVE. */
	ok(plain.set == 0 && plain.calls == 1 && plain.traps == 0 && plain.sel_in == PERWINE_TRAP &&
	   plain.sel_after == PERWINE_NATIVE && native.sel_in == PERWINE_NATIVE,
	   "SIGNAL_NATIVE, ia32 handler without SA_SIGINFO: the selector is left alone, TRAP in the handler (%d), "
	   "what it stored after (%d); with SA_SIGINFO it was NATIVE (%d) (SET %d, calls %d, traps %d)",
	   plain.sel_in, plain.sel_after, native.sel_in, plain.set, plain.calls, plain.traps);
	/* An ia32 frame has no tag: only the byte's value is checked. */
	st_bad = leave_in_frame(0x5a);
	st_good = leave_in_frame(PERWINE_TRAP);
	ok(WIFSIGNALED(st_bad) && WTERMSIG(st_bad) == SIGSEGV && WIFEXITED(st_good) && WEXITSTATUS(st_good) == 0,
	   "SIGNAL_NATIVE, ia32: rt_sigreturn refuses a frame whose byte is 0x5a, SIGSEGV (status %#x); "
	   "control: with TRAP there it returns and the selector is TRAP (status %#x)", st_bad, st_good);
	return failures ? 1 : 0;
}
