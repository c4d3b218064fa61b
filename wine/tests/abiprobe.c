/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * abiprobe: which flags of perwine ABI v3 this kernel accepts, one word
 * each on stdout: "redirect" (PERWINE_FLAG_REDIRECT: trapped syscalls
 * return to a user entry without a signal), "activate"
 * (PERWINE_FLAG_ACTIVATE: dispatch without the PER_WINE personality);
 * nothing for neither.  wine-check.sh tells rawsyscall.exe what to
 * expect from it.  Each probe registers a configuration that traps
 * nothing (no selector, no PROT_NOSYSCALL memory) and takes it back.
 *
 *   gcc -std=c11 -O2 -Wall -Wextra -o abiprobe abiprobe.c
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>

#define PR_WINE_DISPATCH	0x57494e45
#define PR_WINE_DISPATCH_OFF	0
#define PR_WINE_DISPATCH_SET	3
#define PERWINE_FLAG_ON		0x1
#define PERWINE_FLAG_ACTIVATE	0x4
#define PERWINE_FLAG_REDIRECT	0x8

struct config {
	uint64_t selector, start, len;
	uint32_t flags, reserved;
	uint64_t redirect, redirect_info;
};

static void entry(void)
{
}

static int accepted(uint32_t flag)
{
	struct config c = { .flags = PERWINE_FLAG_ON | flag };

	if (flag & PERWINE_FLAG_REDIRECT)
		c.redirect = (uintptr_t)entry;
	if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, &c, sizeof(c), 0))
		return 0;
	prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);
	return 1;
}

int main(void)
{
	if (accepted(PERWINE_FLAG_REDIRECT))
		printf("redirect\n");
	if (accepted(PERWINE_FLAG_ACTIVATE))
		printf("activate\n");
	return 0;
}
