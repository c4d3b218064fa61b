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

/*
 * Strict ISO C (-std=c11) gets no POSIX declarations from <signal.h>:
 * siginfo_t then comes from glibc's own header; struct sigaction is
 * only used through pointers.
 */
#if defined(__GLIBC__) && !defined(__USE_POSIX199309)
#include <bits/types/siginfo_t.h>
#endif
#include <sys/ucontext.h>
struct sigaction;

/* The version of this header; perwine_version() gives the library's. */
#define PERWINE_VERSION_MAJOR	0
#define PERWINE_VERSION_MINOR	3
#define PERWINE_VERSION_MICRO	0

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Kernel ABI (uapi linux/personality.h, linux/prctl.h, asm/mman.h) ---- */

/*
 * The personality type that turns enforcement on (low byte of
 * personality()): PER_WINE in a patched kernel's <linux/personality.h>.
 * That header declares it as an enum member, so this header must not
 * define a PER_WINE of its own: it would break that header when
 * included after this one.
 */
#define PERWINE_PER_WINE	0x0011
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
	uint64_t redirect;	/* ABI v3: PERWINE_FLAG_REDIRECT's entry */
	uint64_t redirect_info;	/* ABI v3: a struct perwine_redirect_info, or 0 */
};
#endif /* PR_WINE_DISPATCH */

/* ABI v2: the size-versioned SET, and the flags it takes. */
#ifndef PR_WINE_DISPATCH_SET
#define PR_WINE_DISPATCH_SET	3
#endif
#ifndef PERWINE_FLAG_ON
#define PERWINE_FLAG_ON		0x1
#endif
#ifndef PERWINE_FLAG_SIGNAL_NATIVE
#define PERWINE_FLAG_SIGNAL_NATIVE	0x2	/* the selector follows signal delivery */
#endif
#ifndef PERWINE_CONFIG_SIZE_VER0
#define PERWINE_CONFIG_SIZE_VER0	32	/* its first version, without the redirect */
#endif

/*
 * ABI v3: a trapped 64-bit syscall returns to the entry at
 * perwine_config.redirect, registers untouched but RIP, instead of
 * raising SIGSYS; the kernel first fills the optional record at
 * perwine_config.redirect_info.
 */
#ifndef PERWINE_FLAG_REDIRECT
#define PERWINE_FLAG_REDIRECT	0x8
#endif
/* ABI v3: dispatch on by the configuration alone, whatever the personality. */
#ifndef PERWINE_FLAG_ACTIVATE
#define PERWINE_FLAG_ACTIVATE	0x4
#endif
#ifndef PERWINE_CONFIG_SIZE_VER1
#define PERWINE_CONFIG_SIZE_VER1	48	/* with redirect and redirect_info */
struct perwine_redirect_info {
	uint32_t cause;		/* PERWINE_TRAP_SELECTOR or PERWINE_TRAP_VMA */
	uint32_t nr;		/* the syscall number */
	uint64_t site;		/* address of the syscall instruction */
};
#endif

/* ABI v2: a stopped tracee's configuration (addr = size, data = config). */
#ifndef PTRACE_GET_PERWINE_CONFIG
#define PTRACE_GET_PERWINE_CONFIG	0x4260
#define PTRACE_SET_PERWINE_CONFIG	0x4261
#endif

/*
 * With PERWINE_FLAG_SIGNAL_NATIVE, a signal frame carries the selector
 * byte the handler interrupted (UC_PERWINE_SELECTOR* in a patched
 * kernel's asm/ucontext.h); perwine_context_selector() finds it.
 * 64-bit and x32 frames: PERWINE_UC_SELECTOR_SC in uc_flags, and the
 * word uc_mcontext.__reserved1[0] is PERWINE_UC_SELECTOR_MAGIC plus the
 * byte.  ia32 frames: PERWINE_UC_SELECTOR in uc_flags, the byte in its
 * bits 16-23.
 */
#define PERWINE_UC_SELECTOR		0x100
#define PERWINE_UC_SELECTOR_SHIFT	16
#define PERWINE_UC_SELECTOR_SC		0x200
#define PERWINE_UC_SELECTOR_MAGIC	0x454e495752455000ULL

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

/* ---- libperwine ---- */

/*
 * The calling thread's selector byte, owned by the library.  It is
 * initial-exec TLS so that storing to it needs no call into the loader,
 * from the transitions as from the SIGSYS handler.
 */
extern __thread volatile uint8_t perwine_thread_selector
	__attribute__((tls_model("initial-exec")));
#define PERWINE_THREAD_SELECTOR	(&perwine_thread_selector)

/*
 * Transitions: a byte store each (plus the TLS address load of an
 * initial-exec variable, from the GOT in a shared object), no syscall.
 * perwine_trap() before
 * entering "Windows" code, perwine_native() when back on the Unix side.
 * They act on PERWINE_THREAD_SELECTOR; a thread enabled with a selector
 * of its own stores to that byte itself.
 */
static inline void perwine_native(void)
{
	perwine_thread_selector = PERWINE_NATIVE;
	__asm__ __volatile__("" ::: "memory");
}

static inline void perwine_trap(void)
{
	__asm__ __volatile__("" ::: "memory");
	perwine_thread_selector = PERWINE_TRAP;
}

/* 1 when this kernel and CPU can do perwine; else 0 and why in *reason. */
int perwine_available(const char **reason);

/*
 * How perwine_set_dispatcher() hands a trap to its callback here:
 * PERWINE_MECHANISM_REDIRECT where the kernel returns trapped syscalls to
 * the library's entry (ABI v3, no signal), PERWINE_MECHANISM_SIGSYS
 * elsewhere.  The environment variable PERWINE_REDIRECT=0 asks for
 * SIGSYS, for debugging and for tests of both ways.
 */
#define PERWINE_MECHANISM_SIGSYS	1
#define PERWINE_MECHANISM_REDIRECT	2
int perwine_trap_mechanism(void);

/* A message for a -errno returned by a perwine_* function. */
const char *perwine_strerror(int err);

/* The running library's version, "MAJOR.MINOR.MICRO". */
const char *perwine_version(void);

/*
 * Per thread: register selector (or NULL: PROT_NOSYSCALL regions only)
 * with the library's always-native range, then switch the personality
 * type to PERWINE_PER_WINE, keeping the personality flags; where a
 * sandbox refuses that personality, switch dispatch on with
 * PERWINE_FLAG_ACTIVATE instead (ABI v3).  0 or -errno.
 */
int perwine_enable(volatile uint8_t *selector);
int perwine_disable(void);

/* Handles one trapped syscall; returns what RAX gets (-errno style). */
typedef long (*perwine_callback)(long nr, const long args[6], void *ctx);

/*
 * Process wide: install the dispatcher that calls cb for every trapped
 * syscall (cb NULL: put back the previous SIGSYS action).  Threads
 * enabled afterwards, and the calling thread, get their traps through
 * the redirect entry where perwine_trap_mechanism() says so; SIGSYS
 * reaches the same callback everywhere else.
 */
int perwine_set_dispatcher(perwine_callback cb, void *ctx);

/*
 * The context dispatcher, for emulators without a SIGSYS handler of
 * their own (Wine keeps its own sigaction and only registers its TEB
 * byte, see perwine-wine(7)): the
 * handler gets the trap's whole ucontext (every register, the stack with
 * the NT arguments past the fourth, RIP and RSP to redirect) and sets
 * the result itself.  On a kernel with SIGNAL_NATIVE it runs with the
 * selector NATIVE, and perwine_context_selector(uc) points at the byte
 * the thread resumes with (TRAP unless the handler changes it).
 */
typedef void (*perwine_context_handler)(ucontext_t *uc, const siginfo_t *si, void *ctx);

/* perwine_set_context_dispatcher() flags. */
#define PERWINE_DISPATCH_ONSTACK	0x1	/* run on the thread's sigaltstack */

/*
 * Process wide, like perwine_set_dispatcher(), which it replaces (and
 * which replaces it); handler NULL removes the dispatcher.  0 or -errno.
 */
int perwine_set_context_dispatcher(perwine_context_handler handler, void *ctx, unsigned int flags);

/*
 * In a signal handler: the selector byte saved in the frame, which
 * rt_sigreturn writes back (PERWINE_FLAG_SIGNAL_NATIVE); NULL when the
 * frame carries none.  Store PERWINE_NATIVE or PERWINE_TRAP only: any
 * other byte makes rt_sigreturn fail (SIGSEGV).
 */
unsigned char *perwine_context_selector(ucontext_t *uc);

/* Inside the callback: the siginfo of the trap being handled, else NULL. */
const siginfo_t *perwine_trap_info(void);

/*
 * sigaction() for handlers of other signals: the handler runs with the
 * selector at NATIVE and the interrupted value comes back on return.
 * On a kernel with SIGNAL_NATIVE that is the kernel's doing and this is
 * sigaction(); on an older one the library wraps the handler.  SIGSYS
 * belongs to the dispatcher; glibc's reserved signals (32, 33) are
 * refused.  0 or -errno.
 */
int perwine_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* A syscall that never traps: it runs from the always-native range. */
long perwine_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6);

/* perwine_map_code() flags. */
#define PERWINE_MAP_NATIVE	0x1	/* leave out PROT_NOSYSCALL */

/*
 * Copy len bytes of machine code into new read+exec pages that carry
 * PROT_NOSYSCALL (unless PERWINE_MAP_NATIVE): *addr gets their address.
 */
int perwine_map_code(const void *code, size_t len, unsigned int flags, void **addr);
int perwine_unmap_code(void *addr, size_t len);

/* mprotect(addr, len, prot | PROT_NOSYSCALL) with -errno returns. */
int perwine_protect(void *addr, size_t len, int prot);

#ifdef __cplusplus
}
#endif

#endif /* PERWINE_H */
