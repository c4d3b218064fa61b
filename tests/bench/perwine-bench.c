// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * perwine-bench: ns per syscall under each way of catching syscalls,
 * all measured in one boot, as ratios to the native row of the run.
 *
 *   perwine-bench [ITERATIONS] [ROUNDS] [CSV_FILE]
 *
 * Rounds are interleaved: round r of every row runs before round r + 1
 * of any, so that drift of the machine (TCG's translation cache, host
 * load) spreads over all rows instead of favouring the first ones.
 * Each row's round runs in a child of its own (seccomp filters cannot
 * be removed); a row reports the median of its rounds.
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

/* Per thread, as an emulator keeps them (Wine: in each thread's TEB). */
static __thread volatile uint8_t sel;
static __thread volatile char sud_sel;
static long (*nosys_call)(long nr);	/* mov %rdi,%rax; syscall; ret in a NOSYSCALL page */

/* Setup of a row, as bits. */
enum {
	S_PERWINE = 1 << 0,	/* PERWINE_PER_WINE with the bench's selector */
	S_VMA = 1 << 1,		/* one PROT_NOSYSCALL mapping exists */
	S_SUD = 1 << 2,		/* upstream SUD on, selector ALLOW */
	S_SECCOMP_ALLOW = 1 << 3,
	S_SECCOMP_20 = 1 << 4,	/* 20 rules of the kind Wine used, then allow */
	S_SECCOMP_TRAP = 1 << 5,	/* getppid -> SECCOMP_RET_TRAP */
	S_LIB = 1 << 6,		/* libperwine's enable and dispatcher */
};

enum op { OP_NONE, OP_GETPPID, OP_SYSINFO, OP_TRAP_SEL, OP_TRAP_VMA, OP_TRAP_SUD, OP_TRAP_PLAIN,
	  OP_TRAP_LIB, OP_TRAP_PTRACE, OP_SWITCH_SEL, OP_SWITCH_PERS, OP_SWITCH_SUD };

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

static const struct row rows[] = {
	{ "native getppid", 0, OP_GETPPID, 0, 1, 1, NATIVE_GETPPID },
	{ "native sysinfo", 0, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "perwine native getppid", S_PERWINE, OP_GETPPID, 0, 1, 1, NATIVE_GETPPID },
	{ "perwine native sysinfo", S_PERWINE, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA present sysinfo", S_PERWINE | S_VMA, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA + 10 VMAs sysinfo", S_PERWINE | S_VMA, OP_SYSINFO, 10, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA + 1000 VMAs sysinfo", S_PERWINE | S_VMA, OP_SYSINFO, 1000, 1, 1, NATIVE_SYSINFO },
	{ "perwine + VMA + 10000 VMAs sysinfo", S_PERWINE | S_VMA, OP_SYSINFO, 10000, 1, 1, NATIVE_SYSINFO },
	{ "SUD allowed sysinfo", S_SUD, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "seccomp allow-all sysinfo", S_SECCOMP_ALLOW, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "seccomp 20 rules sysinfo", S_SECCOMP_20, OP_SYSINFO, 0, 1, 1, NATIVE_SYSINFO },
	{ "native sysinfo (2 threads)", 0, OP_SYSINFO, 0, 2, 1, NATIVE_SYSINFO },
	{ "perwine native sysinfo (2 threads)", S_PERWINE, OP_SYSINFO, 0, 2, 1, NATIVE_SYSINFO_2T },
	{ "SUD allowed sysinfo (2 threads)", S_SUD, OP_SYSINFO, 0, 2, 1, NATIVE_SYSINFO_2T },
	{ "trap: perwine selector", S_PERWINE, OP_TRAP_SEL, 0, 1, 20, NATIVE_GETPPID },
	{ "trap: perwine VMA", S_PERWINE | S_VMA, OP_TRAP_VMA, 0, 1, 20, NATIVE_GETPPID },
	{ "trap: libperwine dispatcher", S_LIB, OP_TRAP_LIB, 0, 1, 20, NATIVE_GETPPID },
	{ "trap: SUD", S_SUD, OP_TRAP_SUD, 0, 1, 20, NATIVE_GETPPID },
	{ "trap: seccomp RET_TRAP", S_SECCOMP_TRAP, OP_TRAP_PLAIN, 0, 1, 20, NATIVE_GETPPID },
	{ "trap: ptrace SYSEMU", 0, OP_TRAP_PTRACE, 0, 1, 20, NATIVE_GETPPID },
	{ "empty loop (per-iteration overhead)", 0, OP_NONE, 0, 1, 1, NATIVE_GETPPID },
	{ "switch: perwine selector pair", S_PERWINE, OP_SWITCH_SEL, 0, 1, 1, NATIVE_GETPPID },
	{ "switch: personality() pair", S_PERWINE, OP_SWITCH_PERS, 0, 1, 1, NATIVE_GETPPID },
	{ "switch: SUD prctl pair", S_SUD, OP_SWITCH_SUD, 0, 1, 1, NATIVE_GETPPID },
};
#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
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
	if (action != SECCOMP_RET_ALLOW) {
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
	}
}

/* ns per call of n calls after a warm-up of n / 10. */
static double timed(enum op op, long n)
{
	double start;
	long i;

	for (i = 0; i < n / 10; i++)
		one(op);
	start = now_ns();
	for (i = 0; i < n; i++)
		one(op);
	return (now_ns() - start) / n;
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
	void *page;
	int i;

	if (perwine_map_code(stub, sizeof(stub), row->setup & S_VMA ? 0 : PERWINE_MAP_NATIVE, &page))
		_exit(92);
	nosys_call = (long (*)(long))page;
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

/* One round of a row, in the calling (child) process: ns per call. */
static double row_round(const struct row *row)
{
	struct worker w[2];
	pthread_t t[2];
	pthread_barrier_t start;
	double sum = 0;
	int i, n = row->threads;

	process_setup(row);
	if (row->op == OP_TRAP_PTRACE)
		return ptrace_round(iterations / row->divisor);
	if (n == 1) {
		thread_setup(row->setup);
		return timed(row->op, iterations / row->divisor);
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

/* The targets, from this run's numbers: reported, never asserted. */
static void targets(const double *ns)
{
	int native = find("native sysinfo"), pw = find("perwine native sysinfo");
	int vma = find("perwine + VMA present sysinfo"), sud = find("SUD allowed sysinfo");
	int tsel = find("trap: perwine selector"), tsud = find("trap: SUD");
	int tptrace = find("trap: ptrace SYSEMU");
	int ssel = find("switch: perwine selector pair"), spers = find("switch: personality() pair");
	int empty = find("empty loop (per-iteration overhead)");
	double over = (ratio(ns, pw, native) - 1) * 100, vover = (ratio(ns, vma, native) - 1) * 100;
	double trap = (ratio(ns, tsel, tsud) - 1) * 100, vs_ptrace = ratio(ns, tptrace, tsel);
	/* A selector pair costs about as much as the loop around it: compare net of that. */
	double sw = (ns[spers] - ns[empty]) / (ns[ssel] - ns[empty] > 0.1 ? ns[ssel] - ns[empty] : 0.1);

#define MET(c) ((c) ? "met" : "MISSED")
	printf("\ntargets (this run):\n");
	printf("  perwine native sysinfo overhead   %+6.1f%%  (<= +1%%, <= SUD's %+.1f%%)  %s\n",
	       over, (ratio(ns, sud, native) - 1) * 100, MET(over <= 1 && ns[pw] <= ns[sud]));
	printf("  perwine + VMA present overhead    %+6.1f%%  (<= +1.5%%)                %s\n",
	       vover, MET(vover <= 1.5));
	printf("  perwine trap vs SUD trap          %+6.1f%%  (within 10%%)              %s\n",
	       trap, MET(trap <= 10));
	printf("  ptrace SYSEMU / perwine trap      %6.1fx  (>= 10x)                  %s\n",
	       vs_ptrace, MET(vs_ptrace >= 10));
	printf("  personality() pair / selector     %6.1fx  (>= 50x, net of the loop) %s\n",
	       sw, MET(sw >= 50));
	printf("  perwine native, 2 threads at once %+6.1f%%  (no target; SUD: %+.1f%%)\n",
	       (ratio(ns, find("perwine native sysinfo (2 threads)"), find(NATIVE_SYSINFO_2T)) - 1) * 100,
	       (ratio(ns, find("SUD allowed sysinfo (2 threads)"), find(NATIVE_SYSINFO_2T)) - 1) * 100);
#undef MET
}

int main(int argc, char **argv)
{
	double t[NROWS][MAX_ROUNDS], ns[NROWS];
	struct utsname u;
	FILE *csv = NULL;
	int i, r, bad = 0;

	if (argc > 1)
		iterations = atol(argv[1]);
	if (argc > 2)
		rounds = atoi(argv[2]);
	if (iterations < 20 || rounds <= 0 || rounds > MAX_ROUNDS || argc > 4) {
		fprintf(stderr, "usage: %s [ITERATIONS>=20] [ROUNDS 1..%d] [CSV_FILE]\n", argv[0],
			MAX_ROUNDS);
		return 2;
	}
	if (argc > 3 && !(csv = fopen(argv[3], "w"))) {
		perror(argv[3]);
		return 2;
	}
	if (!perwine_available(NULL)) {
		fprintf(stderr, "perwine-bench: this kernel has no perwine dispatch\n");
		return 77;
	}
	uname(&u);
	printf("perwine-bench: kernel %s, accel %s, %ld cpus, %ld calls x %d rounds (interleaved), median\n",
	       u.release, accel(), sysconf(_SC_NPROCESSORS_ONLN), iterations, rounds);
	for (r = 0; r < rounds; r++)
		for (i = 0; i < NROWS; i++)
			t[i][r] = run_round(&rows[i]);

	printf("\n%-36s %12s %10s  %s\n", "row", "ns/call", "ratio", "compared with");
	if (csv)
		fprintf(csv, "row,ns_per_call,ratio,compared_with,accel,kernel\n");
	for (i = 0; i < NROWS; i++) {
		qsort(t[i], rounds, sizeof(t[i][0]), cmp);
		ns[i] = t[i][rounds / 2];
		bad |= t[i][0] <= 0;
	}
	for (i = 0; i < NROWS; i++) {
		const char *base = rows[i].base;
		int b = find(base);

		printf("%-36s %12.1f %10.3f  %s\n", rows[i].name, ns[i], ratio(ns, i, b), base);
		if (csv)
			fprintf(csv, "\"%s\",%.1f,%.4f,\"%s\",%s,%s\n", rows[i].name, ns[i],
				ratio(ns, i, b), base, accel(), u.release);
	}
	if (csv)
		fclose(csv);
	targets(ns);
	if (bad)
		fprintf(stderr, "perwine-bench: a row failed to measure (ns <= 0)\n");
	return bad;
}
