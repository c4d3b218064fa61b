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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
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

#define MAX_ROUNDS 31

static long iterations = 200000;
static int rounds = 5;
static int icount;	/* PERWINE_BENCH_CLOCK=icount: guest instructions */

/* Per thread, as an emulator keeps them (Wine: in each thread's TEB). */
static __thread volatile uint8_t sel;
static __thread volatile char sud_sel;
static long (*nosys_call)(long nr);	/* mov %rdi,%rax; syscall; ret in a NOSYSCALL page */
static long (*site_call[2])(long nr, void *arg);	/* the same in two other (native) VMAs */
static volatile int churn_stop;

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
};

enum op { OP_NONE, OP_GETPPID, OP_SYSINFO, OP_TRAP_SEL, OP_TRAP_VMA, OP_TRAP_SUD, OP_TRAP_PLAIN,
	  OP_TRAP_LIB, OP_TRAP_PTRACE, OP_SWITCH_SEL, OP_SWITCH_PERS, OP_SWITCH_SUD,
	  OP_SWITCH_SUD_SEL, OP_SWITCH_LIB, OP_SYSINFO_2SITES };

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

static const struct row rows[] = {
	{ "native getppid", 0, OP_GETPPID, 0, 1, 1, NATIVE_GETPPID },
	{ "native sysinfo", 0, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "perwine native getppid", S_PERWINE, OP_GETPPID, 0, 1, 1, NATIVE_GETPPID },
	{ "perwine native sysinfo", S_PERWINE, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA present sysinfo", S_PERWINE | S_VMA, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA + 10 VMAs sysinfo", S_PERWINE | S_VMA, OP_SYSINFO, 10, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA + 1000 VMAs sysinfo", S_PERWINE | S_VMA, OP_SYSINFO, 1000, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA + 10000 VMAs sysinfo", S_PERWINE | S_VMA, OP_SYSINFO, 10000, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA + 2 alternating call-site VMAs", S_PERWINE | S_VMA, OP_SYSINFO_2SITES, 0, 1, 1,
	  NATIVE_SYSINFO },
	{ VMA_THREAD_CLOCK, S_PERWINE | S_VMA | S_THREAD_CLOCK, OP_SYSINFO, 0, 1, 1, VMA_THREAD_CLOCK },
	{ "perwine + VMA sysinfo + mmap churn (thread clock)", S_PERWINE | S_VMA | S_THREAD_CLOCK | S_CHURN,
	  OP_SYSINFO, 0, 1, 1, VMA_THREAD_CLOCK },
	{ "SUD allowed sysinfo", S_SUD, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "seccomp allow-all sysinfo", S_SECCOMP_ALLOW, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "seccomp 20 rules sysinfo", S_SECCOMP_20, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "seccomp argument rule sysinfo", S_SECCOMP_ARG, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "native sysinfo (2 threads)", S_WALL_ONLY, OP_SYSINFO, 0, 2, 1, NATIVE_SYSINFO },
	{ "perwine native sysinfo (2 threads)", S_PERWINE | S_WALL_ONLY, OP_SYSINFO, 0, 2, 1, NATIVE_SYSINFO_2T },
	{ "SUD allowed sysinfo (2 threads)", S_SUD | S_WALL_ONLY, OP_SYSINFO, 0, 2, 1, NATIVE_SYSINFO_2T },
	{ "perwine native sysinfo (8 threads)", S_PERWINE | S_WALL_ONLY, OP_SYSINFO, 0, 8, 1,
	  NATIVE_SYSINFO },
	{ "perwine native sysinfo (64 threads)", S_PERWINE | S_WALL_ONLY, OP_SYSINFO, 0, 64, 4,
	  NATIVE_SYSINFO },
	{ "trap: perwine selector", S_PERWINE, OP_TRAP_SEL, 0, 1, 4, NATIVE_GETPPID },
	{ "trap: perwine VMA", S_PERWINE | S_VMA, OP_TRAP_VMA, 0, 1, 4, NATIVE_GETPPID },
	{ "trap: libperwine dispatcher", S_LIB, OP_TRAP_LIB, 0, 1, 4, NATIVE_GETPPID },
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

/* The emulation of the raw-handler rows: result 0, selectors back to native. */
static void emulate(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig, (void)si;
	sel = PERWINE_NATIVE;
	sud_sel = SYSCALL_DISPATCH_FILTER_ALLOW;
	uc->uc_mcontext.gregs[REG_RAX] = 0;
}

static long lib_emulate(long nr, const long args[6], void *ctx)
{
	(void)nr, (void)args, (void)ctx;
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
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		_exit(90);
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
	}
}

/* Cost per syscall of n calls after a warm-up of n / 10. */
static double timed(enum op op, long n)
{
	double start, elapsed;
	long i;

	for (i = 0; i < n / 10; i++)
		one(op);
	for (;;) {
		start = now_ns();
		for (i = 0; i < n; i++)
			one(op);
		elapsed = now_ns() - start;
		/*
		 * A thread's CPU clock may advance in ticks (an unstable
		 * sched_clock): a short round can read 0.  Go longer.
		 */
		if (elapsed > 0 || n >= 1L << 24)
			break;
		n *= 4;
	}
	/* The two-site row makes two syscalls a call. */
	return elapsed / n / (op == OP_SYSINFO_2SITES ? 2 : 1);
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
		if (ptrace(PTRACE_SYSEMU, pid, 0, 0) || waitpid(pid, &status, 0) != pid ||
		    !WIFSTOPPED(status))
			break;
		ptrace(PTRACE_POKEUSER, pid, offsetof(struct user_regs_struct, rax), 0);
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
	sigaction(SIGSYS, &sa, NULL);
}

/* Per-thread part of a row's setup: dispatch state is per thread. */
static void thread_setup(int setup)
{
	if (setup & S_PERWINE) {
		prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, (unsigned long)&sel, 0, 0);
		personality(PERWINE_PER_WINE);
	}
	if (setup & S_SUD)
		prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0, &sud_sel);
	if ((setup & S_LIB) && (perwine_enable(PERWINE_THREAD_SELECTOR) ||
				perwine_set_dispatcher(lib_emulate, NULL)))
		_exit(91);
}

static void process_setup(const struct row *row)
{
	static const unsigned char stub[] = { 0x48, 0x89, 0xf8, 0x0f, 0x05, 0xc3 };
	/* mov %rdi,%rax; mov %rsi,%rdi; syscall; ret */
	static const unsigned char stub2[] = { 0x48, 0x89, 0xf8, 0x48, 0x89, 0xf7, 0x0f, 0x05, 0xc3 };
	void *page;
	int i;

	if (perwine_map_code(stub, sizeof(stub), row->setup & S_VMA ? 0 : PERWINE_MAP_NATIVE, &page))
		_exit(92);
	nosys_call = (long (*)(long))page;
	for (i = 0; i < 2; i++) {
		if (perwine_map_code(stub2, sizeof(stub2), PERWINE_MAP_NATIVE, &page))
			_exit(92);
		site_call[i] = (long (*)(long, void *))page;
		/* A guard between them: two VMAs, never one merged. */
		mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	/* Alternating protections keep the mappings from merging into one VMA. */
	for (i = 0; i < row->vmas; i++)
		if (mmap(NULL, 4096, i & 1 ? PROT_READ : PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
			_exit(93);
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
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	thread_setup(w->row->setup);
	pthread_barrier_wait(w->start);
	w->ns = timed(w->row->op, iterations / w->row->divisor);
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
		if (row->setup & S_CHURN) {
			churn_stop = 1;
			pthread_join(churn, NULL);
		}
		return cost;
	}
	/* All threads at once: the mean of their ns per call. */
	pthread_barrier_init(&start, NULL, n);
	for (i = 0; i < n; i++) {
		w[i] = (struct worker){ row, &start, -1 };
		if (pthread_create(&t[i], NULL, worker_main, &w[i]))
			return -1;
	}
	for (i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		sum += w[i].ns;
	}
	return sum / n;
}

/* Fork, run one round of the row, get its ns per call through a pipe. */
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
	if (pid > 0)
		waitpid(pid, &st, 0);
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

static const char *verdict(int ok)
{
	if (ok)
		met++;
	else
		missed++;
	return ok ? "met" : "MISSED";
}

/*
 * The targets, from this run's numbers: reported, never asserted.  They
 * are about instruction counts, so they are judged in icount mode only.
 */
static void targets(const double *c)
{
	int native = find("native sysinfo"), pw = find("perwine native sysinfo");
	int vma = find("perwine + VMA present sysinfo"), sud = find("SUD allowed sysinfo");
	int quiet = find(VMA_THREAD_CLOCK), churn = find("perwine + VMA sysinfo + mmap churn (thread clock)");
	int tsel = find("trap: perwine selector"), tsud = find("trap: SUD");
	double pw_extra = c[pw] - c[native], sud_extra = c[sud] - c[native];
	double vma_extra = c[vma] - c[pw], churn_over = (c[churn] / c[quiet] - 1) * 100;

	printf("\ntargets (this run):\n");
	if (!icount) {
		printf("  the targets count guest instructions: they are judged in icount mode only\n"
		       "  (make vm-bench under TCG; PERWINE_BENCH_CLOCK=wall chose this table)\n");
		return;
	}
	printf("  perwine native: extra instructions  %+7.1f  (<= half of SUD allowed's %+.1f)   %s\n",
	       pw_extra, sud_extra, verdict(pw_extra <= sud_extra / 2));
	printf("  VMA present over selector only      %+7.1f  (<= +10 instructions)           %s\n",
	       vma_extra, verdict(vma_extra <= 10));
	printf("  mmap churn in another thread        %+6.1f%%  (<= +25%% over no churn)         %s\n",
	       churn_over, verdict(churn_over <= 25));
	printf("  trap round trip: perwine vs SUD   %9.1f  (<= SUD's %.1f)                  %s\n",
	       c[tsel], c[tsud], verdict(c[tsel] <= c[tsud]));
}

int main(int argc, char **argv)
{
	double t[NROWS][MAX_ROUNDS], c[NROWS];
	const char *mode = getenv("PERWINE_BENCH_CLOCK"), *unit;
	struct utsname u;
	FILE *csv = NULL;
	int i, r, bad = 0, measured = 0;

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
	if (!perwine_available(NULL)) {
		fprintf(stderr, "perwine-bench: this kernel has no perwine dispatch\n");
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
	for (i = 0; i < NROWS; i++) {
		qsort(t[i], rounds, sizeof(t[i][0]), cmp);
		c[i] = icount ? t[i][0] : t[i][rounds / 2];
		if (!(icount && (rows[i].setup & S_WALL_ONLY)))
			bad |= t[i][0] <= 0;
	}
	for (i = 0; i < NROWS; i++) {
		const char *base = rows[i].base;
		int b = find(base);

		if (icount && (rows[i].setup & S_WALL_ONLY)) {
			printf("%-48s %11s  (threads at once: wall mode only)\n", rows[i].name, "n/a");
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
	targets(c);
	if (bad)
		fprintf(stderr, "perwine-bench: a row failed to measure (cost <= 0)\n");
	printf("bench: %d rows measured (%s), %d targets met, %d missed\n", measured,
	       icount ? "icount" : "wall", met, missed);
	return bad;
}
