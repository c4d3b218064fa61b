/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * elfdll.h: the interface between rawsyscall.exe (a PE program) and
 * elfdll.dll.so (an ELF "winelib" builtin DLL, built with winegcc), so
 * that both sides agree on it.  Include after <windows.h>.
 */
#ifndef PERWINE_ELFDLL_H
#define PERWINE_ELFDLL_H

#include <stdint.h>

/* The version of this structure: the caller stores sizeof() in size. */
struct perwine_elfdll_probe {
	uint32_t size;
	uint32_t is_elf;	/* 1: the library was built as ELF (__ELF__) */
	int64_t raw_getppid;	/* a raw Linux syscall (getppid) from the library's own code */
	int64_t libc_getppid;	/* the same through libc, whose syscalls always run natively */
	int64_t libc_getpid;	/* the Unix pid, which differs from Wine's GetCurrentProcessId() */
};

#define PERWINE_ELFDLL_PROBE "perwine_elfdll_probe"

/* The export: fills *p, returns 1, or 0 if p->size is not sizeof(*p). */
typedef int (WINAPI *perwine_elfdll_probe_fn)(struct perwine_elfdll_probe *p);

#endif /* PERWINE_ELFDLL_H */
