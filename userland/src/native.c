// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The always-native range: code whose syscalls the kernel never traps,
 * because every thread registers [perwine_native_begin, perwine_native_end)
 * as its always-native range.  Kept in assembly so that nothing the
 * compiler emits can land inside it.
 */
#include <sys/syscall.h>

#include "internal.h"

#define STR(x) #x
#define XSTR(x) STR(x)

/* An indirect branch target (the PLT jumps to perwine_syscall) under CET IBT. */
#ifdef __CET__
#define ENDBR "	endbr64\n"
#else
#define ENDBR ""
#endif

__asm__(".text\n"
	".balign 16\n"
	".globl perwine_native_begin\n"
	".hidden perwine_native_begin\n"
	"perwine_native_begin:\n"

	/* SA_RESTORER of the dispatcher: the sigreturn after every trap. */
	".globl perwine_restorer\n"
	".hidden perwine_restorer\n"
	".type perwine_restorer, @function\n"
	"perwine_restorer:\n"
	"	mov $" XSTR(SYS_rt_sigreturn) ", %eax\n"
	"	syscall\n"
	"	hlt\n"
	".size perwine_restorer, . - perwine_restorer\n"

	/* long perwine_syscall(nr, a1, a2, a3, a4, a5, a6) */
	".globl perwine_syscall\n"
	".type perwine_syscall, @function\n"
	".globl perwine_native_syscall\n"
	".hidden perwine_native_syscall\n"
	"perwine_syscall:\n"
	"perwine_native_syscall:\n"
	ENDBR
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	mov %rdx, %rsi\n"
	"	mov %rcx, %rdx\n"
	"	mov %r8, %r10\n"
	"	mov %r9, %r8\n"
	"	mov 8(%rsp), %r9\n"
	"	syscall\n"
	"	ret\n"
	".size perwine_syscall, . - perwine_syscall\n"

	".globl perwine_native_end\n"
	".hidden perwine_native_end\n"
	"perwine_native_end:\n");
