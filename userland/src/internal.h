/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libperwine internals shared by the files of src/. */
#ifndef PERWINE_INTERNAL_H
#define PERWINE_INTERNAL_H

#include <stdint.h>

#include "perwine.h"

#define PERWINE_HIDDEN __attribute__((visibility("hidden")))

/* A macro's value as a string: version numbers, assembly constants. */
#define PERWINE_STR_(x) #x
#define PERWINE_STR(x) PERWINE_STR_(x)

/*
 * The always-native range registered for every thread: the restorer of
 * the SIGSYS dispatcher and perwine_syscall() (native.c).  Their syscalls
 * must run whatever the selector says, or no trap could ever return.
 */
extern const char perwine_native_begin[] PERWINE_HIDDEN;
extern const char perwine_native_end[] PERWINE_HIDDEN;
void perwine_restorer(void) PERWINE_HIDDEN;

/* perwine_syscall() without the PLT: the library's own native syscalls. */
long perwine_native_syscall(long nr, long a1, long a2, long a3, long a4, long a5,
			    long a6) PERWINE_HIDDEN;

/* What perwine_enable() registered for the calling thread. */
struct perwine_thread {
	volatile uint8_t *selector;	/* NULL: PROT_NOSYSCALL regions only */
	int enabled;
	int redirect;			/* PERWINE_FLAG_REDIRECT is registered */
	int activate;			/* PERWINE_FLAG_ACTIVATE, not the personality */
	int old_type;			/* personality type before enable */
	const siginfo_t *trap;		/* trap being handled, for perwine_trap_info() */
	struct perwine_redirect_trap *redirected; /* the redirect being handled */
};

/* A redirected trap, whose siginfo perwine_trap_info() builds on demand. */
struct perwine_redirect_trap {
	siginfo_t si;
	int si_built;
	int cause;			/* PERWINE_TRAP_* */
	long nr;
	unsigned long site;		/* the syscall instruction */
};

/* The redirect entry (dispatch.c): where the kernel returns a trap. */
void perwine_redirect_entry(void) PERWINE_HIDDEN;
/* What it saves the extended state with: XSAVE and its area's size. */
extern unsigned long perwine_xsave_size PERWINE_HIDDEN;
extern int perwine_xsave PERWINE_HIDDEN;
/* Whether the dispatcher installed now takes redirected traps. */
int perwine_dispatcher_redirects(void) PERWINE_HIDDEN;
/* ABI v2 (SET, SIGNAL_NATIVE), asked of the kernel once (dispatch.c). */
int perwine_kernel_signal_native(void) PERWINE_HIDDEN;
/* Register or drop the redirect for the calling, enabled thread. */
int perwine_thread_redirect(int on) PERWINE_HIDDEN;

extern __thread struct perwine_thread perwine_self
	__attribute__((tls_model("initial-exec"))) PERWINE_HIDDEN;

#endif
