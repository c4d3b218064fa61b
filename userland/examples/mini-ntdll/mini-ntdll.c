// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * mini-ntdll: a program built the way Wine's ntdll is, on perwine.
 *
 * - Every thread has a TEB-like block whose byte at 0x340 is its
 *   selector (Wine keeps its SUD selector in the TEB too).
 * - A PE-like image is mapped PROT_NOSYSCALL: NT syscall thunks
 *   (mov r10, rcx; mov eax, N; syscall; ret) and a raw syscall outside
 *   any thunk, as DRM code issues.
 * - The SIGSYS handler only redirects: it points RIP at a Unix-side
 *   dispatcher entry (like __wine_syscall_dispatcher) and RSP at the
 *   thread's Unix stack, and marks the thread NATIVE for after the
 *   sigreturn.  The NT service then runs outside signal context, and the
 *   entry returns to the Windows code with the selector at TRAP again.
 * - An 11-argument NtCreateFile-like service reads arguments 5 to 11
 *   from the Windows stack.
 * - Code generated at run time into VirtualAlloc-like memory (written,
 *   then made PROT_EXEC | PROT_NOSYSCALL) issues syscalls.
 * - A "builtin .so", loaded with dlopen(), makes its own syscalls
 *   natively while the selector is NATIVE, with NOSYSCALL memory around.
 * - setgid() from another thread makes glibc broadcast SIGSETXID to
 *   threads running Windows code, and every thread has its own
 *   sigaltstack.  SIGUSR1/SIGUSR2 suspend and resume them, as Wine's
 *   NtSuspendThread does (MINI_NTDLL_NO_SUSPEND=1 leaves that out).
 *
 * Every emulated call is checked and counted: the program exits 0 only
 * when each thread's Windows side got what it asked for and no call was
 * lost or stray.  It needs a kernel with PERWINE_FLAG_SIGNAL_NATIVE.
 *
 *   mini-ntdll [BUILTIN_SO [THREADS [ROUNDS]]]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <perwine.h>

/* NT service numbers of this mini "Windows". */
enum {
	NT_CLOSE = 0x0f,	/* also rt_sigreturn's Linux number: must never arrive */
	NT_ADD4 = 0x20,		/* returns a1 + a2 + a3 + a4 */
	NT_CURRENT_TID = 0x21,	/* returns the thread id */
	NT_CREATE_FILE = 0x55,	/* 11 arguments: returns their checksum */
	NT_DRM_PROBE = 0x77,	/* issued by a raw syscall outside any thunk */
	NT_JIT = 0x78,		/* issued by generated code */
	NT_MAX = 0x100,
};

#define TEB_SELECTOR	0x340	/* where the selector byte lives in the TEB */
#define UNIX_STACK	(64 * 1024)
#define MAX_THREADS	64

struct teb {
	unsigned char pad[TEB_SELECTOR];
	volatile uint8_t selector;			/* at TEB_SELECTOR */
	char *unix_stack_top;
	long calls[NT_MAX];				/* NT calls emulated, by number */
	long traps_vma, traps_selector;
	long stray;					/* numbers no thunk issued */
	long wrong;					/* results the Windows side rejected */
	pid_t tid;
	volatile int suspended, resume;
	long suspends;
};
_Static_assert(offsetof(struct teb, selector) == TEB_SELECTOR, "TEB selector offset");

static __thread struct teb *current_teb;
static int trace, suspend;

/* MINI_NTDLL_TRACE=1: progress on stderr, with no buffering in the way. */
#define TRACE(...) do { if (trace) { char b_[160]; int n_ = snprintf(b_, sizeof(b_), __VA_ARGS__); \
				     if (write(2, b_, n_ > 0 ? n_ : 0) < 0) {} } } while (0)

/* ---- The "Windows" side: a PE-like image of machine code ---- */

typedef long __attribute__((ms_abi)) (*nt4_fn)(long, long, long, long);
typedef long __attribute__((ms_abi)) (*nt11_fn)(long, long, long, long, long, long, long, long,
						 long, long, long);
typedef long __attribute__((ms_abi)) (*nt0_fn)(void);

static unsigned char *image;
static nt4_fn NtAdd4;
static nt0_fn NtCurrentTid, DrmProbe, JitCode;
static nt11_fn NtCreateFile;

/* mov r10, rcx; mov eax, N; syscall; ret: 11 bytes, as Wine expects. */
static unsigned char *emit_thunk(unsigned char *p, unsigned int nr)
{
	static const unsigned char thunk[] = { 0x4c, 0x8b, 0xd1, 0xb8, 0, 0, 0, 0, 0x0f, 0x05, 0xc3 };

	memcpy(p, thunk, sizeof(thunk));
	memcpy(p + 4, &nr, 4);
	return p + 16;
}

/* A DRM-style function: some work, then a syscall in the middle of it. */
static unsigned char *emit_drm(unsigned char *p)
{
	static const unsigned char code[] = {
		0x53,				/* push rbx */
		0x48, 0x31, 0xdb,		/* xor rbx, rbx */
		0xb8, NT_DRM_PROBE, 0, 0, 0,	/* mov eax, NT_DRM_PROBE */
		0x0f, 0x05,			/* syscall */
		0x48, 0x01, 0xd8,		/* add rax, rbx */
		0x5b,				/* pop rbx */
		0xc3,				/* ret */
	};

	memcpy(p, code, sizeof(code));
	return p + 32;
}

static int map_image(void)
{
	unsigned char *p;

	image = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (image == MAP_FAILED)
		return -errno;
	p = image;
	NtAdd4 = (nt4_fn)p;
	p = emit_thunk(p, NT_ADD4);
	NtCurrentTid = (nt0_fn)p;
	p = emit_thunk(p, NT_CURRENT_TID);
	NtCreateFile = (nt11_fn)p;
	p = emit_thunk(p, NT_CREATE_FILE);
	DrmProbe = (nt0_fn)p;
	emit_drm(p);
	/* Loaded: every syscall from here traps, whatever the selector. */
	return perwine_protect(image, 4096, PROT_READ | PROT_EXEC);
}

/* VirtualAlloc + write + VirtualProtect(PAGE_EXECUTE_READ): JIT output. */
static int generate_code(void)
{
	unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		return -errno;
	JitCode = (nt0_fn)mem;
	emit_thunk(mem, NT_JIT);
	return mprotect(mem, 4096, PROT_READ | PROT_EXEC | PROT_NOSYSCALL) ? -errno : 0;
}

/* ---- The Unix side ---- */

static long create_file_sum(long a[11])
{
	long sum = 0;

	for (int i = 0; i < 11; i++)
		sum = sum * 7 + a[i];
	return sum;
}

/*
 * Runs on the thread's Unix stack, outside signal context, as Wine's
 * syscall dispatcher does: it may take locks, call libc and make native
 * syscalls.  win_rsp is the Windows stack at the syscall: the thunk's
 * return address, 32 bytes of shadow space, then arguments 5 and up.
 */
long mini_unix_syscall(long nr, long a1, long a2, long a3, long a4, const long *win_rsp)
{
	struct teb *teb = current_teb;
	long args[11];

	TRACE("unix dispatcher: nr %#lx\n", nr);
	if (nr < 0 || nr >= NT_MAX) {
		teb->stray++;
		return -ENOSYS;
	}
	teb->calls[nr]++;
	switch (nr) {
	case NT_ADD4:
		return a1 + a2 + a3 + a4;
	case NT_CURRENT_TID:
		return syscall(SYS_gettid);
	case NT_CREATE_FILE:
		args[0] = a1, args[1] = a2, args[2] = a3, args[3] = a4;
		for (int i = 4; i < 11; i++)
			args[i] = win_rsp[i + 1];
		return create_file_sum(args);
	case NT_DRM_PROBE:
		return 0x1000 + getppid() * 0;
	case NT_JIT:
		return 0x2000;
	default:
		teb->calls[nr]--;
		teb->stray++;
		return -ENOSYS;
	}
}

/*
 * The dispatcher entry.  The SIGSYS handler left: RSP at a frame on the
 * Unix stack { Windows RSP, return RIP, &selector }, RAX the NT number,
 * R10/RDX/R8/R9 the first four arguments.  The Windows code expects RBX,
 * RBP, RDI, RSI, R12-R15 and XMM6-15 kept; RCX and R11 are the
 * syscall's to clobber, RDX may be clobbered as a volatile register.
 */
void mini_dispatcher_entry(void);
__asm__(".text\n"
	".globl mini_dispatcher_entry\n"
	".type mini_dispatcher_entry, @function\n"
	"mini_dispatcher_entry:\n"
	"	mov %rsp, %r11\n"
	"	push %rdi\n"
	"	push %rsi\n"
	"	push %rbx\n"
	"	sub $168, %rsp\n"
	"	movdqu %xmm6, 0(%rsp)\n"
	"	movdqu %xmm7, 16(%rsp)\n"
	"	movdqu %xmm8, 32(%rsp)\n"
	"	movdqu %xmm9, 48(%rsp)\n"
	"	movdqu %xmm10, 64(%rsp)\n"
	"	movdqu %xmm11, 80(%rsp)\n"
	"	movdqu %xmm12, 96(%rsp)\n"
	"	movdqu %xmm13, 112(%rsp)\n"
	"	movdqu %xmm14, 128(%rsp)\n"
	"	movdqu %xmm15, 144(%rsp)\n"
	"	mov %r11, %rbx\n"
	"	mov %rax, %rdi\n"
	"	mov %r10, %rsi\n"
	"	mov %r8, %rcx\n"
	"	mov %r9, %r8\n"
	"	mov 0(%rbx), %r9\n"
	"	call mini_unix_syscall\n"
	"	movdqu 0(%rsp), %xmm6\n"
	"	movdqu 16(%rsp), %xmm7\n"
	"	movdqu 32(%rsp), %xmm8\n"
	"	movdqu 48(%rsp), %xmm9\n"
	"	movdqu 64(%rsp), %xmm10\n"
	"	movdqu 80(%rsp), %xmm11\n"
	"	movdqu 96(%rsp), %xmm12\n"
	"	movdqu 112(%rsp), %xmm13\n"
	"	movdqu 128(%rsp), %xmm14\n"
	"	movdqu 144(%rsp), %xmm15\n"
	"	add $168, %rsp\n"
	"	mov 0(%rbx), %rdx\n"
	"	mov 8(%rbx), %rcx\n"
	"	mov 16(%rbx), %r11\n"
	"	pop %rbx\n"
	"	pop %rsi\n"
	"	pop %rdi\n"
	"	mov %rdx, %rsp\n"
	/* Back to the Windows side: the thread's selector says TRAP again. */
	"	movb $1, (%r11)\n"
	"	jmp *%rcx\n"
	".size mini_dispatcher_entry, . - mini_dispatcher_entry\n");

/* The SIGSYS handler: redirect, nothing else (Wine's sigsys_handler). */
static void sigsys_redirect(ucontext_t *uc, const siginfo_t *si, void *ctx)
{
	struct teb *teb = current_teb;
	greg_t *r = uc->uc_mcontext.gregs;
	unsigned char *saved = perwine_context_selector(uc);
	long *frame;

	(void)ctx;
	TRACE("sigsys %d nr %d saved %d\n", si->si_errno, si->si_syscall, saved ? *saved : -1);
	if (!teb || !saved) {
		/* Not one of our threads, or a kernel without SIGNAL_NATIVE. */
		r[REG_RAX] = -ENOSYS;
		if (teb)
			teb->stray++;
		return;
	}
	if (si->si_errno == PERWINE_TRAP_VMA)
		teb->traps_vma++;
	else
		teb->traps_selector++;
	frame = (long *)(teb->unix_stack_top - 32);
	frame[0] = r[REG_RSP];
	frame[1] = r[REG_RIP];
	frame[2] = (long)&teb->selector;
	r[REG_RSP] = (long)frame;
	r[REG_RIP] = (long)mini_dispatcher_entry;
	/* The dispatcher runs on the Unix side. */
	*saved = PERWINE_NATIVE;
}

/* ---- Suspend and resume, as Wine's NtSuspendThread does with SIGUSR1 ---- */

/*
 * SIGUSR2 is blocked while this runs (the action's sa_mask) and only
 * sigsuspend() unblocks it: a resume sent between the test of the flag
 * and the sigsuspend() then waits for it instead of being lost, which
 * would leave the thread suspended for good.
 */
static void on_suspend(int sig)
{
	struct teb *teb = current_teb;
	sigset_t wait;

	(void)sig;
	if (!teb)
		return;
	teb->suspends++;
	teb->suspended = 1;
	sigfillset(&wait);
	sigdelset(&wait, SIGUSR2);
	while (!teb->resume)
		sigsuspend(&wait);
	teb->resume = 0;
	teb->suspended = 0;
}

static void on_resume(int sig)
{
	(void)sig;
	if (current_teb)
		current_teb->resume = 1;
}

/* ---- Threads ---- */

struct worker {
	pthread_t thread;
	struct teb *teb;
	long (*builtin)(void);
	int rounds, failed, ready;
};

static atomic_int stop, started;

/* Call into Windows code: selector TRAP on the way in, NATIVE on the way out. */
#define WINDOWS(teb, call) ({ (teb)->selector = PERWINE_TRAP; long r_ = (call); \
			      (teb)->selector = PERWINE_NATIVE; r_; })

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct teb *teb = w->teb;
	stack_t ss = { .ss_size = 64 * 1024 };
	long expect_calls = 0, r, sum;
	long a[11];
	int err;

	current_teb = teb;
	teb->tid = syscall(SYS_gettid);
	ss.ss_sp = malloc(ss.ss_size);
	teb->unix_stack_top = (char *)malloc(UNIX_STACK) + UNIX_STACK;
	if (!ss.ss_sp || teb->unix_stack_top == (char *)UNIX_STACK || sigaltstack(&ss, NULL)) {
		w->failed = 1;
		return NULL;
	}
	teb->unix_stack_top = (char *)((uintptr_t)teb->unix_stack_top & ~15UL);
	err = perwine_enable(&teb->selector);
	if (err) {
		fprintf(stderr, "mini-ntdll: perwine_enable: %s\n", perwine_strerror(err));
		w->failed = 1;
		return NULL;
	}
	atomic_fetch_add(&started, 1);
	for (int i = 0; i < w->rounds || !atomic_load(&stop); i++) {
		long id = (long)w->teb->tid;

		TRACE("thread %ld round %d, selector %d, NtAdd4 at %p\n", id, i, teb->selector, (void *)NtAdd4);

		/* Thunks in the NOSYSCALL image: the selector says TRAP too. */
		r = WINDOWS(teb, NtAdd4(id, i, 3, 4));
		teb->wrong += r != id + i + 7;
		TRACE("thread %ld NtAdd4 %ld\n", id, r);
		r = WINDOWS(teb, NtCurrentTid());
		teb->wrong += r != id;
		for (int k = 0; k < 11; k++)
			a[k] = id * 100 + i * 11 + k;
		sum = create_file_sum(a);
		r = WINDOWS(teb, NtCreateFile(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8],
					      a[9], a[10]));
		teb->wrong += r != sum;
		/* DRM's raw syscall outside any thunk. */
		r = WINDOWS(teb, DrmProbe());
		teb->wrong += r != 0x1000;
		TRACE("thread %ld DrmProbe %lx\n", id, r);
		/* From NOSYSCALL memory the selector does not matter: NATIVE here. */
		r = JitCode();
		teb->selector = PERWINE_NATIVE;
		teb->wrong += r != 0x2000;
		/* A builtin .so on the Unix side: its own syscalls are native. */
		r = w->builtin();
		teb->wrong += r != getpid();
		expect_calls += 5;
	}
	sum = 0;
	for (int k = 0; k < NT_MAX; k++)
		sum += teb->calls[k];
	if (sum != expect_calls || teb->traps_vma + teb->traps_selector != expect_calls)
		w->failed = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	const char *so = argc > 1 ? argv[1] : "mini-builtin.so";
	int nthreads = argc > 2 ? atoi(argv[2]) : MAX_THREADS;
	int rounds = argc > 3 ? atoi(argv[3]) : 20;
	struct worker w[MAX_THREADS];
	struct sigaction sa;
	long total = 0, vma = 0, sel = 0, stray = 0, wrong = 0, suspends = 0, setgids = 0;
	const char *why;
	void *lib;
	int failed = 0, err;

	/* A hang fails instead of stalling the test run. */
	alarm(120);
	trace = getenv("MINI_NTDLL_TRACE") != NULL;
	suspend = getenv("MINI_NTDLL_NO_SUSPEND") == NULL;
	if (!perwine_available(&why)) {
		printf("mini-ntdll: skipped: %s\n", why);
		return 77;
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || rounds < 1) {
		fprintf(stderr, "usage: %s [BUILTIN_SO [THREADS (1-%d) [ROUNDS]]]\n", argv[0], MAX_THREADS);
		return 2;
	}
	lib = dlopen(so, RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "mini-ntdll: dlopen: %s\n", dlerror());
		return 1;
	}
	err = map_image();
	if (!err)
		err = generate_code();
	if (!err)
		err = perwine_set_context_dispatcher(sigsys_redirect, NULL, PERWINE_DISPATCH_ONSTACK);
	if (err) {
		fprintf(stderr, "mini-ntdll: setup: %s\n", perwine_strerror(err));
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_suspend;
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_resume;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);

	for (int i = 0; i < nthreads; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].teb = aligned_alloc(64, (sizeof(struct teb) + 63) & ~63UL);
		memset(w[i].teb, 0, sizeof(struct teb));
		w[i].rounds = rounds;
		w[i].builtin = (long (*)(void))dlsym(lib, "builtin_work");
		if (!w[i].builtin || pthread_create(&w[i].thread, NULL, worker_main, &w[i])) {
			fprintf(stderr, "mini-ntdll: cannot start thread %d\n", i);
			return 1;
		}
	}
	TRACE("all %d threads started\n", nthreads);
	/* While the threads run Windows code: suspend/resume, and setgid(). */
	while (atomic_load(&started) < nthreads && !w[0].failed)
		sched_yield();
	/* Every fourth round suspends and resumes the next thread: each once. */
	for (int round = 0; round < 4 * nthreads; round++) {
		struct worker *target = &w[(round / 4) % nthreads];

		if (round % 8 == 0) {
			if (setgid(getgid()) != 0)
				failed = 1;
			setgids++;
		}
		if (!suspend || round % 4)
			continue;
		TRACE("suspend round %d\n", round);
		if (pthread_kill(target->thread, SIGUSR1))
			continue;
		while (!target->teb->suspended)
			sched_yield();
		pthread_kill(target->thread, SIGUSR2);
		while (target->teb->suspended)
			sched_yield();
	}
	atomic_store(&stop, 1);
	TRACE("stopping\n");
	for (int i = 0; i < nthreads; i++) {
		struct teb *teb = w[i].teb;

		pthread_join(w[i].thread, NULL);
		for (int k = 0; k < NT_MAX; k++)
			total += teb->calls[k];
		vma += teb->traps_vma;
		sel += teb->traps_selector;
		stray += teb->stray + teb->calls[NT_CLOSE];
		wrong += teb->wrong;
		suspends += teb->suspends;
		failed |= w[i].failed;
	}
	printf("mini-ntdll: %d threads, %ld NT calls emulated (%ld vma, %ld selector traps), "
	       "%ld wrong, %ld stray, %ld suspends, %ld setgid broadcasts\n",
	       nthreads, total, vma, sel, wrong, stray, suspends, setgids);
	if (failed || wrong || stray || suspends != (suspend ? nthreads : 0) || total != vma + sel) {
		printf("mini-ntdll: FAILED\n");
		return 1;
	}
	printf("mini-ntdll: ok\n");
	return 0;
}
