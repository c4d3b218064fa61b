// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * mini-ntdll: a program built the way Wine 11's x86-64 ntdll is, on perwine.
 * The Wine functions named below are in Wine's dlls/ntdll/unix/
 * signal_x86_64.c unless another file is named.
 *
 * - Each thread has a TEB: %gs points at it (init_syscall_frame), its
 *   byte at 0x340 is the selector (amd64_thread_data()->syscall_dispatch)
 *   and 0x378 holds the thread's syscall frame.  The thread registers
 *   that byte and libc's whole image as the always-native range (Wine's
 *   libc_addr_cb() and its PR_SET_SYSCALL_USER_DISPATCH), with
 *   PR_WINE_DISPATCH_SET, then sets PER_WINE.  Odd threads add
 *   PERWINE_FLAG_SIGNAL_NATIVE; even ones go without, as Wine on SUD must.
 * - Windows code runs on a Windows stack with the selector at TRAP; Unix
 *   code runs on the thread's own stack (Wine's kernel stack) at NATIVE.
 * - The NT functions are 32-byte thunks in a PROT_NOSYSCALL "PE image",
 *   laid out as Wine's (include/wine/asm.h): the test of SystemCall in the
 *   shared data page at 0x7ffe0308 (1, as virtual_init_user_shared_data()
 *   in virtual.c sets it) skips the thunk's syscall, and the thunk calls
 *   the dispatcher through the pointer at 0x7ffe1000.  No trap.
 * - Foreign code makes raw syscalls: a DRM-like function in the image
 *   and a direct-syscall stub generated into VirtualAlloc-like memory
 *   (PROT_EXEC | PROT_NOSYSCALL).  They trap, and the SIGSYS handler does
 *   what sigsys_handler() does: the frame's return address is the
 *   trapping RIP + 0xb, RCX the frame, RIP the dispatcher's prolog end.
 *   The dispatcher subtracts 0xb from every return address (a thunk's
 *   call lands on the thunk's ret, a trap right after its syscall).
 * - The signal handlers store NATIVE on entry (init_handler()) and TRAP
 *   on leaving when the interrupted RSP is neither on the signal stack
 *   nor on the kernel stack (leave_handler()); the SIGSYS handler only
 *   does the first.  glibc's own handlers (the setxid broadcast) and its
 *   restorer's rt_sigreturn run natively because they are in libc.
 * - Halfway, an "ELF builtin DLL" is loaded with dlopen(), as Wine's
 *   dlopen_dll() (loader.c) does before calling
 *   signal_disable_syscall_dispatch().  Each thread's next selector trap
 *   then switches it to VMA mode (the selector deregistered, libc still
 *   native) and retries the syscall, where Wine turns SUD off: PE memory
 *   keeps trapping, the builtin's own syscalls run natively.
 * - An 11-argument NtCreateFile-like service reads arguments 5 to 11
 *   from the Windows stack.  setgid() from the main thread makes glibc
 *   broadcast SIGSETXID to threads running Windows code, and each
 *   thread's gid is then checked in /proc.  SIGUSR1/SIGUSR2 suspend and
 *   resume them (MINI_NTDLL_NO_SUSPEND=1 leaves that out).
 *
 * Every call is checked and counted: the program exits 0 only when each
 * thread's Windows side got what it asked for, each thunk call reached
 * the dispatcher without a trap and each raw syscall was handled once.  It
 * needs an ABI v2 kernel (PR_WINE_DISPATCH_SET, SIGNAL_NATIVE).
 *
 *   mini-ntdll [BUILTIN_SO [THREADS [ROUNDS]]]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <asm/prctl.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
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
	NT_DRM_PROBE = 0x77,	/* a raw syscall in the image, outside any thunk */
	NT_JIT = 0x78,		/* a raw syscall in generated code */
	NT_MAX = 0x100,
};

#define THUNK_CALLS	3	/* per round: NtAdd4, NtCurrentTid, NtCreateFile */
#define RAW_CALLS	2	/* per round: the DRM function and the JIT stub */

/* Where Wine has them: the TEB and the shared data page. */
#define TEB_SELF	0x30		/* NT_TIB.Self */
#define TEB_SELECTOR	0x340		/* amd64_thread_data()->syscall_dispatch */
#define TEB_FRAME	0x378		/* thread_data->syscall_frame */
#define TEB_WIN_STACK	0x380		/* this model's Windows stack top */
#define USER_SHARED	0x7ffe0000UL	/* KUSER_SHARED_DATA */
#define USD_SYSTEM_CALL	0x308		/* its SystemCall field */
#define DISPATCHER_PTR	0x7ffe1000UL	/* the dispatcher's address, read by the thunks */
#define REDIRECT	0xb		/* sigsys_handler's +0xb, the dispatcher's -0xb */

#define WIN_STACK	(64 * 1024)
#define MAX_THREADS	64

#define STR(x)	#x
#define XSTR(x)	STR(x)

/*
 * A syscall frame, on the kernel stack (struct syscall_frame in Wine,
 * with only what this model needs).  The offsets are used by the
 * dispatcher below.
 */
struct frame {
	uint64_t rip;		/* 0x00: return address, 0xb past where to resume */
	uint64_t rsp;		/* 0x08: the Windows stack at the syscall */
	uint64_t rcx;		/* 0x10: what the syscall left in RCX */
	uint64_t eflags;	/* 0x18 */
	uint64_t rbx, rbp, rsi, rdi, r12, r13, r14, r15;	/* 0x20 - 0x58 */
	uint64_t from_trap;	/* 0x60: entered from the SIGSYS handler */
	uint64_t pad;
	uint8_t xmm[10][16];	/* 0x70: xmm6 - xmm15 */
};
#define FRAME_SIZE	0x110
_Static_assert(sizeof(struct frame) == FRAME_SIZE, "frame size");
_Static_assert(offsetof(struct frame, from_trap) == 0x60, "frame layout");
_Static_assert(offsetof(struct frame, xmm) == 0x70, "frame layout");

struct teb {
	unsigned char pad0[TEB_SELF];
	struct teb *self;				/* TEB_SELF */
	unsigned char pad1[TEB_SELECTOR - TEB_SELF - sizeof(void *)];
	volatile uint8_t selector;			/* TEB_SELECTOR */
	unsigned char pad2[TEB_FRAME - TEB_SELECTOR - 1];
	struct frame *syscall_frame;			/* TEB_FRAME */
	char *win_stack_top;				/* TEB_WIN_STACK */
	/* The model's bookkeeping. */
	char *kstack_lo, *kstack_hi;			/* the thread's own stack */
	char *sigstack_lo, *sigstack_hi;		/* its sigaltstack */
	int signal_native;				/* PERWINE_FLAG_SIGNAL_NATIVE */
	int vma_mode;					/* selector deregistered */
	long calls[NT_MAX];				/* NT calls emulated, by number */
	long via_thunk, via_trap;			/* how they reached the dispatcher */
	long traps_vma, traps_selector;			/* SIGSYS, by si_errno */
	long retries;					/* selector traps retried in VMA mode */
	long builtin_calls;
	long stray;					/* numbers no Windows code issued */
	long wrong;					/* results the Windows side rejected */
	pid_t tid;
	volatile int suspended, resume;
	long suspends;
};
_Static_assert(offsetof(struct teb, self) == TEB_SELF, "TEB layout");
_Static_assert(offsetof(struct teb, selector) == TEB_SELECTOR, "TEB layout");
_Static_assert(offsetof(struct teb, syscall_frame) == TEB_FRAME, "TEB layout");
_Static_assert(offsetof(struct teb, win_stack_top) == TEB_WIN_STACK, "TEB layout");

static __thread struct teb *current_teb;
static int trace, suspend;
static uintptr_t libc_addr, libc_size;
static atomic_int dispatch_disabled;		/* signal_disable_syscall_dispatch() ran */

/* MINI_NTDLL_TRACE=1: progress on stderr, with no buffering in the way. */
#define TRACE(...) do { if (trace) { char b_[160]; int n_ = snprintf(b_, sizeof(b_), __VA_ARGS__); \
				     if (write(2, b_, n_ > 0 ? n_ : 0) < 0) {} } } while (0)

/* ---- The "Windows" side ---- */

typedef long __attribute__((ms_abi)) (*win_fn)(void);

static unsigned char *image;
static win_fn NtAdd4, NtCurrentTid, NtCreateFile, DrmProbe, JitCode;
static _Atomic(win_fn) builtin_work;		/* set once the builtin is loaded */

/* In assembly, below: the dispatcher, its second entry, the way in. */
void mini_syscall_dispatcher(void);
void mini_syscall_dispatcher_prolog_end(void);
long mini_call_windows(win_fn fn, const long args[11]);

/*
 * An NT syscall thunk, 32 bytes, in the layout of Wine's x86-64 thunks:
 * 00 mov r10, rcx; 03 mov eax, N; 08 test byte [0x7ffe0308], 1;
 * 10 jne 15; 12 syscall; 14 ret; 15 jmp 18; 17 ret;
 * 18 call [0x7ffe1000]; 1f ret.  SystemCall is 1, so the jne is always
 * taken: the thunk calls the dispatcher, whose return address 0x1f less
 * 0xb is the ret at 0x14.
 */
static unsigned char *emit_thunk(unsigned char *p, uint32_t nr)
{
	static const unsigned char thunk[32] = {
		0x4c, 0x8b, 0xd1,
		0xb8, 0, 0, 0, 0,
		0xf6, 0x04, 0x25, 0x08, 0x03, 0xfe, 0x7f, 0x01,
		0x75, 0x03,
		0x0f, 0x05,
		0xc3,
		0xeb, 0x01,
		0xc3,
		0xff, 0x14, 0x25, 0x00, 0x10, 0xfe, 0x7f,
		0xc3,
	};

	memcpy(p, thunk, sizeof(thunk));
	memcpy(p + 4, &nr, 4);
	return p + sizeof(thunk);
}

/* Foreign code: a DRM-style function with a raw syscall in the middle. */
static unsigned char *emit_drm(unsigned char *p)
{
	static const unsigned char code[] = {
		0x53,				/* push rbx */
		0xbb, 0x10, 0, 0, 0,		/* mov ebx, 0x10: must survive the syscall */
		0xb8, NT_DRM_PROBE, 0, 0, 0,	/* mov eax, NT_DRM_PROBE */
		0x0f, 0x05,			/* syscall */
		0x48, 0x01, 0xd8,		/* add rax, rbx */
		0x5b,				/* pop rbx */
		0xc3,				/* ret */
	};

	memcpy(p, code, sizeof(code));
	return p + 32;
}

/* The shared data page and the dispatcher pointer, at Wine's addresses. */
static int map_user_shared_data(void)
{
	unsigned char *usd;

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
	usd = mmap((void *)USER_SHARED, 0x2000, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (usd == MAP_FAILED)
		return -errno;
	if (usd != (unsigned char *)USER_SHARED) {
		munmap(usd, 0x2000);
		return -EEXIST;
	}
	*(uint32_t *)(usd + USD_SYSTEM_CALL) = 1;
	*(void (**)(void))DISPATCHER_PTR = mini_syscall_dispatcher;
	return mprotect(usd, 0x2000, PROT_READ) ? -errno : 0;
}

/* A PE image, mapped PROT_NOSYSCALL as a perwine Wine maps its views. */
static int map_image(void)
{
	unsigned char *p;

	image = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (image == MAP_FAILED)
		return -errno;
	p = image;
	NtAdd4 = (win_fn)p;
	p = emit_thunk(p, NT_ADD4);
	NtCurrentTid = (win_fn)p;
	p = emit_thunk(p, NT_CURRENT_TID);
	NtCreateFile = (win_fn)p;
	p = emit_thunk(p, NT_CREATE_FILE);
	DrmProbe = (win_fn)p;
	emit_drm(p);
	return perwine_protect(image, 4096, PROT_READ | PROT_EXEC);
}

/*
 * VirtualAlloc + write + VirtualProtect(PAGE_EXECUTE_READ): a generated
 * direct-syscall stub (mov r10, rcx; mov eax, N; syscall; ret), the kind
 * that anti-cheat and DRM code copies out of ntdll.
 */
static int generate_code(void)
{
	static const unsigned char stub[] = { 0x4c, 0x8b, 0xd1, 0xb8, NT_JIT, 0, 0, 0, 0x0f, 0x05, 0xc3 };
	unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED)
		return -errno;
	memcpy(mem, stub, sizeof(stub));
	JitCode = (win_fn)mem;
	return mprotect(mem, 4096, PROT_READ | PROT_EXEC | PROT_NOSYSCALL) ? -errno : 0;
}

/*
 * Unix code calling Windows code (as Wine's call_user_mode_callback and
 * signal_start_thread do): a syscall frame below the caller on the
 * kernel stack, then the Windows stack, and the selector at TRAP.  args
 * holds 11 arguments, passed in the Windows x64 convention.  Back from
 * the Windows code: the kernel stack, then the selector at NATIVE.  The
 * stack switches first and the selector follows, in both directions, as
 * in Wine's dispatcher.
 */
__asm__(".text\n"
	".globl mini_call_windows\n"
	".type mini_call_windows, @function\n"
	"mini_call_windows:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	push %rbx\n"
	"	push %r12\n"
	"	push %r13\n"
	"	mov %gs:" XSTR(TEB_SELF) ", %r13\n"
	"	lea -" XSTR(FRAME_SIZE) "(%rsp), %rax\n"
	"	and $-64, %rax\n"
	"	mov %rax, " XSTR(TEB_FRAME) "(%r13)\n"
	"	mov %rsp, %r12\n"
	"	mov " XSTR(TEB_WIN_STACK) "(%r13), %rax\n"
	/* 32 bytes of shadow space, then arguments 5 to 11: args[4..10]. */
	"	lea -96(%rax), %rsp\n"
	"	mov 32(%rsi), %rax\n"
	"	mov %rax, 32(%rsp)\n"
	"	mov 40(%rsi), %rax\n"
	"	mov %rax, 40(%rsp)\n"
	"	mov 48(%rsi), %rax\n"
	"	mov %rax, 48(%rsp)\n"
	"	mov 56(%rsi), %rax\n"
	"	mov %rax, 56(%rsp)\n"
	"	mov 64(%rsi), %rax\n"
	"	mov %rax, 64(%rsp)\n"
	"	mov 72(%rsi), %rax\n"
	"	mov %rax, 72(%rsp)\n"
	"	mov 80(%rsi), %rax\n"
	"	mov %rax, 80(%rsp)\n"
	"	mov 0(%rsi), %rcx\n"
	"	mov 8(%rsi), %rdx\n"
	"	mov 16(%rsi), %r8\n"
	"	mov 24(%rsi), %r9\n"
	"	movb $" XSTR(PERWINE_TRAP) ", " XSTR(TEB_SELECTOR) "(%r13)\n"
	"	call *%rdi\n"
	"	mov %r12, %rsp\n"
	"	movb $" XSTR(PERWINE_NATIVE) ", " XSTR(TEB_SELECTOR) "(%r13)\n"
	"	pop %r13\n"
	"	pop %r12\n"
	"	pop %rbx\n"
	"	pop %rbp\n"
	"	ret\n"
	".size mini_call_windows, . - mini_call_windows\n");

/* ---- The Unix side ---- */

static long create_file_sum(const long a[11])
{
	long sum = 0;

	for (int i = 0; i < 11; i++)
		sum = sum * 7 + a[i];
	return sum;
}

/*
 * The NT services.  They run on the kernel stack, outside signal
 * context, with the selector at NATIVE, as Wine's: they may take locks,
 * call libc and make native syscalls.  win_rsp is the Windows stack at
 * the syscall: the return address into the thunk's caller, 32 bytes of
 * shadow space, then arguments 5 and up.
 */
long mini_unix_syscall(long nr, long a1, long a2, long a3, long a4, const long *win_rsp);
long mini_unix_syscall(long nr, long a1, long a2, long a3, long a4, const long *win_rsp)
{
	struct teb *teb = current_teb;
	long args[11];

	TRACE("unix dispatcher: nr %#lx from %s\n", nr, teb->syscall_frame->from_trap ? "trap" : "thunk");
	if (teb->syscall_frame->from_trap)
		teb->via_trap++;
	else
		teb->via_thunk++;
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
 * The syscall dispatcher (Wine's __wine_syscall_dispatcher).  A thunk
 * calls it: the return address goes to the frame.  The SIGSYS handler
 * enters at mini_syscall_dispatcher_prolog_end with RCX the frame and
 * the return address already in it.  Either way the NT number is in
 * EAX, the first four arguments in R10, RDX, R8, R9, and RSP is the
 * Windows stack as the syscall saw it.  The Windows code expects RBX,
 * RBP, RDI, RSI, R12-R15 and XMM6-15 kept.
 */
__asm__(".text\n"
	".globl mini_syscall_dispatcher\n"
	".type mini_syscall_dispatcher, @function\n"
	"mini_syscall_dispatcher:\n"
	"	mov %gs:" XSTR(TEB_FRAME) ", %rcx\n"
	"	popq 0x00(%rcx)\n"
	"	pushfq\n"
	"	popq 0x18(%rcx)\n"
	"	movq $0, 0x60(%rcx)\n"
	".globl mini_syscall_dispatcher_prolog_end\n"
	"mini_syscall_dispatcher_prolog_end:\n"
	"	mov %rsp, 0x08(%rcx)\n"
	"	mov %rbx, 0x20(%rcx)\n"
	"	mov %rbp, 0x28(%rcx)\n"
	"	mov %rsi, 0x30(%rcx)\n"
	"	mov %rdi, 0x38(%rcx)\n"
	"	mov %r12, 0x40(%rcx)\n"
	"	mov %r13, 0x48(%rcx)\n"
	"	mov %r14, 0x50(%rcx)\n"
	"	mov %r15, 0x58(%rcx)\n"
	"	movdqa %xmm6, 0x70(%rcx)\n"
	"	movdqa %xmm7, 0x80(%rcx)\n"
	"	movdqa %xmm8, 0x90(%rcx)\n"
	"	movdqa %xmm9, 0xa0(%rcx)\n"
	"	movdqa %xmm10, 0xb0(%rcx)\n"
	"	movdqa %xmm11, 0xc0(%rcx)\n"
	"	movdqa %xmm12, 0xd0(%rcx)\n"
	"	movdqa %xmm13, 0xe0(%rcx)\n"
	"	movdqa %xmm14, 0xf0(%rcx)\n"
	"	movdqa %xmm15, 0x100(%rcx)\n"
	/* Every entry resumes 0xb before its recorded address. */
	"	subq $" XSTR(REDIRECT) ", 0x00(%rcx)\n"
	"	mov %rcx, %rbx\n"
	"	mov %gs:" XSTR(TEB_SELF) ", %r13\n"
	/* Onto the kernel stack, below the frame; then the Unix side. */
	"	mov %rcx, %rsp\n"
	"	movb $" XSTR(PERWINE_NATIVE) ", " XSTR(TEB_SELECTOR) "(%r13)\n"
	"	mov %eax, %edi\n"
	"	mov %r10, %rsi\n"
	"	mov %r8, %rcx\n"
	"	mov %r9, %r8\n"
	"	mov 0x08(%rbx), %r9\n"
	"	call mini_unix_syscall\n"
	"	mov %rbx, %rcx\n"
	"	movdqa 0x70(%rcx), %xmm6\n"
	"	movdqa 0x80(%rcx), %xmm7\n"
	"	movdqa 0x90(%rcx), %xmm8\n"
	"	movdqa 0xa0(%rcx), %xmm9\n"
	"	movdqa 0xb0(%rcx), %xmm10\n"
	"	movdqa 0xc0(%rcx), %xmm11\n"
	"	movdqa 0xd0(%rcx), %xmm12\n"
	"	movdqa 0xe0(%rcx), %xmm13\n"
	"	movdqa 0xf0(%rcx), %xmm14\n"
	"	movdqa 0x100(%rcx), %xmm15\n"
	/* Back onto the Windows stack; then the Windows side. */
	"	mov 0x08(%rcx), %rsp\n"
	"	movb $" XSTR(PERWINE_TRAP) ", " XSTR(TEB_SELECTOR) "(%r13)\n"
	"	mov 0x18(%rcx), %r11\n"
	"	mov 0x20(%rcx), %rbx\n"
	"	mov 0x28(%rcx), %rbp\n"
	"	mov 0x30(%rcx), %rsi\n"
	"	mov 0x38(%rcx), %rdi\n"
	"	mov 0x40(%rcx), %r12\n"
	"	mov 0x48(%rcx), %r13\n"
	"	mov 0x50(%rcx), %r14\n"
	"	mov 0x58(%rcx), %r15\n"
	"	jmp *0x00(%rcx)\n"
	".size mini_syscall_dispatcher, . - mini_syscall_dispatcher\n");

/* ---- Registration: the TEB byte and libc, as Wine registers them with SUD ---- */

/* libc.so.6's whole image, from its load address to its last segment's end. */
static int libc_range_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *name = strrchr(info->dlpi_name, '/');

	(void)size;
	(void)arg;
	name = name ? name + 1 : info->dlpi_name;
	if (strcmp(name, "libc.so.6"))
		return 0;
	libc_addr = info->dlpi_addr;
	libc_size = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		uintptr_t end = info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz;

		if (end > libc_size)
			libc_size = end;
	}
	return 1;
}

/* PR_WINE_DISPATCH_SET for the calling thread: selector NULL is VMA mode. */
static int set_dispatch(struct teb *teb, volatile uint8_t *selector)
{
	struct perwine_config cfg = {
		.selector = (uintptr_t)selector,
		.start = libc_addr,
		.len = libc_size,
		.flags = PERWINE_FLAG_ON | (teb->signal_native ? PERWINE_FLAG_SIGNAL_NATIVE : 0),
	};

	return prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, &cfg, sizeof(cfg), 0) ? -errno : 0;
}

/* ---- Signal handlers, the way Wine's are written ---- */

/* init_handler(): whatever was interrupted, the handler is Unix side. */
static struct teb *init_handler(void)
{
	struct teb *teb = current_teb;

	if (teb)
		teb->selector = PERWINE_NATIVE;
	return teb;
}

/*
 * leave_handler(): back to TRAP if the interrupted code was Windows
 * code, i.e. its RSP is on neither the signal stack nor the kernel
 * stack.  A frame from a SIGNAL_NATIVE kernel carries the byte that
 * rt_sigreturn puts back: it gets the same value.
 */
static void leave_handler(struct teb *teb, ucontext_t *uc)
{
	char *rsp = (char *)uc->uc_mcontext.gregs[REG_RSP];
	unsigned char *saved = perwine_context_selector(uc);

	if (!teb || (rsp >= teb->sigstack_lo && rsp < teb->sigstack_hi) ||
	    (rsp >= teb->kstack_lo && rsp < teb->kstack_hi))
		return;
	teb->selector = PERWINE_TRAP;
	if (saved)
		*saved = PERWINE_TRAP;
}

/* sigsys_handler(): redirect into the dispatcher, nothing else. */
static void sigsys_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct teb *teb = init_handler();
	greg_t *r = uc->uc_mcontext.gregs;
	unsigned char *saved = perwine_context_selector(uc);
	struct frame *frame;

	(void)sig;
	TRACE("sigsys %d nr %d\n", si->si_errno, si->si_syscall);
	if (!teb || !teb->syscall_frame || si->si_code != SYS_USER_DISPATCH) {
		r[REG_RAX] = -ENOSYS;
		if (teb)
			teb->stray++;
		return;
	}
	if (si->si_errno == PERWINE_TRAP_SELECTOR && atomic_load(&dispatch_disabled)) {
		/*
		 * Where Wine turns SUD off for this thread and retries: keep
		 * libc native, drop the selector, retry.  From PE memory the
		 * retry traps again, by the VMA check; from the builtin it runs.
		 */
		if (set_dispatch(teb, NULL) == 0) {
			teb->vma_mode = 1;
			teb->retries++;
			r[REG_RIP] -= PERWINE_SYSCALL_INSN_LEN;
		} else {
			teb->stray++;
			r[REG_RAX] = -ENOSYS;
		}
		return;
	}
	if (si->si_errno == PERWINE_TRAP_VMA)
		teb->traps_vma++;
	else
		teb->traps_selector++;
	frame = teb->syscall_frame;
	frame->rip = r[REG_RIP] + REDIRECT;
	frame->rcx = r[REG_RIP];
	frame->eflags = r[REG_EFL];
	frame->from_trap = 1;
	r[REG_RCX] = (greg_t)frame;
	r[REG_R11] = (greg_t)frame->eflags;
	r[REG_RIP] = (greg_t)mini_syscall_dispatcher_prolog_end;
	/* The dispatcher starts on the Unix side, as Wine's does (no leave_handler). */
	if (saved)
		*saved = PERWINE_NATIVE;
}

/*
 * Suspend and resume, as Wine's NtSuspendThread does with SIGUSR1.
 * SIGUSR2 is blocked while this runs (the action's mask, like Wine's
 * server_block_set) and only sigsuspend() unblocks it: a resume sent
 * between the test of the flag and the sigsuspend() then waits for it
 * instead of being lost.
 */
static void on_suspend(int sig, siginfo_t *si, void *ucv)
{
	struct teb *teb = init_handler();
	sigset_t wait;

	(void)sig;
	(void)si;
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
	leave_handler(teb, ucv);
}

static void on_resume(int sig, siginfo_t *si, void *ucv)
{
	struct teb *teb = init_handler();

	(void)sig;
	(void)si;
	if (teb)
		teb->resume = 1;
	leave_handler(teb, ucv);
}

/* ---- Threads ---- */

struct worker {
	pthread_t thread;
	struct teb *teb;
	int rounds, failed;
};

static atomic_int stop, started, halfway;

/* What init_syscall_frame() and signal_alloc_thread() set up, then PER_WINE. */
static int thread_init(struct teb *teb)
{
	stack_t ss = { .ss_size = 64 * 1024 };
	pthread_attr_t attr;
	void *kstack;
	size_t ksize;
	char *win;
	int err, pers;

	teb->self = teb;
	teb->tid = syscall(SYS_gettid);
	current_teb = teb;
	if (syscall(SYS_arch_prctl, ARCH_SET_GS, teb))
		return -errno;
	if (pthread_getattr_np(pthread_self(), &attr))
		return -EINVAL;
	err = pthread_attr_getstack(&attr, &kstack, &ksize);
	pthread_attr_destroy(&attr);
	if (err)
		return -err;
	teb->kstack_lo = kstack;
	teb->kstack_hi = (char *)kstack + ksize;
	ss.ss_sp = malloc(ss.ss_size);
	win = malloc(WIN_STACK);
	if (!ss.ss_sp || !win || sigaltstack(&ss, NULL))
		return -ENOMEM;
	teb->sigstack_lo = ss.ss_sp;
	teb->sigstack_hi = (char *)ss.ss_sp + ss.ss_size;
	teb->win_stack_top = (char *)((uintptr_t)(win + WIN_STACK) & ~15UL);
	err = set_dispatch(teb, &teb->selector);
	if (err)
		return err;
	pers = personality(0xffffffff);
	if (pers < 0 || personality((pers & ~PERWINE_PER_MASK) | PERWINE_PER_WINE) < 0)
		return -errno;
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct teb *teb = w->teb;
	long calls = 0, r, sum, a[11] = { 0 };
	int err, i, half = w->rounds / 2 > 0 ? w->rounds / 2 : 1;
	win_fn builtin;

	err = thread_init(teb);
	if (err) {
		fprintf(stderr, "mini-ntdll: thread setup: %s\n", perwine_strerror(err));
		w->failed = 1;
		atomic_fetch_add(&started, 1);
		atomic_fetch_add(&halfway, 1);
		return NULL;
	}
	atomic_fetch_add(&started, 1);
	/* Until stopped, and at least once past the switch to VMA mode. */
	for (i = 0; i < w->rounds || !atomic_load(&stop) || !teb->traps_vma; i++) {
		long id = (long)teb->tid;

		TRACE("thread %ld round %d, selector %d\n", id, i, teb->selector);
		/* Thunks: each calls the dispatcher, no syscall, no trap. */
		a[0] = id, a[1] = i, a[2] = 3, a[3] = 4;
		r = mini_call_windows(NtAdd4, a);
		teb->wrong += r != id + i + 7;
		r = mini_call_windows(NtCurrentTid, a);
		teb->wrong += r != id;
		for (int k = 0; k < 11; k++)
			a[k] = id * 100 + i * 11 + k;
		sum = create_file_sum(a);
		r = mini_call_windows(NtCreateFile, a);
		teb->wrong += r != sum;
		/* Foreign code's raw syscalls: each traps once. */
		r = mini_call_windows(DrmProbe, a);
		teb->wrong += r != 0x1010;
		r = mini_call_windows(JitCode, a);
		teb->wrong += r != 0x2000;
		calls += THUNK_CALLS + RAW_CALLS;
		/* The ELF builtin, called from Windows code: its syscalls are native. */
		builtin = atomic_load(&builtin_work);
		if (builtin) {
			r = mini_call_windows(builtin, a);
			teb->wrong += r != getpid();
			teb->builtin_calls++;
		}
		if (i + 1 == half)
			atomic_fetch_add(&halfway, 1);
	}
	sum = 0;
	for (int k = 0; k < NT_MAX; k++)
		sum += teb->calls[k];
	if (sum != calls || teb->via_thunk != i * THUNK_CALLS || teb->via_trap != i * RAW_CALLS ||
	    teb->traps_vma + teb->traps_selector != teb->via_trap || teb->retries != 1 ||
	    !teb->traps_vma || !teb->traps_selector || !teb->builtin_calls)
		w->failed = 1;
	return NULL;
}

/* The thread's gid, all four of them, as /proc shows them: 1 if all are gid. */
static int thread_has_gid(pid_t tid, gid_t gid)
{
	char path[64], line[256];
	unsigned long g[4];
	int ok = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Gid: %lu %lu %lu %lu", &g[0], &g[1], &g[2], &g[3]) == 4) {
			ok = g[0] == gid && g[1] == gid && g[2] == gid && g[3] == gid;
			break;
		}
	fclose(f);
	return ok;
}

/* Load the "ELF builtin DLL": Wine's dlopen_dll() and what it turns off. */
static int load_builtin(const char *so)
{
	void *lib = dlopen(so, RTLD_NOW);
	win_fn fn;

	if (!lib) {
		fprintf(stderr, "mini-ntdll: dlopen: %s\n", dlerror());
		return -1;
	}
	fn = (win_fn)dlsym(lib, "builtin_work");
	if (!fn) {
		fprintf(stderr, "mini-ntdll: dlsym: %s\n", dlerror());
		return -1;
	}
	/* signal_disable_syscall_dispatch(), before any thread can call it. */
	atomic_store(&dispatch_disabled, 1);
	atomic_store(&builtin_work, fn);
	return 0;
}

int main(int argc, char **argv)
{
	const char *so = argc > 1 ? argv[1] : "mini-builtin.so";
	int nthreads = argc > 2 ? atoi(argv[2]) : MAX_THREADS;
	int rounds = argc > 3 ? atoi(argv[3]) : 20;
	struct worker w[MAX_THREADS];
	struct sigaction sa;
	long total = 0, thunks = 0, vma = 0, sel = 0, retried = 0, stray = 0, wrong = 0;
	long suspends = 0, setgids = 0, seen = 0;
	gid_t base = getgid(), alt = getgid() ^ 1, gid = base;
	const char *why;
	int failed = 0, err;

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
	if (!dl_iterate_phdr(libc_range_cb, NULL)) {
		fprintf(stderr, "mini-ntdll: libc.so.6 not found\n");
		return 1;
	}
	err = map_user_shared_data();
	if (!err)
		err = map_image();
	if (!err)
		err = generate_code();
	if (err) {
		fprintf(stderr, "mini-ntdll: setup: %s\n", perwine_strerror(err));
		return 1;
	}
	/* Wine's handlers: one mask (server_block_set), SA_ONSTACK. */
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGALRM);
	sigaddset(&sa.sa_mask, SIGIO);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGHUP);
	sigaddset(&sa.sa_mask, SIGQUIT);
	sigaddset(&sa.sa_mask, SIGUSR1);
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaddset(&sa.sa_mask, SIGCHLD);
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sa.sa_sigaction = sigsys_handler;
	sigaction(SIGSYS, &sa, NULL);
	sa.sa_sigaction = on_suspend;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_sigaction = on_resume;
	sigaction(SIGUSR2, &sa, NULL);

	for (int i = 0; i < nthreads; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].teb = aligned_alloc(64, (sizeof(struct teb) + 63) & ~63UL);
		if (!w[i].teb) {
			fprintf(stderr, "mini-ntdll: out of memory\n");
			return 1;
		}
		memset(w[i].teb, 0, sizeof(struct teb));
		w[i].teb->signal_native = i & 1;
		w[i].rounds = rounds;
		if (pthread_create(&w[i].thread, NULL, worker_main, &w[i])) {
			fprintf(stderr, "mini-ntdll: cannot start thread %d\n", i);
			return 1;
		}
	}
	TRACE("all %d threads started\n", nthreads);
	while (atomic_load(&halfway) < nthreads)
		sched_yield();
	/* Halfway through: an ELF builtin is loaded. */
	if (load_builtin(so))
		return 1;
	/* While the threads run Windows code: suspend/resume, and setgid(). */
	for (int round = 0; round < 4 * nthreads; round++) {
		struct worker *target = &w[(round / 4) % nthreads];

		if (round % 8 == 0) {
			/* Back and forth between two gids when allowed (root). */
			gid_t want = gid == base ? alt : base;

			if (setgid(want) == 0) {
				int all = 1;

				for (int i = 0; i < nthreads; i++)
					all &= w[i].failed || thread_has_gid(w[i].teb->tid, want);
				seen += all;
				failed |= !all;
				gid = want;
			} else if (setgid(gid) != 0) {
				failed = 1;
			}
			setgids++;
		}
		if (!suspend || round % 4 || target->failed)
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
	if (gid != base && setgid(base) != 0)
		failed = 1;
	atomic_store(&stop, 1);
	TRACE("stopping\n");
	for (int i = 0; i < nthreads; i++) {
		struct teb *teb = w[i].teb;

		pthread_join(w[i].thread, NULL);
		for (int k = 0; k < NT_MAX; k++)
			total += teb->calls[k];
		thunks += teb->via_thunk;
		vma += teb->traps_vma;
		sel += teb->traps_selector;
		retried += teb->retries;
		stray += teb->stray + teb->calls[NT_CLOSE];
		wrong += teb->wrong;
		suspends += teb->suspends;
		failed |= w[i].failed;
	}
	printf("mini-ntdll: %d threads, %ld NT calls emulated (%ld through thunks, raw syscalls "
	       "trapped: %ld by the VMA check, %ld by the selector), %ld switched to VMA mode, "
	       "%ld wrong, %ld stray, %ld suspends, %ld setgid broadcasts, %ld seen in every thread\n",
	       nthreads, total, thunks, vma, sel, retried, wrong, stray, suspends, setgids, seen);
	if (failed || wrong || stray || suspends != (suspend ? nthreads : 0) ||
	    total != thunks + vma + sel || retried != nthreads) {
		printf("mini-ntdll: FAILED\n");
		return 1;
	}
	printf("mini-ntdll: ok\n");
	return 0;
}
