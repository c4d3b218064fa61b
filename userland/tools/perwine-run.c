// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * perwine-run: run a program with the PERWINE_PER_WINE personality, as setarch
 * does for other personalities.
 *
 *   perwine-run [--trap-self] [--verbose] PROGRAM [ARGS...]
 *   perwine-run --query
 *
 * execve() clears the dispatch config but keeps the personality, so the
 * program starts with PERWINE_PER_WINE on and registers its own selector.
 * Exit status as env(1): 125 when perwine-run fails, 126 when PROGRAM
 * cannot run, 127 when it is not found.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "perwine.h"

#define EXIT_FAILED 125
#define MAGIC_RESULT 0x57494e45L

static const char *prog = "perwine-run";

static void usage(FILE *out, int status)
{
	fprintf(out,
		"Usage: %s [--trap-self] [--verbose] PROGRAM [ARGS...]\n"
		"       %s --query\n"
		"Run PROGRAM with the PER_WINE personality (see perwine-run(1)).\n\n"
		"  -t, --trap-self  first prove that this kernel traps a syscall of ours\n"
		"  -v, --verbose    say what is done before running PROGRAM\n"
		"  -q, --query      print what the running kernel supports and exit\n"
		"  -h, --help       print this help and exit\n"
		"  -V, --version    print the version and exit\n",
		prog, prog);
	exit(status);
}

static long answer(long nr, const long args[6], void *ctx)
{
	(void)args;
	*(long *)ctx = nr;
	return MAGIC_RESULT;
}

/* One getppid through the selector: emulated, never executed. */
static int trap_self(int verbose)
{
	long seen = -1, ret;
	int err;

	err = perwine_enable(PERWINE_THREAD_SELECTOR);
	if (!err)
		err = perwine_set_dispatcher(answer, &seen);
	if (err) {
		fprintf(stderr, "%s: --trap-self: %s\n", prog, perwine_strerror(err));
		return -1;
	}
	perwine_trap();
	ret = syscall(SYS_getppid);
	perwine_native();
	perwine_set_dispatcher(NULL, NULL);
	err = perwine_disable();
	if (ret != MAGIC_RESULT || seen != SYS_getppid || err) {
		fprintf(stderr, "%s: --trap-self: the trap did not work (got %ld for syscall %ld)\n",
			prog, ret, seen);
		return -1;
	}
	if (verbose)
		fprintf(stderr, "%s: trapped and emulated getppid (syscall %ld)\n", prog, seen);
	return 0;
}

/* Does mprotect take PROT_NOSYSCALL?  (mmap ignores unknown bits.) */
static int nosyscall_supported(void)
{
	void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok;

	if (p == MAP_FAILED)
		return 0;
	ok = mprotect(p, 4096, PROT_READ | PROT_NOSYSCALL) == 0;
	munmap(p, 4096);
	return ok;
}

static int query(void)
{
	const char *why = NULL;
	int ok = perwine_available(&why);
	struct utsname u;

	uname(&u);
	printf("kernel:          %s %s %s\n", u.sysname, u.release, u.machine);
	printf("perwine:         %s\n", ok ? "available" : why);
	printf("PER_WINE:        0x%04x\n", PERWINE_PER_WINE);
	printf("PROT_NOSYSCALL:  %s\n", nosyscall_supported() ? "supported" : "refused");
	printf("traps:           %s\n", !ok ? "none" :
	       perwine_trap_mechanism() == PERWINE_MECHANISM_REDIRECT ?
	       "redirect (no signal)" : "SIGSYS");
	printf("personality:     0x%08x\n", personality(0xffffffff));
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "trap-self", no_argument, NULL, 't' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "query", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, self = 0, verbose = 0, old;
	const char *why;

	while ((c = getopt_long(argc, argv, "+tvqhV", opts, NULL)) != -1) {
		switch (c) {
		case 't': self = 1; break;
		case 'v': verbose = 1; break;
		case 'q': return query();
		case 'h': usage(stdout, 0); break;
		case 'V': printf("perwine-run %s\n", PACKAGE_VERSION); return 0;
		default: usage(stderr, EXIT_FAILED);
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: no PROGRAM given\n", prog);
		usage(stderr, EXIT_FAILED);
	}
	if (!perwine_available(&why)) {
		fprintf(stderr, "%s: %s\n", prog, why);
		return EXIT_FAILED;
	}
	if (self && trap_self(verbose))
		return EXIT_FAILED;
	old = personality(0xffffffff);
	if (old == -1 || personality((old & ~PERWINE_PER_MASK) | PERWINE_PER_WINE) == -1) {
		fprintf(stderr, "%s: personality: %s\n", prog, strerror(errno));
		return EXIT_FAILED;
	}
	if (verbose)
		fprintf(stderr, "%s: personality 0x%x -> 0x%x, running %s\n", prog, old,
			(old & ~PERWINE_PER_MASK) | PERWINE_PER_WINE, argv[optind]);
	execvp(argv[optind], argv + optind);
	fprintf(stderr, "%s: %s: %s\n", prog, argv[optind], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
