/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perwine.h - fast syscall dispatch for Windows-on-Linux emulators
 *
 * The one public header of libperwine.  It carries the kernel ABI
 * constants (with fallbacks for kernel headers that predate perwine),
 * the inline selector stores and the library's API.  See perwine(7).
 */
#ifndef PERWINE_H
#define PERWINE_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Kernel ABI (uapi linux/personality.h, linux/prctl.h, asm/mman.h) ---- */

/* Personality type that turns enforcement on (low byte of personality()). */
#ifndef PER_WINE
#define PER_WINE		0x0011
#endif
#define PERWINE_PER_MASK	0x00ff	/* PER_MASK: the personality type byte */

#ifndef PR_WINE_DISPATCH
#define PR_WINE_DISPATCH	0x57494e45	/* "WINE" */
#define PR_WINE_DISPATCH_OFF	0
#define PR_WINE_DISPATCH_ON	1
#define PR_WINE_DISPATCH_GET	2

/* Values of the selector byte. */
#define PERWINE_NATIVE		0
#define PERWINE_TRAP		1

/* si_errno of the SIGSYS: which check trapped the syscall. */
#define PERWINE_TRAP_SELECTOR	1
#define PERWINE_TRAP_VMA	2

/* perwine_config.flags: dispatch is on. */
#define PERWINE_CONFIG_ON	0x1

/* Filled by prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, cfg, sizeof(*cfg), 0). */
struct perwine_config {
	uint64_t selector;
	uint64_t start;
	uint64_t len;
	uint32_t flags;
	uint32_t reserved;
};
#endif /* PR_WINE_DISPATCH */

/* mmap/mprotect/pkey_mprotect: syscalls from these pages trap (x86-64). */
#ifndef PROT_NOSYSCALL
#define PROT_NOSYSCALL		0x40
#endif

/* si_code of the SIGSYS, shared with Syscall User Dispatch. */
#ifndef SYS_USER_DISPATCH
#define SYS_USER_DISPATCH	2
#endif

/* Length of the x86-64 syscall instruction (0f 05). */
#define PERWINE_SYSCALL_INSN_LEN	2

#ifdef __cplusplus
}
#endif

#endif /* PERWINE_H */
