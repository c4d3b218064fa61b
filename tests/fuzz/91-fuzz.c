// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A seeded random caller of the perwine ABI with an oracle: a model of
 * the thread's state (personality, registered selector, range, the
 * selector's value, a page's protection) predicts the result of every
 * call, and which signal, if any, must kill the process.
 *
 *   91-fuzz [SEED [OPS]]
 *
 * It prints its seed so that a failure can be replayed.  Episodes run in
 * children (a bad selector kills, by design); each logs its operations
 * to shared memory, which the parent prints when a prediction fails.
 * The host checks that the guest's kernel log stayed clean.
 */
#include <stddef.h>
#include <sys/mman.h>
#include <time.h>

#include "tap.h"

#ifndef PROT_SEM
#define PROT_SEM	0x8	/* asm-generic/mman-common.h; glibc lacks it */
#endif

#define PAGE		4096
#define EPISODE		200	/* operations per child */
#define LOG		32	/* last operations kept for the report */
#define TRAP_RESULT	4242

enum sel_kind { SEL_NONE, SEL_GOOD, SEL_RO_ZERO, SEL_UNREADABLE, SEL_BAD_VALUE, SEL_KERNEL, SEL_HIGH };

struct model {
	int wine;		/* personality type PERWINE_PER_WINE */
	int on;			/* a config is registered */
	int sel;		/* enum sel_kind */
	int range_covers;	/* range holds test_syscall_ret */
	unsigned long start, len;
	unsigned long sel_addr;
	int page_prot;
};

static struct shared {
	struct model model;	/* the model before the last operation */
	int expect_signal;	/* the one signal that may kill the child now */
	int failed;
	char why[256];
	char log[LOG][96];
	unsigned long ops;
} *sh;

/* The model of the child's state. */
static struct model m;

static unsigned long long rng;
static uint8_t *ro_zero, *bad_value, *unreadable, *page;
static volatile int trapped, trapped_errno;

static unsigned long long next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int pick(int n)
{
	return (int)(next() % (unsigned long long)n);
}

static void logf_(const char *fmt, long a, long b, long c)
{
	snprintf(sh->log[sh->ops++ % LOG], sizeof(sh->log[0]), fmt, a, b, c);
}

static const char *const where[] = { "text", "page" }, *const value[] = { "NATIVE", "TRAP" };

static void fail(const char *what, long got, long want)
{
	snprintf(sh->why, sizeof(sh->why), "%s: got %ld, expected %ld", what, got, want);
	sh->failed = 1;
	_exit(1);
}

static void on_sigsys(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	test_sel = PERWINE_NATIVE;	/* so that the sigreturn runs */
	trapped++;
	trapped_errno = si->si_errno;
	uc->uc_mcontext.gregs[REG_RAX] = TRAP_RESULT;
}

static unsigned long sel_address(enum sel_kind k)
{
	switch (k) {
	case SEL_GOOD: return (unsigned long)&test_sel;
	case SEL_RO_ZERO: return (unsigned long)ro_zero;
	case SEL_UNREADABLE: return (unsigned long)unreadable;
	case SEL_BAD_VALUE: return (unsigned long)bad_value;
	case SEL_KERNEL: return 0xffffffff81000000UL;
	case SEL_HIGH: return 1UL << 56;
	default: return 0;
	}
}

/* The signal that kills a syscall made now from outside the range, or 0. */
static int hazard(void)
{
	if (!m.wine || !m.on)
		return 0;
	if (m.sel == SEL_UNREADABLE)
		return SIGSEGV;
	if (m.sel == SEL_BAD_VALUE)
		return SIGSYS;
	return 0;
}

/* A libc return value as the kernel gave it. */
static long result(long ret)
{
	return ret == -1 ? -errno : ret;
}

static void op_on(void)
{
	/* Deadly selectors end the episode: pick them rarely, to reach deep states. */
	static const enum sel_kind kinds[] = { SEL_NONE, SEL_GOOD, SEL_GOOD, SEL_GOOD, SEL_RO_ZERO,
					       SEL_KERNEL, SEL_HIGH, SEL_UNREADABLE, SEL_BAD_VALUE };
	enum sel_kind k = kinds[pick(sizeof(kinds) / sizeof(kinds[0]))];
	unsigned long start = 0, len = 0;
	long ret, want;

	switch (pick(3)) {
	case 1: start = (unsigned long)test_syscall_ret; len = 1; break;
	case 2: start = -4096UL; len = 8192; break;	/* overflows */
	}
	logf_("ON sel kind %ld start %#lx len %ld", k, start, len);
	ret = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, sel_address(k), start, len);
	want = start + len < start ? -EINVAL : (k == SEL_KERNEL || k == SEL_HIGH) ? -EFAULT : 0;
	if (result(ret) != want)
		fail("PR_WINE_DISPATCH_ON", result(ret), want);
	if (want == 0) {
		m.on = 1;
		m.sel = k;
		m.sel_addr = sel_address(k);
		m.start = start;
		m.len = len;
		m.range_covers = len == 1;
	}
}

static void op_off(void)
{
	long a = pick(4) == 0 ? 1 : 0, ret;

	logf_("OFF arg %ld", a, 0, 0);
	ret = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, a, 0, 0);
	if (result(ret) != (a ? -EINVAL : 0))
		fail("PR_WINE_DISPATCH_OFF", result(ret), a ? -EINVAL : 0);
	if (!a)
		m.on = 0, m.sel = SEL_NONE, m.start = m.len = 0, m.sel_addr = 0, m.range_covers = 0;
}

static void op_get(void)
{
	static const long sizes[] = { sizeof(struct perwine_config), 0, PERWINE_CONFIG_SIZE_VER0 - 1,
				      sizeof(struct perwine_config) + 8 };
	/* GET takes any size >= 32 (ABI v2) and zero-fills past the struct. */
	struct {
		struct perwine_config cfg;
		uint64_t tail;
	} buf;
	struct perwine_config cfg;
	long size = sizes[pick(4)], arg5 = pick(5) == 0, ret, want;
	int ptr = pick(4);	/* 0: NULL, 1: kernel, else good */
	void *p = ptr == 0 ? NULL : ptr == 1 ? (void *)0xffffffff81000000UL : &buf;

	logf_("GET size %ld ptr %ld arg5 %ld", size, ptr, arg5);
	memset(&buf, 0xa5, sizeof(buf));
	ret = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, p, size, arg5);
	want = size < PERWINE_CONFIG_SIZE_VER0 || arg5 ? -EINVAL : ptr < 2 ? -EFAULT : 0;
	cfg = buf.cfg;
	if (want == 0 && size > (long)sizeof(cfg) && buf.tail != 0)
		fail("GET zero-fills past the struct", (long)buf.tail, 0);
	if (result(ret) != want)
		fail("PR_WINE_DISPATCH_GET", result(ret), want);
	if (want == 0 && (cfg.selector != m.sel_addr || cfg.start != m.start || cfg.len != m.len ||
			  cfg.flags != (m.on ? PERWINE_CONFIG_ON : 0u) || cfg.reserved))
		fail("GET contents (selector)", (long)cfg.selector, (long)m.sel_addr);
}

static void op_bad_op(void)
{
	static const long ops[] = { 4, 5, -1, 0x1000 };	/* 3 is SET */
	long op = ops[pick(4)], ret;

	logf_("prctl op %ld", op, 0, 0);
	ret = prctl(PR_WINE_DISPATCH, op, 0, 0, 0);
	if (result(ret) != -EINVAL)
		fail("unknown PR_WINE_DISPATCH op", result(ret), -EINVAL);
}

static void op_personality(void)
{
	static const unsigned long values[] = { PERWINE_PER_WINE, PER_LINUX, PERWINE_PER_WINE | ADDR_NO_RANDOMIZE,
						PER_LINUX32, 0xffffffff };
	unsigned long v = values[pick(5)];
	long ret;

	logf_("personality %#lx", (long)v, 0, 0);
	ret = personality(v);
	if (ret < 0 || ((ret & PERWINE_PER_MASK) == PERWINE_PER_WINE) != m.wine)
		fail("personality() returned the old value", ret, m.wine);
	if (v != 0xffffffff)
		m.wine = (v & PERWINE_PER_MASK) == PERWINE_PER_WINE;
}

static int random_prot(void)
{
	static const int bits[] = { PROT_READ, PROT_WRITE, PROT_EXEC, PROT_SEM, PROT_NOSYSCALL,
				    0x10, 0x20, 0x80 };
	int prot = PROT_READ | PROT_EXEC;

	for (int i = 0; i < 3; i++)
		if (pick(3) == 0)
			prot ^= bits[pick(8)];
	return prot;
}

static void op_protect(void)
{
	int prot = random_prot(), unknown = prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC | PROT_SEM | PROT_NOSYSCALL);
	int which = pick(2);
	long ret, want = unknown ? -EINVAL : 0;

	logf_(which ? "pkey_mprotect prot %#lx" : "mprotect prot %#lx", prot, 0, 0);
	ret = which ? syscall(SYS_pkey_mprotect, page, PAGE, prot, -1) : mprotect(page, PAGE, prot);
	if (result(ret) != want)
		fail("mprotect/pkey_mprotect", result(ret), want);
	if (want == 0)
		m.page_prot = prot;
	if (pick(8) == 0 && smaps_has_flag(page, "ns") != !!(m.page_prot & PROT_NOSYSCALL))
		fail("smaps ns of the fuzzed page", smaps_has_flag(page, "ns"), !!(m.page_prot & PROT_NOSYSCALL));
}

static void op_mmap(void)
{
	int prot = random_prot();
	void *p;

	logf_("mmap prot %#lx", prot, 0, 0);
	p = mmap(NULL, PAGE, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		fail("mmap with random prot", -errno, 0);
	if (smaps_has_flag(p, "ns") != !!(prot & PROT_NOSYSCALL))
		fail("smaps ns of a new mapping", smaps_has_flag(p, "ns"), !!(prot & PROT_NOSYSCALL));
	munmap(p, PAGE);
}

/* A raw getppid from the text or from the fuzzed page, selector set at random. */
static void op_raw(void)
{
	int from_page = (m.page_prot & PROT_EXEC) && pick(2);
	int trap_sel = pick(2), want_trap = 0, want_errno = 0;
	long ret, ppid = getppid(), before = trapped;

	snprintf(sh->log[sh->ops++ % LOG], sizeof(sh->log[0]), "raw getppid from %s, selector %s",
		 where[from_page], value[trap_sel]);
	/* Dispatch applies only with a configuration that is on. */
	if (m.wine && m.on && !(m.range_covers && !from_page)) {
		if (m.on && m.sel == SEL_GOOD && trap_sel)
			want_trap = 1, want_errno = PERWINE_TRAP_SELECTOR;
		else if (from_page && (m.page_prot & PROT_NOSYSCALL))
			want_trap = 1, want_errno = PERWINE_TRAP_VMA;
	}
	if (trap_sel)
		test_sel = PERWINE_TRAP;
	ret = from_page ? ((long (*)(long))page)(SYS_getppid) : test_syscall(SYS_getppid, 0, 0, 0);
	test_sel = PERWINE_NATIVE;
	if (ret != (want_trap ? TRAP_RESULT : ppid) || trapped != before + want_trap)
		fail("raw syscall trapped (1) or not (0)", trapped - before, want_trap);
	if (want_trap && trapped_errno != want_errno)
		fail("si_errno of the trap", trapped_errno, want_errno);
}

static void (*const ops[])(void) = { op_on, op_off, op_get, op_bad_op, op_personality,
				     op_protect, op_mmap, op_raw, op_raw };

/* splitmix64: each episode its own stream, not a shifted copy of the last one. */
static unsigned long long seed_of(unsigned long long seed, long episode)
{
	unsigned long long z = seed + 0x9e3779b97f4a7c15ULL * (unsigned long long)(episode + 1);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (z ^ (z >> 31)) | 1;
}

/* Every fourth episode starts deadly, so that the kill path is always covered. */
static void start_deadly(long n)
{
	logf_("start deadly: PER_WINE, selector kind %ld", n & 4 ? SEL_UNREADABLE : SEL_BAD_VALUE, 0, 0);
	if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, sel_address(n & 4 ? SEL_UNREADABLE : SEL_BAD_VALUE), 0, 0))
		fail("deadly ON", -errno, 0);
	m.on = 1;
	m.sel = n & 4 ? SEL_UNREADABLE : SEL_BAD_VALUE;
	m.sel_addr = sel_address(m.sel);
	personality(PERWINE_PER_WINE);
	m.wine = 1;
}

static void episode(long n)
{
	static const unsigned char stub[] = { 0x48, 0x89, 0xf8, 0x0f, 0x05, 0xc3 };

	install_sigsys(on_sigsys);
	page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memcpy(page, stub, sizeof(stub));
	mprotect(page, PAGE, PROT_READ | PROT_EXEC);
	m.page_prot = PROT_READ | PROT_EXEC;
	if (n % 4 == 3)
		start_deadly(n);
	for (int i = 0; i < EPISODE; i++) {
		void (*op)(void) = ops[pick(sizeof(ops) / sizeof(ops[0]))];

		/* In a deadly state, the next syscall of this thread must kill it. */
		sh->expect_signal = hazard();
		sh->model = m;
		op();
		if (sh->expect_signal)
			fail("survived a syscall with a deadly selector (signal)", 0, sh->expect_signal);
	}
	/* The exit_group is a syscall too. */
	sh->expect_signal = hazard();
	sh->model = m;
	logf_("_exit(0)", 0, 0, 0);
	_exit(0);
}

int main(int argc, char **argv)
{
	unsigned long long seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (unsigned long long)time(NULL);
	long total = argc > 2 ? atol(argv[2]) : 6000, episodes = 0, deaths = 0;
	int status, ok = 1;

	tap_require_perwine();
	tap_plan(2);
	printf("# seed %llu (replay: %s %llu %ld)\n", seed, argv[0], seed, total);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ro_zero = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bad_value = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/* PROT_NONE, not unmapped: a later mmap could reuse a hole and make it readable. */
	unreadable = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || ro_zero == MAP_FAILED || bad_value == MAP_FAILED || unreadable == MAP_FAILED) {
		printf("Bail out! mmap: %s\n", strerror(errno));
		return 1;
	}
	*bad_value = 2;

	for (long done = 0; ok && done < total; episodes++) {
		memset(sh, 0, sizeof(*sh));
		memset(&m, 0, sizeof(m));
		fflush(stdout);
		pid_t pid = fork();

		if (pid == 0) {
			alarm(30);
			rng = seed_of(seed, episodes);
			episode(episodes);
		}
		waitpid(pid, &status, 0);
		done += sh->ops;
		/*
		 * fail() _exits, and in a deadly state that exit_group is
		 * itself killed with the expected signal: a death only
		 * counts when no check failed before it.
		 */
		if (!sh->failed && WIFSIGNALED(status) && WTERMSIG(status) == sh->expect_signal &&
		    sh->expect_signal) {
			deaths++;
			continue;
		}
		if (!sh->failed && WIFEXITED(status) && WEXITSTATUS(status) == 0)
			continue;
		ok = 0;
		printf("# episode %ld: %s\n", episodes,
		       sh->failed ? sh->why : WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exit");
		printf("# expected signal %d; model before the last operation: wine %d, on %d, selector kind %d "
		       "at %#lx, range %#lx+%lu, page prot %#x\n", sh->expect_signal, sh->model.wine,
		       sh->model.on, sh->model.sel, sh->model.sel_addr, sh->model.start, sh->model.len,
		       sh->model.page_prot);
		printf("# last operations, oldest first:\n");
		for (unsigned long i = sh->ops > LOG ? sh->ops - LOG : 0; i < sh->ops; i++)
			printf("#   %lu: %s\n", i, sh->log[i % LOG]);
	}
	tap_ok(ok, "%ld episodes: every call returned what the model predicted (seed %llu)", episodes, seed);
	tap_ok(ok && deaths > 0, "deadly selectors killed with the predicted signal %ld times", deaths);
	return tap_done();
}
