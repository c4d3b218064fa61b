/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rawsys.h: what rawsyscall.c and syscallbench.c share.  Both are
 * Windows console programs (x86_64-w64-mingw32-gcc -O2, kernel32 and
 * the C runtime only) that issue raw `syscall` instructions the way DRM
 * and anti-cheat code does, and check every result.
 *
 * How Wine 11.10 handles such a syscall (dlls/ntdll/unix/signal_x86_64.c):
 * Syscall User Dispatch (or perwine) raises SIGSYS, sigsys_handler points
 * the thread at __wine_syscall_dispatcher with the trapping RIP + 0xb as
 * return address, the dispatcher takes the service number from EAX, the
 * arguments from R10, RDX, R8, R9 and [RSP+0x28...] as an ntdll thunk
 * would, subtracts 0xb again and returns just after the syscall
 * instruction.  So a stub only has to be called like a normal Win64
 * function: its stack at the syscall must be the caller's, with the
 * return address at [RSP].
 *
 * A syscall that Wine does not catch runs as a Linux syscall with the NT
 * service number in EAX.  The Linux ABI reads its arguments from RDI,
 * RSI, RDX, R10, R8, R9; the NT ABI leaves RDI and RSI alone (they are
 * callee-saved in Win64), so they hold whatever the caller had.  To make
 * a missed trap harmless and its result recognisable, every stub here is
 * entered through rawsys_call(), which zeroes RDI and RSI first: with
 * Wine 11.10's numbering the three services used below then become
 * arch_prctl(0, 0) and rt_sigprocmask(0, NULL, ...) (both -EINVAL) and
 * alarm(0) (returns 0, so that check looks at what was written back, not
 * at the status).
 */
#ifndef RAWSYS_H
#define RAWSYS_H

/* mingw's own printf/scanf, so that %llx, %zu and %lld mean what C99 says. */
#ifndef __USE_MINGW_ANSI_STDIO
#define __USE_MINGW_ANSI_STDIO 1
#endif

#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

/*
 * The TEB from %gs:0x30, its self pointer.  Not mingw's NtCurrentTeb():
 * gcc 12 warns (-Warray-bounds) on the __readgsqword() behind it.
 */
static inline void *rs_teb(void)
{
	void *teb;

	__asm__("movq %%gs:0x30, %0" : "=r"(teb));
	return teb;
}
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* printf-style checking of our own printf-like functions, against the
 * printf that __USE_MINGW_ANSI_STDIO selects. */
#ifdef __MINGW_PRINTF_FORMAT
#define RS_PRINTF(f, a) __attribute__((format(__MINGW_PRINTF_FORMAT, f, a)))
#else
#define RS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#endif

#if !defined(__x86_64__)
#error "x86-64 only: build with x86_64-w64-mingw32-gcc"
#endif

/*
 * ULONG_PTR rawsys_call(fn, a1, a2, a3, a4, a5): call FN as a Win64
 * function with five arguments (the fifth on the stack at [RSP+0x28] as
 * FN sees it, where Wine's dispatcher looks for it) and RDI = RSI = 0;
 * returns the whole of RAX, so that a Linux -errno (upper half all ones)
 * can be told from an NTSTATUS.
 */
extern ULONG_PTR rawsys_call(const void *fn, ULONG_PTR a1, ULONG_PTR a2, ULONG_PTR a3,
			     ULONG_PTR a4, ULONG_PTR a5);
/* Ends in .text, as the compiler expects of top-level asm (Wine's
 * __ASM_GLOBAL_FUNC does the same). */
__asm__(".text\n"
	".p2align 4\n"
	".globl rawsys_call\n"
	".def rawsys_call; .scl 2; .type 32; .endef\n"
	".seh_proc rawsys_call\n"
	"rawsys_call:\n"
	"	pushq %rdi\n"
	"	.seh_pushreg %rdi\n"
	"	pushq %rsi\n"
	"	.seh_pushreg %rsi\n"
	/* 0x20 of home space, one stack argument, 8 to realign to 16. */
	"	subq $0x38, %rsp\n"
	"	.seh_stackalloc 0x38\n"
	"	.seh_endprologue\n"
	"	movq %rcx, %rax\n"
	"	movq %rdx, %rcx\n"
	"	movq %r8, %rdx\n"
	"	movq %r9, %r8\n"
	/* Our 5th and 6th arguments, above 0x38 + two pushes + return address + home space. */
	"	movq 0x70(%rsp), %r9\n"
	"	movq 0x78(%rsp), %r10\n"
	"	movq %r10, 0x20(%rsp)\n"
	"	xorl %edi, %edi\n"
	"	xorl %esi, %esi\n"
	"	callq *%rax\n"
	"	addq $0x38, %rsp\n"
	"	popq %rsi\n"
	"	popq %rdi\n"
	"	ret\n"
	".seh_endproc\n");

/* The services used, in the order of rs_func_names[]. */
enum rs_func { RS_GCPN, RS_SETEVENT, RS_QIT, RS_NFUNCS };

static const char *const rs_func_names[RS_NFUNCS] = {
	"NtGetCurrentProcessorNumber",
	"NtSetEvent",
	"NtQueryInformationThread",
};

/* THREAD_BASIC_INFORMATION, spelled out so as not to depend on which
 * winternl.h (mingw-w64's or Wine's) declares it. */
struct rs_thread_basic_info {
	LONG exit_status;
	void *teb;
	HANDLE unique_process;
	HANDLE unique_thread;
	ULONG_PTR affinity_mask;
	LONG priority;
	LONG base_priority;
};
_Static_assert(sizeof(struct rs_thread_basic_info) == 48, "THREAD_BASIC_INFORMATION is 48 bytes on x64");

#define RS_THREAD_BASIC_INFORMATION 0	/* THREADINFOCLASS ThreadBasicInformation */

struct rs_ctx {
	const void *exports[RS_NFUNCS];	/* ntdll's stubs */
	unsigned int nr[RS_NFUNCS];	/* their service numbers, read from the stubs */
	HANDLE event;			/* manual-reset, for NtSetEvent */
	DWORD ncpu;
};

/* What a service number means to Linux if Wine misses the trap: only
 * for the messages. */
static inline const char *rs_linux_name(unsigned int nr)
{
	switch (nr) {
	case 14: return "rt_sigprocmask";
	case 37: return "alarm";
	case 158: return "arch_prctl";
	default: return "?";
	}
}

/*
 * The service number of an x64 ntdll stub: Windows' and Wine's both
 * start with 4c 8b d1 (mov r10, rcx) and b8 imm32 (mov eax, imm32).
 * Read at run time, never hard-coded: Wine renumbers its services when
 * it adds some (since 9.x it follows Windows' numbering), and a program
 * that hard-codes them breaks on the next version, which is why DRM
 * reads them this way too.
 */
static inline int rs_stub_number(const void *stub, unsigned int *nr)
{
	const unsigned char *p = stub;
	uint32_t imm;

	if (!p || p[0] != 0x4c || p[1] != 0x8b || p[2] != 0xd1 || p[3] != 0xb8)
		return 0;
	memcpy(&imm, p + 4, sizeof(imm));
	*nr = imm;
	return 1;
}

/*
 * Write the stub DRM code generates, 11 bytes:
 *   mov r10, rcx; mov eax, NR; syscall; ret
 * Returns its length.
 */
static inline size_t rs_emit_stub(unsigned char *p, unsigned int nr)
{
	static const unsigned char head[] = { 0x4c, 0x8b, 0xd1, 0xb8 };
	static const unsigned char tail[] = { 0x0f, 0x05, 0xc3 };
	uint32_t imm = nr;

	memcpy(p, head, sizeof(head));
	memcpy(p + 4, &imm, sizeof(imm));
	memcpy(p + 8, tail, sizeof(tail));
	return 11;
}

/* Look up the three exports, read their numbers, make the event.
 * Returns 0 and a reason in WHY on failure. */
static inline int rs_init(struct rs_ctx *ctx, char *why, size_t n)
{
	HMODULE ntdll = GetModuleHandleA("ntdll.dll");
	SYSTEM_INFO si;
	int i;

	memset(ctx, 0, sizeof(*ctx));
	if (!ntdll) {
		snprintf(why, n, "no ntdll.dll module");
		return 0;
	}
	for (i = 0; i < RS_NFUNCS; i++) {
		ctx->exports[i] = (const void *)(ULONG_PTR)GetProcAddress(ntdll, rs_func_names[i]);
		if (!ctx->exports[i]) {
			snprintf(why, n, "ntdll has no export %s", rs_func_names[i]);
			return 0;
		}
		if (!rs_stub_number(ctx->exports[i], &ctx->nr[i])) {
			const unsigned char *p = ctx->exports[i];

			snprintf(why, n, "%s at %p does not start with mov r10,rcx; mov eax,imm32 "
				 "(%02x %02x %02x %02x): hooked, or not an x64 syscall stub",
				 rs_func_names[i], ctx->exports[i], p[0], p[1], p[2], p[3]);
			return 0;
		}
	}
	/*
	 * Uncaught, NtSetEvent becomes rt_sigprocmask with the handle as
	 * sigsetsize, which only fails (-EINVAL) when that is not 8 (then it
	 * would succeed and store the signal mask in PreviousState).  Handles
	 * are small multiples of 4, so 8 is possible: keep such an event
	 * open and take the next one.
	 */
	ctx->event = CreateEventA(NULL, TRUE, FALSE, NULL);
	if (ctx->event == (HANDLE)8)
		ctx->event = CreateEventA(NULL, TRUE, FALSE, NULL);
	if (!ctx->event) {
		snprintf(why, n, "CreateEvent failed, error %lu", (unsigned long)GetLastError());
		return 0;
	}
	GetSystemInfo(&si);
	ctx->ncpu = si.dwNumberOfProcessors;
	return 1;
}

/* Explain a wrong RAX: a Linux -errno means the syscall reached Linux. */
static inline void rs_describe_rax(char *buf, size_t n, ULONG_PTR rax, unsigned int nr)
{
	LONG_PTR v = (LONG_PTR)rax;

	if (v < 0 && v >= -4095)
		snprintf(buf, n, "rax %#llx is a Linux -errno (%lld): the syscall reached Linux as "
			 "syscall %u (%s)", (unsigned long long)rax, (long long)-v, nr, rs_linux_name(nr));
	else
		snprintf(buf, n, "rax %#llx", (unsigned long long)rax);
}

/*
 * Call service FUNC through FN (an export, a stub, a copy) once and check
 * what it did, not only its status: a wrong emulation, or a Linux
 * syscall that happens to return 0, must not pass.  Returns 1 if right,
 * else 0 with the reason in WHY.
 */
static inline int rs_call_checked(const struct rs_ctx *ctx, enum rs_func func, const void *fn,
				  char *why, size_t n)
{
	unsigned int nr = ctx->nr[func];
	char rax_why[160];
	ULONG_PTR rax;

	why[0] = 0;
	switch (func) {
	case RS_GCPN: {
		ULONG cpu;

		rax = rawsys_call(fn, 0, 0, 0, 0, 0);
		cpu = (ULONG)rax;
		/* The thread may move between two reads: any valid number will do. */
		if (cpu < ctx->ncpu || cpu == GetCurrentProcessorNumber()) {
			snprintf(why, n, "processor %lu of %lu", (unsigned long)cpu, (unsigned long)ctx->ncpu);
			return 1;
		}
		rs_describe_rax(rax_why, sizeof(rax_why), rax, nr);
		snprintf(why, n, "processor %lu is not one of the %lu: %s", (unsigned long)cpu,
			 (unsigned long)ctx->ncpu, rax_why);
		return 0;
	}
	case RS_SETEVENT: {
		/* Two LONGs: room for what a mistaken rt_sigprocmask would store. */
		LONG prev[2] = { 0x5a5a5a5a, 0x5a5a5a5a };
		LONG status;
		DWORD wait;

		if (!ResetEvent(ctx->event)) {
			snprintf(why, n, "ResetEvent failed, error %lu", (unsigned long)GetLastError());
			return 0;
		}
		rax = rawsys_call(fn, (ULONG_PTR)ctx->event, (ULONG_PTR)prev, 0, 0, 0);
		status = (LONG)(ULONG)rax;
		wait = WaitForSingleObject(ctx->event, 0);
		if (status == 0 && wait == WAIT_OBJECT_0 && prev[0] == 0) {
			snprintf(why, n, "event signaled, previous state 0");
			return 1;
		}
		rs_describe_rax(rax_why, sizeof(rax_why), rax, nr);
		snprintf(why, n, "status %#lx, event %s, previous state %#lx: %s", (unsigned long)status,
			 wait == WAIT_OBJECT_0 ? "signaled" : "not signaled", (unsigned long)prev[0], rax_why);
		return 0;
	}
	case RS_QIT: {
		struct rs_thread_basic_info info;
		ULONG len = 0xdeadbeef;
		LONG status;

		/* Filled with a pattern, so that nothing written back shows. */
		memset(&info, 0xcc, sizeof(info));
		rax = rawsys_call(fn, (ULONG_PTR)GetCurrentThread(), RS_THREAD_BASIC_INFORMATION,
				  (ULONG_PTR)&info, sizeof(info), (ULONG_PTR)&len);
		status = (LONG)(ULONG)rax;
		if (status == 0 && len == sizeof(info) && info.teb == rs_teb() &&
		    info.unique_thread == (HANDLE)(ULONG_PTR)GetCurrentThreadId() &&
		    info.unique_process == (HANDLE)(ULONG_PTR)GetCurrentProcessId()) {
			snprintf(why, n, "TEB %p, client id %lx.%lx", info.teb,
				 (unsigned long)GetCurrentProcessId(), (unsigned long)GetCurrentThreadId());
			return 1;
		}
		rs_describe_rax(rax_why, sizeof(rax_why), rax, nr);
		if (status == 0 && len == 0xdeadbeef)
			snprintf(why, n, "status 0 but nothing written back (as Linux syscall %u, %s, "
				 "would do): %s", nr, rs_linux_name(nr), rax_why);
		else
			snprintf(why, n, "status %#lx, length %lu, TEB %p (ours %p), client id %p.%p "
				 "(ours %lx.%lx): %s", (unsigned long)status, (unsigned long)len, info.teb,
				 rs_teb(), info.unique_process, info.unique_thread,
				 (unsigned long)GetCurrentProcessId(), (unsigned long)GetCurrentThreadId(),
				 rax_why);
		return 0;
	}
	default:
		snprintf(why, n, "no such service");
		return 0;
	}
}

/* The mode the Wine patches were asked for, for the messages. */
static inline const char *rs_mode(void)
{
	const char *m = getenv("WINEPERWINE");

	return m && *m ? m : NULL;
}

/* Wine's version, or NULL when not running on Wine. */
static inline const char *rs_wine_version(void)
{
	const char *(CDECL *get)(void);

	get = (const char *(CDECL *)(void))(ULONG_PTR)
		GetProcAddress(GetModuleHandleA("ntdll.dll"), "wine_get_version");
	return get ? get() : NULL;
}

#endif /* RAWSYS_H */
