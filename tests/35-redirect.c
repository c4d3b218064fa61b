// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ABI v3 "Traps without a signal": with PERWINE_FLAG_REDIRECT a trapped
 * 64-bit syscall returns to the registered entry with every register as
 * the syscall instruction left it (RAX the number, RCX the address after
 * the instruction, R11 RFLAGS) and only RIP changed, nothing written to
 * the stack, no SIGSYS, never restarted; redirect_info says why; a
 * record that cannot be written, int $0x80 and the flag off raise
 * SIGSYS.  A kernel without the flag fails every redirect point: the
 * SIGSYS handler answers those traps instead.
 */
#include <pthread.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include "tap.h"

#define CANARY		0x5a5a5a5a5a5a5a5aUL
#define STACK_WORDS	128		/* 1 KiB below RSP: red zone and more */
#define ENTRY_RESULT	0x7e57L
#define NR_PROBE	1000		/* no such syscall: never runs natively */

/* The general-purpose registers, in this order at offset 8 * i. */
enum { R_AX, R_BX, R_CX, R_DX, R_SI, R_DI, R_BP, R_SP, R_8, R_9, R_10, R_11, R_12, R_13, R_14,
	R_15, NR_GPR };
static const char *const gpr_name[NR_GPR] = {
	"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

/* Read and written by the assembly below. */
unsigned long probe_in[NR_GPR], probe_out[NR_GPR], entry_seen[NR_GPR];
unsigned long probe_rsp, probe_flags, canary_bad;
volatile int entry_count;
long entry_result = ENTRY_RESULT;
extern const char probe_syscall[], probe_ret[], redirect_entry[];
void probe(void);
long raw_int80(long nr);

#define GPR_STORE(dst) \
	"	mov %rax, " dst "+0(%rip)\n	mov %rbx, " dst "+8(%rip)\n" \
	"	mov %rcx, " dst "+16(%rip)\n	mov %rdx, " dst "+24(%rip)\n" \
	"	mov %rsi, " dst "+32(%rip)\n	mov %rdi, " dst "+40(%rip)\n" \
	"	mov %rbp, " dst "+48(%rip)\n	mov %rsp, " dst "+56(%rip)\n" \
	"	mov %r8, " dst "+64(%rip)\n	mov %r9, " dst "+72(%rip)\n" \
	"	mov %r10, " dst "+80(%rip)\n	mov %r11, " dst "+88(%rip)\n" \
	"	mov %r12, " dst "+96(%rip)\n	mov %r13, " dst "+104(%rip)\n" \
	"	mov %r14, " dst "+112(%rip)\n	mov %r15, " dst "+120(%rip)\n"

/*
 * probe(): every register but RSP from probe_in, STACK_WORDS canaries
 * below RSP written with MOVs (no flag changes after RFLAGS is taken),
 * the syscall, every register to probe_out, and the canaries counted.
 * The entry stores what it got to entry_seen, touching no stack, and
 * jumps back to RCX with entry_result.
 */
__asm__(".text\n"
	".globl probe\n"
	"probe:\n"
	"	push %rbx\n	push %rbp\n	push %r12\n	push %r13\n	push %r14\n	push %r15\n"
	"	pushfq\n"
	"	pop %rax\n"
	"	mov %rax, probe_flags(%rip)\n"
	"	mov %rsp, probe_rsp(%rip)\n"
	"	movabs $0x5a5a5a5a5a5a5a5a, %rax\n"
	"	.set off, 8\n"
	"	.rept 128\n"
	"	mov %rax, -off(%rsp)\n"
	"	.set off, off + 8\n"
	"	.endr\n"
	"	mov probe_in+0(%rip), %rax\n	mov probe_in+8(%rip), %rbx\n"
	"	mov probe_in+16(%rip), %rcx\n	mov probe_in+24(%rip), %rdx\n"
	"	mov probe_in+32(%rip), %rsi\n	mov probe_in+40(%rip), %rdi\n"
	"	mov probe_in+48(%rip), %rbp\n"
	"	mov probe_in+64(%rip), %r8\n	mov probe_in+72(%rip), %r9\n"
	"	mov probe_in+80(%rip), %r10\n	mov probe_in+88(%rip), %r11\n"
	"	mov probe_in+96(%rip), %r12\n	mov probe_in+104(%rip), %r13\n"
	"	mov probe_in+112(%rip), %r14\n	mov probe_in+120(%rip), %r15\n"
	".globl probe_syscall\n"
	"probe_syscall:\n"
	"	syscall\n"
	".globl probe_ret\n"
	"probe_ret:\n"
	GPR_STORE("probe_out")
	"	movabs $0x5a5a5a5a5a5a5a5a, %rax\n"
	"	lea -1024(%rsp), %rdi\n"
	"	xor %ecx, %ecx\n"
	"	mov $128, %edx\n"
	"1:	cmp %rax, (%rdi)\n"
	"	je 2f\n"
	"	inc %rcx\n"
	"2:	add $8, %rdi\n"
	"	dec %edx\n"
	"	jnz 1b\n"
	"	mov %rcx, canary_bad(%rip)\n"
	"	pop %r15\n	pop %r14\n	pop %r13\n	pop %r12\n	pop %rbp\n	pop %rbx\n"
	"	ret\n"

	/* A rewound redirect would run this: a SIGILL, not a wrong answer. */
	"	ud2\n"
	".globl redirect_entry\n"
	"redirect_entry:\n"
	"	nop\n"
	GPR_STORE("entry_seen")
	"	lock incl entry_count(%rip)\n"
	"	mov entry_result(%rip), %rax\n"
	"	jmp *%rcx\n"

	".globl raw_int80\n"
	"raw_int80:\n"
	"	mov %rdi, %rax\n"
	"	push %rbx\n"
	"	int $0x80\n"
	"	pop %rbx\n"
	"	ret\n");

static struct perwine_redirect_info rinfo;

/* A raw syscall with no arguments (tap.h's test_syscall()). */
static long raw_syscall(long nr)
{
	return test_syscall(nr, 0, 0, 0);
}

static long set_config(uint32_t flags, uint64_t redirect, uint64_t info, size_t size)
{
	struct perwine_config cfg = {
		.selector = (uintptr_t)&test_sel,
		.flags = flags,
		.redirect = redirect,
		.redirect_info = info,
	};

	return prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, &cfg, size, 0) ? -errno : 0;
}

#define FLAGS_ON	(PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE)
#define FLAGS_REDIRECT	(FLAGS_ON | PERWINE_FLAG_REDIRECT)

static int redirect_on(void)
{
	return set_config(FLAGS_REDIRECT, (uintptr_t)redirect_entry, (uintptr_t)&rinfo,
			  sizeof(struct perwine_config)) == 0;
}

/* One probe through the selector: TRAP around it, NATIVE after. */
static void probe_trapped(void)
{
	for (int i = 0; i < NR_GPR; i++)
		probe_in[i] = 0x1111111111111111UL * (i + 1) ^ 0x0123456789abcdefUL;
	probe_in[R_AX] = NR_PROBE;
	memset(entry_seen, 0, sizeof(entry_seen));
	test_sel = PERWINE_TRAP;
	probe();
	test_sel = PERWINE_NATIVE;
}

static int seen_equal(const unsigned long *regs, const int *which, int n, char *bad, size_t size)
{
	int ok = 1;

	bad[0] = 0;
	for (int i = 0; i < n; i++) {
		if (regs[which[i]] == probe_in[which[i]])
			continue;
		ok = 0;
		snprintf(bad + strlen(bad), size - strlen(bad), " %s=%#lx", gpr_name[which[i]],
			 regs[which[i]]);
	}
	return ok;
}

static void check_registers(void)
{
	static const int args[] = { R_DI, R_SI, R_DX, R_10, R_8, R_9 };
	static const int callee[] = { R_BX, R_BP, R_12, R_13, R_14, R_15 };
	static const int kept[] = { R_BX, R_DX, R_SI, R_DI, R_BP, R_8, R_9, R_10, R_12, R_13,
				    R_14, R_15 };
	int before = entry_count, traps = trap_count, ok;
	char bad[512];

	probe_trapped();
	tap_ok(entry_count == before + 1 && trap_count == traps,
	       "a selector trap returns to the entry, no SIGSYS (entries %d, SIGSYS %d)",
	       entry_count - before, trap_count - traps);
	tap_ok(entry_seen[R_AX] == NR_PROBE, "the entry gets RAX = the syscall number (%#lx)",
	       entry_seen[R_AX]);
	ok = seen_equal(entry_seen, args, 6, bad, sizeof(bad));
	tap_ok(ok, "the entry gets the six argument registers unchanged%s", bad);
	ok = seen_equal(entry_seen, callee, 6, bad, sizeof(bad));
	tap_ok(ok && entry_seen[R_SP] == probe_rsp,
	       "the entry gets RBX, RBP, R12-R15 and RSP unchanged%s (rsp %#lx, was %#lx)", bad,
	       entry_seen[R_SP], probe_rsp);
	tap_ok(entry_seen[R_CX] == (unsigned long)probe_ret && entry_seen[R_11] == probe_flags,
	       "the entry gets RCX = the address after the syscall, R11 = RFLAGS (%#lx, %#lx)",
	       entry_seen[R_CX] - (unsigned long)probe_ret, entry_seen[R_11] ^ probe_flags);
	ok = seen_equal(probe_out, kept, 12, bad, sizeof(bad));
	tap_ok(ok && probe_out[R_AX] == ENTRY_RESULT && probe_out[R_SP] == probe_rsp,
	       "back at RCX: RAX the entry's result, the rest as a syscall leaves it%s", bad);
	tap_ok(canary_bad == 0, "1 KiB below RSP, the red zone included, is untouched (%lu words)",
	       canary_bad);
	tap_ok(rinfo.cause == PERWINE_TRAP_SELECTOR && rinfo.nr == NR_PROBE &&
	       rinfo.site == (uintptr_t)probe_syscall,
	       "redirect_info: cause SELECTOR, the number, the syscall's address (%u %u %#lx)",
	       rinfo.cause, rinfo.nr, (unsigned long)(rinfo.site - (uintptr_t)probe_syscall));
}

/* mov %rdi,%rax; syscall; ret, in a PROT_NOSYSCALL page */
static void check_vma(void)
{
	static const unsigned char stub[] = { 0x48, 0x89, 0xf8, 0x0f, 0x05, 0xc3 };
	unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long (*call)(long) = (long (*)(long))page;
	int before = entry_count, traps = trap_count;
	long r = -1;

	memset(&rinfo, 0, sizeof(rinfo));
	if (page != MAP_FAILED) {
		memcpy(page, stub, sizeof(stub));
		if (mprotect(page, 4096, PROT_READ | PROT_EXEC | PROT_NOSYSCALL) == 0)
			r = call(NR_PROBE);
		munmap(page, 4096);
	}
	tap_ok(r == ENTRY_RESULT && entry_count == before + 1 && trap_count == traps &&
	       rinfo.cause == PERWINE_TRAP_VMA && rinfo.site == (uintptr_t)page + 3,
	       "a PROT_NOSYSCALL trap is redirected, cause VMA and its site (%ld, cause %u)", r,
	       rinfo.cause);
}

/*
 * Numbers that look like restart codes in RAX, under a stream of
 * SIGUSR1 from another thread: a signal delivered on the way out of the
 * redirect must neither rewind the instruction nor turn RAX into EINTR.
 */
static volatile int flood_stop, usr1_at_entry, usr1_total;
static pid_t main_tid;

static void on_usr1(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig, (void)si;
	usr1_total++;
	if (uc->uc_mcontext.gregs[REG_RIP] == (long)redirect_entry)
		usr1_at_entry++;
}

static void *flood(void *arg)
{
	(void)arg;
	while (!flood_stop)
		syscall(SYS_tgkill, getpid(), main_tid, SIGUSR1);
	return NULL;
}

static void check_restart(void)
{
	static const long codes[] = { -512, -513, -514, -516 };
	struct sigaction sa;
	pthread_t t;
	int calls = 0, wrong = 0, before = entry_count;
	struct timespec t0, now;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	main_tid = syscall(SYS_gettid);
	flood_stop = 0;
	if (pthread_create(&t, NULL, flood, NULL)) {
		tap_ok(0, "restart codes: no thread");
		tap_ok(0, "a signal pending at the redirect exit: no thread");
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 4; i++) {
			long r;

			test_sel = PERWINE_TRAP;
			r = raw_syscall(codes[i]);
			test_sel = PERWINE_NATIVE;
			calls++;
			wrong += r != ENTRY_RESULT;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (calls < 2000 || (usr1_at_entry < 10 && now.tv_sec - t0.tv_sec < 20));
	flood_stop = 1;
	pthread_join(t, NULL);
	signal(SIGUSR1, SIG_IGN);
	tap_ok(wrong == 0 && entry_count - before == calls,
	       "-512, -513, -514, -516 are redirected once each and never restarted "
	       "(%d calls, %d entries, %d wrong results)", calls, entry_count - before, wrong);
	tap_ok(usr1_at_entry > 0,
	       "a signal pending at the redirect exit runs its handler at the entry, then the entry "
	       "(%d of %d signals)", usr1_at_entry, usr1_total);
}

/* TF set at the syscall: the first single-step trap is after the entry's nop. */
static volatile long first_step = -1;

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig, (void)si;
	if (first_step == -1)
		first_step = uc->uc_mcontext.gregs[REG_RIP];
	uc->uc_mcontext.gregs[REG_EFL] &= ~0x100L;
}

static void check_single_step(void)
{
	struct sigaction sa;
	long r;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, NULL);
	test_sel = PERWINE_TRAP;
	__asm__ volatile("pushfq\n"
			 "	orq $0x100, (%%rsp)\n"
			 "	popfq\n"
			 "	syscall\n"
			 : "=a"(r)
			 : "a"((long)NR_PROBE)
			 : "rcx", "r11", "memory", "cc");
	test_sel = PERWINE_NATIVE;
	signal(SIGTRAP, SIG_DFL);
	tap_ok(r == ENTRY_RESULT && first_step == (long)redirect_entry + 1,
	       "TF set: the first single-step trap is after the entry's first instruction "
	       "(entry%+ld)", first_step - (long)redirect_entry);
}

/*
 * A tracer with PTRACE_SYSCALL: the redirected syscall is no syscall,
 * so neither its entry nor its exit stops (an exit stop would show RIP
 * at the entry).  The tracee's probe must still come back right.
 */
static void traced_child(void)
{
	long r;

	ptrace(PTRACE_TRACEME, 0, 0, 0);
	raise(SIGSTOP);
	test_sel = PERWINE_TRAP;
	r = raw_syscall(NR_PROBE);
	test_sel = PERWINE_NATIVE;
	_exit(r == ENTRY_RESULT ? 0 : 1);
}

static void check_ptrace(void)
{
	struct user_regs_struct regs;
	int status, stops = 0, at_entry = 0, probes = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		traced_child();
	waitpid(pid, &status, 0);
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL);
	while (ptrace(PTRACE_SYSCALL, pid, 0, 0) == 0 && waitpid(pid, &status, 0) == pid &&
	       WIFSTOPPED(status)) {
		if (WSTOPSIG(status) != (SIGTRAP | 0x80))
			continue;
		stops++;
		if (ptrace(PTRACE_GETREGS, pid, 0, &regs) == 0) {
			at_entry += regs.rip == (unsigned long)redirect_entry;
			probes += regs.orig_rax == NR_PROBE;
		}
	}
	tap_ok(exited_with(status, 0) && stops > 0 && at_entry == 0 && probes == 0,
	       "PTRACE_SYSCALL: no stop for the redirected syscall (%d stops, %d at the entry, %d of it)",
	       stops, at_entry, probes);
}

/* Each of these raises SIGSYS instead; the entry is not called. */
static void check_sigsys(const char *what, long (*call)(long), long nr, int cause)
{
	int before = entry_count, traps = trap_count;
	long r;

	test_sel = PERWINE_TRAP;
	r = call(nr);
	test_sel = PERWINE_NATIVE;
	tap_ok(r == trap_return && entry_count == before && trap_count == traps + 1 &&
	       trap_info.si_errno == cause,
	       "%s: SIGSYS, not the entry (%ld, entries %d, SIGSYS %d)", what, r,
	       entry_count - before, trap_count - traps);
}

static void check_config(void)
{
	struct perwine_config cfg;
	unsigned char buf[sizeof(cfg)];
	char line[256];
	long r;

	r = set_config(FLAGS_REDIRECT, 0, 0, sizeof(cfg));
	tap_ok(r == -EINVAL, "SET REDIRECT without an entry: EINVAL (%ld)", r);
	r = set_config(FLAGS_REDIRECT, 0xffff800000000000UL, 0, sizeof(cfg));
	tap_ok(r == -EFAULT, "SET REDIRECT with a kernel-address entry: EFAULT (%ld)", r);
	r = set_config(FLAGS_REDIRECT, (uintptr_t)redirect_entry, 0xffff800000000000UL, sizeof(cfg));
	tap_ok(r == -EFAULT, "SET REDIRECT with a kernel-address redirect_info: EFAULT (%ld)", r);
	r = set_config(FLAGS_ON, (uintptr_t)redirect_entry, 0, sizeof(cfg));
	tap_ok(r == -EINVAL, "SET an entry without REDIRECT: EINVAL (%ld)", r);
	r = set_config(FLAGS_REDIRECT, 0, 0, PERWINE_CONFIG_SIZE_VER0);
	tap_ok(r == -EINVAL, "SET REDIRECT in the 32-byte structure, which has no entry: EINVAL (%ld)",
	       r);
	tap_ok(redirect_on(), "SET ON | SIGNAL_NATIVE | REDIRECT with an entry and redirect_info: 0");
	memset(&cfg, 0xff, sizeof(cfg));
	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, &cfg, sizeof(cfg), 0);
	tap_ok(r == 0 && cfg.flags == FLAGS_REDIRECT && cfg.redirect == (uintptr_t)redirect_entry &&
	       cfg.redirect_info == (uintptr_t)&rinfo,
	       "GET returns the flag, the entry and redirect_info (flags %#x)", cfg.flags);
	memset(buf, 0xaa, sizeof(buf));
	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, buf, PERWINE_CONFIG_SIZE_VER0, 0);
	tap_ok(r == 0 && buf[PERWINE_CONFIG_SIZE_VER0] == 0xaa && buf[sizeof(buf) - 1] == 0xaa,
	       "GET of the 32-byte structure writes no byte past it");
	perwine_status_line("/proc/thread-self/status", line, sizeof(line));
	tap_ok(strstr(line, "flags=0xb") != NULL, "/proc/PID/status shows the flag: %s", line);
}

int main(void)
{
	char *ro;

	tap_require_perwine_v2();
	tap_plan(26);
	install_recorder();
	if (set_perwine(1) == -1)
		tap_bail("personality(PER_WINE): %s", strerror(errno));

	check_config();
	check_registers();
	check_vma();
	check_restart();
	check_single_step();
	check_ptrace();

	/* A record the kernel cannot write: that trap raises SIGSYS. */
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro == MAP_FAILED ||
	    set_config(FLAGS_REDIRECT, (uintptr_t)redirect_entry, (uintptr_t)ro, PERWINE_CONFIG_SIZE_VER1))
		tap_bail("read-only redirect_info: %s", strerror(errno));
	check_sigsys("a read-only redirect_info", raw_syscall, NR_PROBE, PERWINE_TRAP_SELECTOR);
	redirect_on();
	check_sigsys("int $0x80", raw_int80, 20 /* getpid */, PERWINE_TRAP_SELECTOR);
	set_config(FLAGS_ON, 0, 0, PERWINE_CONFIG_SIZE_VER1);
	check_sigsys("the flag off", raw_syscall, NR_PROBE, PERWINE_TRAP_SELECTOR);
	/* The control of the stack point: a SIGSYS frame lands in that KiB. */
	probe_trapped();
	tap_ok(canary_bad > 0 && probe_out[R_AX] == (unsigned long)trap_return,
	       "control: by SIGSYS, the frame overwrites %lu words of that KiB", canary_bad);

	set_perwine(0);
	return tap_done();
}
