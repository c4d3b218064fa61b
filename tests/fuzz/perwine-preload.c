// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * LD_PRELOAD for make vm-fuzz: makes the program a PER_WINE process with
 * a selector at NATIVE, the redirect of ABI v3 for its traps and one
 * PROT_NOSYSCALL page before its main(), so
 * that every syscall it and its forked children make goes through the
 * selector read and the VMA check (fork keeps both; a fuzzed
 * personality() or write to the selector may turn a child's dispatch
 * off or make it trap, which is fuzzing too).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>

#include "perwine.h"

static volatile unsigned char selector = PERWINE_NATIVE;
static struct perwine_redirect_info info;

/* A trap (a fuzzed write to the selector, say) returns -ENOSYS from here. */
extern const char fuzz_redirect[];
__asm__(".text\n"
	"fuzz_redirect:\n"
	"	mov $-38, %rax\n"
	"	jmp *%rcx\n");

__attribute__((constructor)) static void perwine_fuzz_setup(void)
{
	struct perwine_config cfg = {
		.selector = (uintptr_t)&selector,
		.flags = PERWINE_FLAG_ON | PERWINE_FLAG_REDIRECT,
		.redirect = (uintptr_t)fuzz_redirect,
		.redirect_info = (uintptr_t)&info,
	};
	void *page;

	/* ABI v3: traps of 64-bit syscalls come back by the redirect. */
	if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, &cfg, PERWINE_CONFIG_SIZE_VER1, 0) ||
	    personality(PERWINE_PER_WINE) == -1) {
		perror("perwine-preload: PER_WINE");
		exit(1);
	}
	page = mmap(NULL, 4096, PROT_READ | PROT_EXEC | PROT_NOSYSCALL, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		perror("perwine-preload: mmap(PROT_NOSYSCALL)");
		exit(1);
	}
}
