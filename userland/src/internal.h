/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libperwine internals shared by the files of src/. */
#ifndef PERWINE_INTERNAL_H
#define PERWINE_INTERNAL_H

#include <stdint.h>

#include "perwine.h"

#define PERWINE_HIDDEN __attribute__((visibility("hidden")))

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
	int old_type;			/* personality type before enable */
	const siginfo_t *trap;		/* trap being handled, for perwine_trap_info() */
};

extern __thread struct perwine_thread perwine_self
	__attribute__((tls_model("initial-exec"))) PERWINE_HIDDEN;

#endif
