// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * perwine-bench: the cost of a syscall under each way of catching
 * syscalls, all measured in one boot, as ratios to the native row.
 *
 *   PERWINE_BENCH_CLOCK=icount|wall perwine-bench [ITERATIONS] [ROUNDS] [CSV_FILE]
 *
 * The unit: in a guest booted with QEMU's -icount shift=0 (the default
 * of make vm-bench under TCG), guest time advances 1 ns per executed
 * instruction, so the same clock reads guest instructions per call,
 * exactly and reproducibly.  Every instruction counts 1 there: LFENCE,
 * STAC/CLAC, cache misses and context switches are not weighted, so the
 * counts rank code paths, not hardware.  Elsewhere (wall mode, KVM or
 * real hardware) the unit is ns per call, and only there do the thread
 * sweep rows mean anything.
 *
 * Rounds are interleaved: round r of every row runs before round r + 1
 * of any, so that drift of the machine (TCG's translation cache, host
 * load) spreads over all rows instead of favouring the first ones.
 * Each row's round runs in a child of its own (seccomp filters cannot
 * be removed).  In wall mode a row reports the median of its rounds,
 * with min and max beside it.  In icount mode it reports the minimum,
 * with median and max beside it: there the noise only ever adds
 * instructions (timer ticks, slab refills and RCU work that land in a
 * round), so the fewest instructions a round took is the path's own
 * cost, and it is what two runs reproduce.
 *
 * A number is only reported for a row whose setup worked: every setup
 * call is checked, each row's way of trapping is seen to trap once
 * before it is timed, and the SIGSYS handlers count the traps of the
 * timed loop, which must equal its calls (zero for native rows).  A row
 * that fails any of that, in any round, prints FAILED, and a target
 * that needs it is missed.  PERWINE_BENCH_FORCE=1 runs the table on a
 * kernel without perwine too: every perwine row then fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <sys/user.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "perwine.h"

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1	/* si_code of a seccomp SIGSYS */
#endif

#define MAX_ROUNDS 31

static long iterations = 200000;
static int rounds = 5;
static int icount;	/* PERWINE_BENCH_CLOCK=icount: guest instructions */

/* Per thread, as an emulator keeps them (Wine: in each thread's TEB). */
static __thread volatile uint8_t sel;
static __thread volatile char sud_sel;
static long (*nosys_call)(long nr);	/* mov %rdi,%rax; syscall; ret in a NOSYSCALL page */
static long (*site_call[2])(long nr, void *arg);	/* the same in two other (native) VMAs */
static void *wx_page;		/* S_WX: the JIT page */
static int wx_exec_prot;	/* its executable protection: RX, with PROT_NOSYSCALL under S_VMA */
static int wx_writable;
static volatile int churn_stop;

/*
 * The traps the handlers saw, and what the last one said.  Counted, not
 * assumed: a setup that silently failed would turn a trap row into a
 * native syscall and a native row into a plain one.
 */
static __thread volatile long traps;
static __thread volatile int last_code, last_errno;
static __thread long calls;	/* what the timed loops of this thread called */
static const char *row_name = "?";

/* Setup of a row, as bits. */
enum {
	S_PERWINE = 1 << 0,	/* PERWINE_PER_WINE with the bench's selector */
	S_VMA = 1 << 1,		/* one PROT_NOSYSCALL mapping exists */
	S_SUD = 1 << 2,		/* upstream SUD on, selector ALLOW */
	S_SECCOMP_ALLOW = 1 << 3,
	S_SECCOMP_20 = 1 << 4,	/* 20 rules of the kind Wine used, then allow */
	S_SECCOMP_TRAP = 1 << 5,	/* getppid -> SECCOMP_RET_TRAP */
	S_LIB = 1 << 6,		/* libperwine's enable and dispatcher */
	S_SECCOMP_ARG = 1 << 7,	/* a rule on an argument: the action cache cannot skip it */
	S_CHURN = 1 << 8,	/* another thread maps and unmaps unrelated memory */
	S_THREAD_CLOCK = 1 << 9,	/* timed with the thread's own CPU clock */
	S_WALL_ONLY = 1 << 10,	/* threads at once: one icount vCPU runs them in turn */
	S_PERWINE_BARE = 1 << 11,	/* PERWINE_PER_WINE with no configuration (after execve) */
	S_WX = 1 << 12,		/* a JIT page, flipped by OP_WX_FLIP */
	S_REDIRECT = 1 << 13,	/* with S_PERWINE: traps return to redirect_emulate */
	S_LIB_SIGSYS = 1 << 14,	/* with S_LIB: PERWINE_REDIRECT=0, the dispatcher by SIGSYS */
};

/* A row's child cannot measure what it claims: say why and stop it. */
static void __attribute__((noreturn, format(printf, 1, 2))) row_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "perwine-bench: %s: ", row_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(1);
}

enum op { OP_NONE, OP_GETPPID, OP_SYSINFO, OP_TRAP_SEL, OP_TRAP_VMA, OP_TRAP_SUD, OP_TRAP_PLAIN,
	  OP_TRAP_LIB, OP_TRAP_PTRACE, OP_SWITCH_SEL, OP_SWITCH_PERS, OP_SWITCH_SUD,
	  OP_SWITCH_SUD_SEL, OP_SWITCH_LIB, OP_SYSINFO_2SITES, OP_WX_FLIP };

struct row {
	const char *name;
	int setup;
	enum op op;
	int vmas;	/* other VMAs to create */
	int threads;	/* measured in this many threads at once */
	int divisor;	/* iterations / divisor calls: the slow rows */
	const char *base;	/* name of the row it is compared with */
};

#define NATIVE_GETPPID "native getppid"
#define NATIVE_SYSINFO "native sysinfo"
#define NATIVE_SYSINFO_2T "native sysinfo (2 threads)"
#define VMA_THREAD_CLOCK "perwine + VMA sysinfo (thread clock)"
#define WX_NATIVE "W^X flips: native, per syscall"

static const struct row rows[] = {
	{ "native getppid", 0, OP_GETPPID, 0, 1, 1, NATIVE_GETPPID },
	{ "native sysinfo", 0, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "perwine native getppid", S_PERWINE, OP_GETPPID, 0, 1, 1, NATIVE_GETPPID },
	{ "perwine native sysinfo", S_PERWINE, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "PER_WINE without configuration sysinfo", S_PERWINE_BARE, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA present sysinfo", S_PERWINE | S_VMA, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA + 10 VMAs sysinfo", S_PERWINE | S_VMA, OP_SYSINFO, 10, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA + 1000 VMAs sysinfo", S_PERWINE | S_VMA, OP_SYSINFO, 1000, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA + 10000 VMAs sysinfo", S_PERWINE | S_VMA, OP_SYSINFO, 10000, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA + 2 alternating call-site VMAs", S_PERWINE | S_VMA, OP_SYSINFO_2SITES, 0, 1, 1,
	  NATIVE_SYSINFO },
	{ VMA_THREAD_CLOCK, S_PERWINE | S_VMA | S_THREAD_CLOCK, OP_SYSINFO, 0, 1, 1, VMA_THREAD_CLOCK },
	/*
	 * A W^X JIT (.NET, V8, Java) in Wine's VMA mode: before each sysinfo
	 * its JIT page goes RW, or back to RX, PROT_NOSYSCALL in the
	 * perwine row.  Per syscall, mprotect() and sysinfo() alike; the
	 * perwine row's extra over the native one is what the VMA rule
	 * costs while PROT_NOSYSCALL pages come and go.
	 */
	{ WX_NATIVE, S_WX, OP_WX_FLIP, 0, 1, 1, WX_NATIVE },
	{ "W^X flips: perwine + VMA, per syscall", S_PERWINE | S_VMA | S_WX, OP_WX_FLIP, 0, 1, 1, WX_NATIVE },
	/*
	 * Wall mode only: an icount guest has one vCPU, so the churning
	 * thread would only run between the measured thread's slices and
	 * could never show a cost.  tests/30-vma checks the property itself
	 * (the thread's VMA-cache refill count).
	 */
	{ "perwine + VMA sysinfo + mmap churn (thread clock)",
	  S_PERWINE | S_VMA | S_THREAD_CLOCK | S_CHURN | S_WALL_ONLY, OP_SYSINFO, 0, 1, 1, VMA_THREAD_CLOCK },
	{ "SUD allowed sysinfo", S_SUD, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "seccomp allow-all sysinfo", S_SECCOMP_ALLOW, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "seccomp 20 rules sysinfo", S_SECCOMP_20, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "seccomp argument rule sysinfo", S_SECCOMP_ARG, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	/*
	 * Flatpak and Steam's runtime install a seccomp filter of their own:
	 * any other syscall work takes the slow path, for PER_WINE and SUD
	 * alike.
	 */
	{ "perwine native + seccomp allow-all sysinfo", S_PERWINE | S_SECCOMP_ALLOW, OP_SYSINFO, 0, 1, 1,
	  NATIVE_SYSINFO },
	{ "SUD allowed + seccomp allow-all sysinfo", S_SUD | S_SECCOMP_ALLOW, OP_SYSINFO, 0, 1, 1,
	  NATIVE_SYSINFO },
	{ "native sysinfo (2 threads)", S_WALL_ONLY, OP_SYSINFO, 0, 2, 1, NATIVE_SYSINFO },
	{ "perwine native sysinfo (2 threads)", S_PERWINE | S_WALL_ONLY, OP_SYSINFO, 0, 2, 1, NATIVE_SYSINFO_2T },
	{ "SUD allowed sysinfo (2 threads)", S_SUD | S_WALL_ONLY, OP_SYSINFO, 0, 2, 1, NATIVE_SYSINFO_2T },
	{ "perwine native sysinfo (8 threads)", S_PERWINE | S_WALL_ONLY, OP_SYSINFO, 0, 8, 1,
	  NATIVE_SYSINFO },
	{ "perwine native sysinfo (64 threads)", S_PERWINE | S_WALL_ONLY, OP_SYSINFO, 0, 64, 4,
	  NATIVE_SYSINFO },
	{ "trap: perwine selector", S_PERWINE, OP_TRAP_SEL, 0, 1, 4, NATIVE_GETPPID },
	{ "trap: perwine VMA", S_PERWINE | S_VMA, OP_TRAP_VMA, 0, 1, 4, NATIVE_GETPPID },
	{ "trap: perwine redirect", S_PERWINE | S_REDIRECT, OP_TRAP_SEL, 0, 1, 4, NATIVE_GETPPID },
	{ "trap: libperwine dispatcher", S_LIB, OP_TRAP_LIB, 0, 1, 4, NATIVE_GETPPID },
	{ "trap: libperwine dispatcher, SIGSYS", S_LIB | S_LIB_SIGSYS, OP_TRAP_LIB, 0, 1, 4, NATIVE_GETPPID },
	{ "trap: SUD", S_SUD, OP_TRAP_SUD, 0, 1, 4, NATIVE_GETPPID },
	{ "trap: seccomp RET_TRAP", S_SECCOMP_TRAP, OP_TRAP_PLAIN, 0, 1, 4, NATIVE_GETPPID },
	{ "trap: ptrace SYSEMU", 0, OP_TRAP_PTRACE, 0, 1, 4, NATIVE_GETPPID },
	{ "empty loop (per-iteration overhead)", 0, OP_NONE, 0, 1, 1, NATIVE_GETPPID },
	{ "switch: perwine selector pair", S_PERWINE, OP_SWITCH_SEL, 0, 1, 1, NATIVE_GETPPID },
	{ "switch: perwine_trap()/perwine_native()", S_LIB, OP_SWITCH_LIB, 0, 1, 1, NATIVE_GETPPID },
	{ "switch: SUD selector pair", S_SUD, OP_SWITCH_SUD_SEL, 0, 1, 1, NATIVE_GETPPID },
	{ "switch: personality() pair", S_PERWINE, OP_SWITCH_PERS, 0, 1, 1, NATIVE_GETPPID },
	{ "switch: SUD prctl pair (off then on)", S_SUD, OP_SWITCH_SUD, 0, 1, 1, NATIVE_GETPPID },
};
#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))

static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(bench_clock, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static long raw_syscall(long nr)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr) : "rcx", "r11", "memory");
	return ret;
}

/*
 * The emulation of the redirect row, emulate() without the signal: the
 * kernel returns the trapped syscall here, RCX the address after it.
 * It counts the trap, takes the cause from the record the kernel wrote,
 * sets the result 0 and the selector back to native, and jumps back; it
 * uses only the registers a syscall clobbers.  last_code says it was no
 * SIGSYS.
 */
#define CODE_REDIRECT (-2)
static struct perwine_redirect_info redirect_info __attribute__((used));
extern const char redirect_emulate[];
__asm__(".text\n"
	"redirect_emulate:\n"
	"	mov redirect_info(%rip), %eax\n"
	"	mov %eax, %fs:last_errno@tpoff\n"
	"	movl $-2, %fs:last_code@tpoff\n"
	"	incq %fs:traps@tpoff\n"
	"	movb $0, %fs:sel@tpoff\n"
	"	xor %eax, %eax\n"
	"	jmp *%rcx\n");

/* The emulation of the raw-handler rows: result 0, selectors back to native. */
static void emulate(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	traps++;
	last_code = si->si_code;
	last_errno = si->si_errno;
	sel = PERWINE_NATIVE;
	sud_sel = SYSCALL_DISPATCH_FILTER_ALLOW;
	uc->uc_mcontext.gregs[REG_RAX] = 0;
}

static long lib_emulate(long nr, const long args[6], void *ctx)
{
	const siginfo_t *si = perwine_trap_info();

	(void)nr, (void)args, (void)ctx;
	traps++;
	last_code = si ? si->si_code : -1;
	last_errno = si ? si->si_errno : -1;
	return 0;
}

static void seccomp_filter(int rules, unsigned int action)
{
	struct sock_filter f[64];
	struct sock_fprog prog;
	int n = 0, i;

	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	/* Rules for syscalls this benchmark never makes, as a Wine filter would have. */
	for (i = 0; i < rules; i++)
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1000 + i, 0, 1),
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
	/* sysinfo(NULL) fails with EFAULT: a rule the action cache cannot decide. */
	if (action == SECCOMP_RET_ERRNO) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sysinfo, 0, 3);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						      offsetof(struct seccomp_data, args[0]));
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EFAULT);
	} else if (action != SECCOMP_RET_ALLOW) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action);
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	prog.len = n;
	prog.filter = f;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		row_fail("seccomp filter: %s", strerror(errno));
}

static void one(enum op op)
{
	struct sysinfo si;

	switch (op) {
	case OP_NONE: __asm__ volatile("" ::: "memory"); break;
	case OP_GETPPID: raw_syscall(SYS_getppid); break;
	case OP_SYSINFO: syscall(SYS_sysinfo, &si); break;
	case OP_TRAP_SEL: sel = PERWINE_TRAP; raw_syscall(SYS_getppid); break;
	case OP_TRAP_VMA: nosys_call(SYS_getppid); break;
	case OP_TRAP_SUD: sud_sel = SYSCALL_DISPATCH_FILTER_BLOCK; raw_syscall(SYS_getppid); break;
	case OP_TRAP_LIB: perwine_trap(); raw_syscall(SYS_getppid); perwine_native(); break;
	case OP_TRAP_PLAIN: raw_syscall(SYS_getppid); break;
	case OP_TRAP_PTRACE: break;	/* measured by the tracer: ptrace_round() */
	case OP_SWITCH_SEL: sel = PERWINE_TRAP; __asm__ volatile("" ::: "memory"); sel = PERWINE_NATIVE; break;
	case OP_SWITCH_PERS: personality(PER_LINUX); personality(PERWINE_PER_WINE); break;
	case OP_SWITCH_SUD:
		prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0);
		prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0, &sud_sel);
		break;
	case OP_SWITCH_SUD_SEL:
		sud_sel = SYSCALL_DISPATCH_FILTER_BLOCK;
		__asm__ volatile("" ::: "memory");
		sud_sel = SYSCALL_DISPATCH_FILTER_ALLOW;
		break;
	case OP_SWITCH_LIB: perwine_trap(); perwine_native(); break;
	case OP_SYSINFO_2SITES:
		site_call[0](SYS_sysinfo, &si);
		site_call[1](SYS_sysinfo, &si);
		break;
	case OP_WX_FLIP:
		wx_writable = !wx_writable;
		if (mprotect(wx_page, 4096, wx_writable ? PROT_READ | PROT_WRITE : wx_exec_prot))
			row_fail("mprotect of the JIT page: %s", strerror(errno));
		syscall(SYS_sysinfo, &si);
		break;
	}
}

/* Cost per syscall of n calls after a warm-up of n / 10. */
static double timed(enum op op, long n)
{
	double start, elapsed;
	long i;

	for (i = 0; i < n / 10; i++)
		one(op);
	calls += n / 10;
	for (;;) {
		start = now_ns();
		for (i = 0; i < n; i++)
			one(op);
		elapsed = now_ns() - start;
		calls += n;
		/*
		 * A thread's CPU clock may advance in ticks (an unstable
		 * sched_clock): a short round can read 0.  Go longer.
		 */
		if (elapsed > 0 || n >= 1L << 24)
			break;
		n *= 4;
	}
	/* The two-site and W^X rows make two syscalls a call. */
	return elapsed / n / (op == OP_SYSINFO_2SITES || op == OP_WX_FLIP ? 2 : 1);
}

/* Maps and unmaps memory that no syscall comes from, until told to stop. */
static void *churn_main(void *arg)
{
	(void)arg;
	while (!churn_stop) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED)
			munmap(p, 4096);
	}
	return NULL;
}

/*
 * PTRACE_SYSEMU: the tracee loops on getppid; each of its syscalls
 * stops it, the tracer sets the result and resumes it without running
 * the syscall.  The tracer times n such round trips.
 */
static double ptrace_round(long n)
{
	double start = 0;
	int status;
	long i;
	pid_t pid = fork();

	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		for (;;)
			raw_syscall(SYS_getppid);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status))
		return -1;
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_EXITKILL);
	for (i = -n / 10; i < n; i++) {
		if (i == 0)
			start = now_ns();
		/* Each stop must be the tracee's getppid, emulated. */
		if (ptrace(PTRACE_SYSEMU, pid, 0, 0) || waitpid(pid, &status, 0) != pid ||
		    !WIFSTOPPED(status) ||
		    ptrace(PTRACE_PEEKUSER, pid, offsetof(struct user_regs_struct, orig_rax), 0) != SYS_getppid ||
		    ptrace(PTRACE_POKEUSER, pid, offsetof(struct user_regs_struct, rax), 0))
			break;
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return i == n ? (now_ns() - start) / n : -1;
}

static void on_sigsys(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = emulate;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSYS, &sa, NULL))
		row_fail("sigaction: %s", strerror(errno));
}

/*
 * One call that must trap exactly once, with this si_code and si_errno
 * (-1: any): the proof that a row's way of trapping is in force.
 */
static void expect_trap(void (*fire)(void), const char *what, int code, int err)
{
	long before = traps;

	fire();
	if (traps != before + 1 || last_code != code || (err >= 0 && last_errno != err))
		row_fail("%s: %ld traps (want 1), si_code %d (want %d), si_errno %d (want %d)", what,
			 traps - before, last_code, code, last_errno, err);
}

static void fire_selector(void) { sel = PERWINE_TRAP; raw_syscall(SYS_getppid); sel = PERWINE_NATIVE; }
static void fire_vma(void) { nosys_call(SYS_getppid); }
static void fire_sud(void) { sud_sel = SYSCALL_DISPATCH_FILTER_BLOCK; raw_syscall(SYS_getppid); }
static void fire_lib(void) { perwine_trap(); raw_syscall(SYS_getppid); perwine_native(); }
static void fire_plain(void) { raw_syscall(SYS_getppid); }

/* This thread's personality type becomes PER_WINE, checked. */
static void take_per_wine(void)
{
	if (personality(PERWINE_PER_WINE) == -1 ||
	    (personality(0xffffffff) & PERWINE_PER_MASK) != PERWINE_PER_WINE)
		row_fail("personality(PER_WINE) did not take");
}

/* Per-thread part of a row's setup: dispatch state is per thread. */
static void thread_setup(int setup)
{
	if (setup & S_PERWINE) {
		if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, (unsigned long)&sel, 0, 0))
			row_fail("prctl(PR_WINE_DISPATCH, ON): %s", strerror(errno));
		take_per_wine();
		expect_trap(fire_selector, "selector TRAP", SYS_USER_DISPATCH, PERWINE_TRAP_SELECTOR);
		if (setup & S_REDIRECT) {
			struct perwine_config cfg = {
				.selector = (uintptr_t)&sel,
				.flags = PERWINE_FLAG_ON | PERWINE_FLAG_REDIRECT,
				.redirect = (uintptr_t)redirect_emulate,
				.redirect_info = (uintptr_t)&redirect_info,
			};

			if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, &cfg, PERWINE_CONFIG_SIZE_VER1, 0))
				row_fail("prctl(PR_WINE_DISPATCH, SET, REDIRECT): %s", strerror(errno));
			expect_trap(fire_selector, "redirect", CODE_REDIRECT, PERWINE_TRAP_SELECTOR);
		}
		if (setup & S_VMA)
			expect_trap(fire_vma, "NOSYSCALL page", SYS_USER_DISPATCH, PERWINE_TRAP_VMA);
	}
	if (setup & S_PERWINE_BARE) {
		struct perwine_config cfg;

		/* What a program run by a PER_WINE process has: the type, no configuration. */
		take_per_wine();
		if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, &cfg, sizeof(cfg), 0) || cfg.flags)
			row_fail("PR_WINE_DISPATCH_GET: not a thread without configuration");
	}
	if (setup & S_SUD) {
		if (prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0, &sud_sel))
			row_fail("prctl(PR_SET_SYSCALL_USER_DISPATCH, ON): %s", strerror(errno));
		expect_trap(fire_sud, "SUD selector BLOCK", SYS_USER_DISPATCH, 0);
	}
	if (setup & S_LIB) {
		int want = setup & S_LIB_SIGSYS ? PERWINE_MECHANISM_SIGSYS : PERWINE_MECHANISM_REDIRECT;
		struct perwine_config cfg;
		int err;

		if (setup & S_LIB_SIGSYS)
			setenv("PERWINE_REDIRECT", "0", 1);
		err = perwine_enable(PERWINE_THREAD_SELECTOR);
		if (!err)
			err = perwine_set_dispatcher(lib_emulate, NULL);
		if (err)
			row_fail("libperwine: %s", perwine_strerror(err));
		/* The row measures the way it names, the default one where the kernel has it. */
		if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, &cfg, sizeof(cfg), 0) ||
		    perwine_trap_mechanism() != want ||
		    !(cfg.flags & PERWINE_FLAG_REDIRECT) != (want == PERWINE_MECHANISM_SIGSYS))
			row_fail("libperwine traps by %s, not by %s",
				 cfg.flags & PERWINE_FLAG_REDIRECT ? "redirect" : "SIGSYS",
				 want == PERWINE_MECHANISM_SIGSYS ? "SIGSYS" : "redirect");
		expect_trap(fire_lib, "libperwine dispatcher", SYS_USER_DISPATCH, PERWINE_TRAP_SELECTOR);
	}
	if (setup & S_SECCOMP_TRAP)
		expect_trap(fire_plain, "seccomp RET_TRAP", SYS_SECCOMP, -1);
	traps = 0;
	calls = 0;
}

/* Does one call of OP trap once (the trap rows) or never? */
static int op_traps(enum op op)
{
	return op == OP_TRAP_SEL || op == OP_TRAP_VMA || op == OP_TRAP_SUD || op == OP_TRAP_LIB ||
	       op == OP_TRAP_PLAIN;
}

/* After the timed loop: the handlers saw exactly the traps it made. */
static void check_traps(enum op op, long seen, long made)
{
	long want = op_traps(op) ? made : 0;

	if (seen != want)
		row_fail("%ld traps in %ld calls (want %ld)", seen, made, want);
}

static void process_setup(const struct row *row)
{
	static const unsigned char stub[] = { 0x48, 0x89, 0xf8, 0x0f, 0x05, 0xc3 };
	/* mov %rdi,%rax; mov %rsi,%rdi; syscall; ret */
	static const unsigned char stub2[] = { 0x48, 0x89, 0xf8, 0x48, 0x89, 0xf7, 0x0f, 0x05, 0xc3 };
	void *page;
	int i;

	int err;

	row_name = row->name;
	err = perwine_map_code(stub, sizeof(stub), row->setup & S_VMA ? 0 : PERWINE_MAP_NATIVE, &page);
	if (err)
		row_fail("perwine_map_code: %s", perwine_strerror(err));
	nosys_call = (long (*)(long))page;
	for (i = 0; i < 2; i++) {
		err = perwine_map_code(stub2, sizeof(stub2), PERWINE_MAP_NATIVE, &page);
		if (err)
			row_fail("perwine_map_code: %s", perwine_strerror(err));
		site_call[i] = (long (*)(long, void *))page;
		/* A guard between them: two VMAs, never one merged. */
		mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	/* Alternating protections keep the mappings from merging into one VMA. */
	for (i = 0; i < row->vmas; i++)
		if (mmap(NULL, 4096, i & 1 ? PROT_READ : PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
			row_fail("mmap: %s", strerror(errno));
	if (row->setup & S_WX) {
		wx_exec_prot = PROT_READ | PROT_EXEC | (row->setup & S_VMA ? PROT_NOSYSCALL : 0);
		wx_page = mmap(NULL, 4096, wx_exec_prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (wx_page == MAP_FAILED)
			row_fail("mmap of the JIT page: %s", strerror(errno));
		/* A guard after it: its own VMA, never merged with the next. */
		mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	if (row->setup & S_SECCOMP_ALLOW)
		seccomp_filter(0, SECCOMP_RET_ALLOW);
	if (row->setup & S_SECCOMP_20)
		seccomp_filter(20, SECCOMP_RET_ALLOW);
	if (row->setup & S_SECCOMP_TRAP)
		seccomp_filter(0, SECCOMP_RET_TRAP);
	if (row->setup & S_SECCOMP_ARG)
		seccomp_filter(0, SECCOMP_RET_ERRNO);
	if (!(row->setup & S_LIB))
		on_sigsys();
}

struct worker {
	const struct row *row;
	pthread_barrier_t *start;
	double ns;
	long calls, traps;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	thread_setup(w->row->setup);
	pthread_barrier_wait(w->start);
	w->ns = timed(w->row->op, iterations / w->row->divisor);
	w->calls = calls;
	w->traps = traps;
	return NULL;
}

/* One round of a row, in the calling (child) process: cost per call. */
static double row_round(const struct row *row)
{
	struct worker w[64];
	pthread_t t[64], churn;
	pthread_barrier_t start;
	cpu_set_t cpu0;
	double sum = 0, cost;
	int i, n = row->threads;

	process_setup(row);
	if (row->op == OP_TRAP_PTRACE)
		return ptrace_round(iterations / row->divisor);
	if (n == 1) {
		/* The churn thread first, free to run on another CPU. */
		if ((row->setup & S_CHURN) && pthread_create(&churn, NULL, churn_main, NULL))
			return -1;
		/* The measured thread on one CPU. */
		CPU_ZERO(&cpu0);
		CPU_SET(0, &cpu0);
		sched_setaffinity(0, sizeof(cpu0), &cpu0);
		thread_setup(row->setup);
		if (row->setup & S_THREAD_CLOCK)
			bench_clock = CLOCK_THREAD_CPUTIME_ID;
		cost = timed(row->op, iterations / row->divisor);
		check_traps(row->op, traps, calls);
		if (row->setup & S_CHURN) {
			churn_stop = 1;
			pthread_join(churn, NULL);
		}
		return cost;
	}
	/* All threads at once: the mean of their ns per call. */
	pthread_barrier_init(&start, NULL, n);
	for (i = 0; i < n; i++) {
		w[i] = (struct worker){ row, &start, -1, 0, 0 };
		if (pthread_create(&t[i], NULL, worker_main, &w[i]))
			row_fail("pthread_create failed");
	}
	for (i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		sum += w[i].ns;
		check_traps(row->op, w[i].traps, w[i].calls);
	}
	return sum / n;
}

/*
 * Fork, run one round of the row, get its ns per call through a pipe:
 * -1 when the child failed (it said why on stderr).
 */
static double run_round(const struct row *row)
{
	int fds[2], st;
	double ns = -1;
	pid_t pid;

	if (pipe(fds))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		ns = row_round(row);
		if (write(fds[1], &ns, sizeof(ns)) != sizeof(ns))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], &ns, sizeof(ns)) != sizeof(ns))
		ns = -1;
	close(fds[0]);
	if (pid > 0 && (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0))
		ns = -1;
	return ns;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* TCG or KVM, as boot-guest.sh wrote it on the kernel command line. */
static const char *accel(void)
{
	static char value[16] = "unknown";
	char line[1024], *p;
	FILE *f = fopen("/proc/cmdline", "re");

	if (!f)
		return value;
	if (fgets(line, sizeof(line), f) && (p = strstr(line, "perwine.accel=")))
		sscanf(p + strlen("perwine.accel="), "%15s", value);
	fclose(f);
	return value;
}

static double ratio(const double *ns, int i, int j)
{
	return ns[i] / ns[j];
}

static int find(const char *name)
{
	for (int i = 0; i < NROWS; i++)
		if (strcmp(rows[i].name, name) == 0)
			return i;
	abort();
}

static int met, missed;

/*
 * One target: met, MISSED, or n/a (counted as missed) when a row it is
 * computed from failed, so a broken setup can never meet one.
 */
static void target(const char *what, int inputs_ok, double value, const char *want, int ok)
{
	if (!inputs_ok) {
		missed++;
		printf("  %-36s %9s  %-38s %s\n", what, "n/a", want, "MISSED (a row it needs FAILED)");
		return;
	}
	ok ? met++ : missed++;
	printf("  %-36s %+9.1f  %-38s %s\n", what, value, want, ok ? "met" : "MISSED");
}

/*
 * The targets, from this run's numbers: reported, never asserted.  They
 * are about instruction counts, so they are judged in icount mode only.
 * (The mmap-churn row has no target: see its row.)
 */
static void targets(const double *c, const int *failed)
{
	int native = find("native sysinfo"), pw = find("perwine native sysinfo");
	int vma = find("perwine + VMA present sysinfo"), sud = find("SUD allowed sysinfo");
	int bare = find("PER_WINE without configuration sysinfo");
	int tsel = find("trap: perwine selector"), tsud = find("trap: SUD");
	int tred = find("trap: perwine redirect");
	int wxn = find(WX_NATIVE), wxp = find("W^X flips: perwine + VMA, per syscall");
	double pw_extra = c[pw] - c[native], sud_extra = c[sud] - c[native];
	double bare_extra = c[bare] - c[native];
	char want[64];

	printf("\ntargets (this run):\n");
	if (!icount) {
		printf("  the targets count guest instructions: they are judged in icount mode only\n"
		       "  (make vm-bench under TCG; PERWINE_BENCH_CLOCK=wall chose this table)\n");
		return;
	}
	target("perwine native: extra instructions", !failed[native] && !failed[pw], pw_extra,
	       "(<= +12 instructions)", pw_extra <= 12);
	target("SUD allowed: extra instructions", !failed[native] && !failed[sud], sud_extra,
	       "(<= +15 instructions)", sud_extra <= 15);
	target("PER_WINE, no configuration: extra", !failed[native] && !failed[bare], bare_extra,
	       "(within 1 of native sysinfo)", bare_extra <= 1 && bare_extra >= -1);
	target("VMA present over selector only", !failed[vma] && !failed[pw], c[vma] - c[pw],
	       "(<= +10 instructions)", c[vma] - c[pw] <= 10);
	target("W^X flips over VMA present", !failed[wxn] && !failed[wxp] && !failed[vma] && !failed[native],
	       (c[wxp] - c[wxn]) - (c[vma] - c[native]), "(<= +20 instructions a syscall)",
	       (c[wxp] - c[wxn]) - (c[vma] - c[native]) <= 20);
	snprintf(want, sizeof(want), "(<= SUD's trap, %.1f)", c[tsud]);
	target("trap round trip: perwine selector", !failed[tsel] && !failed[tsud], c[tsel],
	       failed[tsud] ? "(<= SUD's trap)" : want, c[tsel] <= c[tsud]);
	snprintf(want, sizeof(want), "(<= 1/8 of SUD's trap, %.1f)", c[tsud] / 8);
	target("trap round trip: perwine redirect", !failed[tred] && !failed[tsud], c[tred],
	       failed[tsud] ? "(<= 1/8 of SUD's trap)" : want, c[tred] <= c[tsud] / 8);
}

int main(int argc, char **argv)
{
	double t[NROWS][MAX_ROUNDS], c[NROWS];
	const char *mode = getenv("PERWINE_BENCH_CLOCK"), *unit, *why = NULL;
	const char *force = getenv("PERWINE_BENCH_FORCE");
	struct utsname u;
	FILE *csv = NULL;
	int i, r, failed[NROWS] = { 0 }, nfailed = 0, measured = 0;

	if (argc > 1)
		iterations = atol(argv[1]);
	if (argc > 2)
		rounds = atoi(argv[2]);
	if (iterations < 20 || rounds <= 0 || rounds > MAX_ROUNDS || argc > 4 ||
	    (mode && strcmp(mode, "icount") && strcmp(mode, "wall"))) {
		fprintf(stderr, "usage: PERWINE_BENCH_CLOCK=icount|wall %s [ITERATIONS>=20] [ROUNDS 1..%d] "
			"[CSV_FILE]\n", argv[0], MAX_ROUNDS);
		return 2;
	}
	icount = mode && strcmp(mode, "icount") == 0;
	unit = icount ? "instr/call" : "ns/call";
	if (argc > 3 && !(csv = fopen(argv[3], "w"))) {
		perror(argv[3]);
		return 2;
	}
	if (!perwine_available(&why)) {
		fprintf(stderr, "perwine-bench: no perwine dispatch here: %s%s\n", why,
			force && *force == '1' ? " (PERWINE_BENCH_FORCE=1: its rows will fail)" : "");
		if (!(force && *force == '1'))
			return 77;
	}
	uname(&u);
	printf("perwine-bench: kernel %s, accel %s, %ld cpus, %ld calls x %d rounds (interleaved), %s\n",
	       u.release, accel(), sysconf(_SC_NPROCESSORS_ONLN), iterations, rounds,
	       icount ? "minimum" : "median");
	printf("unit: %s\n", icount ? "guest instructions per call (QEMU -icount shift=0: 1 ns = 1 instruction; "
	       "every instruction counts 1)" : "ns per call (wall clock)");
	for (r = 0; r < rounds; r++)
		for (i = 0; i < NROWS; i++)
			t[i][r] = icount && (rows[i].setup & S_WALL_ONLY) ? 0 : run_round(&rows[i]);

	printf("\n%-48s %11s %10s %10s %8s  %s\n", "row", unit, icount ? "median" : "min", "max", "ratio",
	       "compared with");
	if (csv)
		fprintf(csv, "row,cost_per_call,ratio,compared_with,accel,kernel,min,max,unit\n");
	/* A row with one failed round failed: its minimum would be the -1. */
	for (i = 0; i < NROWS; i++) {
		qsort(t[i], rounds, sizeof(t[i][0]), cmp);
		c[i] = icount ? t[i][0] : t[i][rounds / 2];
		if (!(icount && (rows[i].setup & S_WALL_ONLY)) && t[i][0] <= 0)
			failed[i] = 1, nfailed++;
	}
	for (i = 0; i < NROWS; i++) {
		const char *base = rows[i].base;
		int b = find(base);

		if (icount && (rows[i].setup & S_WALL_ONLY)) {
			printf("%-48s %11s  (wall mode only: one icount vCPU runs threads in turn)\n",
			       rows[i].name, "n/a");
			continue;
		}
		if (failed[i] || failed[b]) {
			printf("%-48s %11s  (%s)\n", rows[i].name, "FAILED",
			       failed[i] ? "a round failed: see above" : "the row it is compared with FAILED");
			failed[i] = 1;
			continue;
		}
		measured++;
		printf("%-48s %11.1f %10.1f %10.1f %8.3f  %s\n", rows[i].name, c[i],
		       icount ? t[i][rounds / 2] : t[i][0], t[i][rounds - 1], ratio(c, i, b), base);
		if (csv)
			fprintf(csv, "\"%s\",%.1f,%.4f,\"%s\",%s,%s,%.1f,%.1f,%s\n", rows[i].name, c[i],
				ratio(c, i, b), base, accel(), u.release, t[i][0], t[i][rounds - 1],
				icount ? "instructions" : "ns");
	}
	if (csv)
		fclose(csv);
	targets(c, failed);
	if (nfailed)
		fprintf(stderr, "perwine-bench: %d rows failed to measure\n", nfailed);
	printf("bench: %d rows measured (%s), %d failed, %d targets met, %d missed\n", measured,
	       icount ? "icount" : "wall", nfailed, met, missed);
	return nfailed ? 1 : 0;
}
