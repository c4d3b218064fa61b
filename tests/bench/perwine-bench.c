// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * perwine-bench: ns per syscall under each way of catching syscalls,
 * all measured in one boot, as ratios to the native row.
 *
 *   perwine-bench [ITERATIONS] [ROUNDS] [CSV_FILE]
 *
 * Each row runs in its own child (seccomp filters cannot be removed),
 * which reports the median of ROUNDS rounds of ITERATIONS calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "perwine.h"

static long iterations = 200000;
static int rounds = 5;

static volatile uint8_t sel;
static volatile char sud_sel;
static void *nosys_page;

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

static void emulate(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig, (void)si;
	sel = PERWINE_NATIVE;
	sud_sel = SYSCALL_DISPATCH_FILTER_ALLOW;
	uc->uc_mcontext.gregs[REG_RAX] = 0;
}

static void on_sigsys(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = emulate;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
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

enum op { OP_GETPPID, OP_SYSINFO, OP_TRAP_SEL, OP_TRAP_SUD, OP_TRAP_PLAIN,
	  OP_SWITCH_SEL, OP_SWITCH_PERS, OP_SWITCH_SUD };

static void one(enum op op)
{
	struct sysinfo si;

	switch (op) {
	case OP_GETPPID: raw_syscall(SYS_getppid); break;
	case OP_SYSINFO: syscall(SYS_sysinfo, &si); break;
	case OP_TRAP_SEL: sel = PERWINE_TRAP; raw_syscall(SYS_getppid); break;
	case OP_TRAP_SUD: sud_sel = SYSCALL_DISPATCH_FILTER_BLOCK; raw_syscall(SYS_getppid); break;
	case OP_TRAP_PLAIN: raw_syscall(SYS_getppid); break;
	case OP_SWITCH_SEL: sel = PERWINE_TRAP; __asm__ volatile("" ::: "memory"); sel = PERWINE_NATIVE; break;
	case OP_SWITCH_PERS: personality(PER_LINUX); personality(PER_WINE); break;
	case OP_SWITCH_SUD:
		prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0);
		prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0, &sud_sel);
		break;
	}
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double measure(enum op op)
{
	double t[32];
	long i;
	int r;

	for (i = 0; i < iterations / 10; i++)	/* warm-up */
		one(op);
	for (r = 0; r < rounds; r++) {
		double start = now_ns();

		for (i = 0; i < iterations; i++)
			one(op);
		t[r] = (now_ns() - start) / iterations;
	}
	qsort(t, rounds, sizeof(t[0]), cmp);
	return t[rounds / 2];
}

struct row {
	const char *name;
	const char *setup;
	enum op op;
};

static void setup(const char *what)
{
	if (strstr(what, "perwine")) {
		prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, (unsigned long)&sel, 0, 0);
		personality(PER_WINE);
	}
	if (strstr(what, "vma"))
		mprotect(nosys_page, 4096, PROT_READ | PROT_EXEC | PROT_NOSYSCALL);
	if (strstr(what, "sud"))
		prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0, &sud_sel);
	if (strstr(what, "seccomp-allow"))
		seccomp_filter(0, SECCOMP_RET_ALLOW);
	if (strstr(what, "seccomp-20"))
		seccomp_filter(20, SECCOMP_RET_ALLOW);
	if (strstr(what, "seccomp-trap"))
		seccomp_filter(0, SECCOMP_RET_TRAP);
	if (strstr(what, "vmas")) {
		int i;

		for (i = 0; i < 1000; i++)
			mmap(NULL, 4096, i & 1 ? PROT_READ : PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	on_sigsys();
}

static double run_row(const struct row *row)
{
	int fds[2], st;
	double ns = -1;
	pid_t pid;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		setup(row->setup);
		ns = measure(row->op);
		if (write(fds[1], &ns, sizeof(ns)) != sizeof(ns))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &ns, sizeof(ns)) != sizeof(ns))
		ns = -1;
	close(fds[0]);
	waitpid(pid, &st, 0);
	return ns;
}

static const struct row rows[] = {
	{ "native getppid", "", OP_GETPPID },
	{ "native sysinfo", "", OP_SYSINFO },
	{ "perwine native getppid", "perwine", OP_GETPPID },
	{ "perwine native sysinfo", "perwine", OP_SYSINFO },
	{ "perwine + VMA present sysinfo", "perwine vma", OP_SYSINFO },
	{ "perwine + VMA + 1000 VMAs sysinfo", "perwine vma vmas", OP_SYSINFO },
	{ "SUD allowed sysinfo", "sud", OP_SYSINFO },
	{ "seccomp allow-all sysinfo", "seccomp-allow", OP_SYSINFO },
	{ "seccomp 20 rules sysinfo", "seccomp-20", OP_SYSINFO },
	{ "trap: perwine selector", "perwine", OP_TRAP_SEL },
	{ "trap: SUD", "sud", OP_TRAP_SUD },
	{ "trap: seccomp RET_TRAP", "seccomp-trap", OP_TRAP_PLAIN },
	{ "switch: perwine selector pair", "perwine", OP_SWITCH_SEL },
	{ "switch: personality() pair", "perwine", OP_SWITCH_PERS },
	{ "switch: SUD prctl pair", "sud", OP_SWITCH_SUD },
};

int main(int argc, char **argv)
{
	double ns[sizeof(rows) / sizeof(rows[0])];
	FILE *csv = NULL;
	size_t i;

	if (argc > 1)
		iterations = atol(argv[1]);
	if (argc > 2)
		rounds = atoi(argv[2]);
	if (iterations <= 0 || rounds <= 0 || rounds > 31) {
		fprintf(stderr, "usage: %s [ITERATIONS>0] [ROUNDS 1..31] [CSV_FILE]\n", argv[0]);
		return 2;
	}
	if (argc > 3 && !(csv = fopen(argv[3], "w"))) {
		perror(argv[3]);
		return 2;
	}
	nosys_page = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	printf("%-36s %12s %10s\n", "row", "ns/call", "x native");
	if (csv)
		fprintf(csv, "row,ns_per_call,ratio_to_native\n");
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		/* sysinfo rows compare with native sysinfo, the others with native getppid */
		double base;

		ns[i] = run_row(&rows[i]);
		base = strstr(rows[i].name, "sysinfo") ? ns[1] : ns[0];
		printf("%-36s %12.1f %10.3f\n", rows[i].name, ns[i], ns[i] / base);
		if (csv)
			fprintf(csv, "\"%s\",%.1f,%.4f\n", rows[i].name, ns[i], ns[i] / base);
		fflush(stdout);
	}
	if (csv)
		fclose(csv);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (ns[i] <= 0)
			return 1;
	return 0;
}
