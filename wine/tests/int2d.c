// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Print the error code the CPU gives the #GP of a user-mode "int $0x2d"
 * (Linux passes it to the SIGSEGV handler in uc_mcontext's ERR).  A CPU
 * gives (0x2d << 3) | 2 = 0x16a (the IDT vector's selector format); Wine's
 * handle_interrupt() (dlls/ntdll/unix/signal_x86_64.c) decodes it so to
 * raise the debug-service breakpoint that ntdll's exception test checks
 * in test_debug_service().  QEMU 7.2's TCG computes intno * 16 + 2 in
 * do_interrupt64() (0x2d2), so Wine sees an access violation there, and
 * the test stops before test_direct_syscalls().
 *
 *   int2d        prints "int $0x2d: #GP error code 0x..."; exit 0 if 0x16a
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <ucontext.h>
#include <unistd.h>

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	const ucontext_t *uc = ctx;
	long long err = uc->uc_mcontext.gregs[REG_ERR];

	(void)sig;
	(void)si;
	printf("int $0x2d: #GP error code %#llx (trap %lld), expected 0x16a\n", err,
	       (long long)uc->uc_mcontext.gregs[REG_TRAPNO]);
	fflush(stdout);
	_exit(err == 0x16a ? 0 : 1);
}

int main(void)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };

	if (sigaction(SIGSEGV, &sa, NULL)) {
		perror("sigaction");
		return 2;
	}
	__asm__ volatile("int $0x2d");
	puts("int $0x2d: no fault");
	return 2;
}
