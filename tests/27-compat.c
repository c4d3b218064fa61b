// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every entry instruction of a 64-bit PER_WINE process (ABI v2, "Every
 * entry instruction is covered"): int $0x80, the 32-bit fast syscalls
 * reached by a far jump to CS 0x23, and calls into the legacy vsyscall
 * page.  Compat traps report AUDIT_ARCH_I386 and the i386 number.
 */
#include <linux/audit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>

#include "perwine.h"
#include "tap.h"

#define PAGE 4096
#define I386_GETPID 20
#define I386_WRITE 4
#define USER32_CS 0x23
#define VSYSCALL_TIME 0xffffffffff600400UL

/* Code bytes copied into pages of the wanted kind. */
static const unsigned char int80_stub[] = {	/* eax = nr (edi); int $0x80; ret */
	0x89, 0xf8, 0xcd, 0x80, 0xc3,
};
#define INT80_RET 4	/* offset after int $0x80 */

static const unsigned char vsyscall_stub[] = {	/* call time() in the vsyscall page; ret */
	0x48, 0xb8, 0x00, 0x04, 0x60, 0xff, 0xff, 0xff, 0xff, 0xff,	/* movabs $VSYSCALL_TIME, %rax */
	0xff, 0xd0,	/* call *%rax */
	0xc3,
};

/* A page of code, ordinary or PROT_NOSYSCALL, anywhere (flags) in memory. */
static void *code_page(const void *code, size_t len, int nosys, int flags)
{
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);

	if (p == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));
	memcpy(p, code, len);
	if (mprotect(p, PAGE, PROT_READ | PROT_EXEC | (nosys ? PROT_NOSYSCALL : 0)))
		tap_bail("mprotect: %s", strerror(errno));
	return p;
}

static int trap_is(int why, unsigned int arch, int nr)
{
	return trap_info.si_code == SYS_USER_DISPATCH && trap_info.si_errno == why &&
	       trap_info.si_arch == arch && trap_info.si_syscall == nr;
}

static void test_int80(void)
{
	long (*plain)(long) = code_page(int80_stub, sizeof(int80_stub), 0, 0);
	long (*nosys)(long) = code_page(int80_stub, sizeof(int80_stub), 1, 0);
	int r;

	trap_count = 0;
	test_sel = PERWINE_TRAP;
	r = (int)plain(I386_GETPID);
	test_sel = PERWINE_NATIVE;	/* had it not trapped, tap_ok()'s write would */
	tap_ok(r == 42 && trap_count == 1 && trap_is(PERWINE_TRAP_SELECTOR, AUDIT_ARCH_I386, I386_GETPID) &&
	       trap_info.si_call_addr == (char *)plain + INT80_RET,
	       "int $0x80 at TRAP: traps as i386 getpid (arch %#x, nr %d, errno %d)",
	       trap_info.si_arch, trap_info.si_syscall, trap_info.si_errno);

	memset(&trap_info, 0, sizeof(trap_info));
	r = (int)nosys(I386_GETPID);
	tap_ok(r == 42 && trap_count == 2 && trap_is(PERWINE_TRAP_VMA, AUDIT_ARCH_I386, I386_GETPID) &&
	       trap_info.si_call_addr == (char *)nosys + INT80_RET,
	       "int $0x80 in a NOSYSCALL page at NATIVE: traps (arch %#x, nr %d, errno %d)",
	       trap_info.si_arch, trap_info.si_syscall, trap_info.si_errno);

	r = (int)plain(I386_GETPID);
	tap_ok(r == getpid() && trap_count == 2, "int $0x80 in an ordinary page at NATIVE: native getpid (%d)", r);
	munmap(plain, PAGE);
	munmap(nosys, PAGE);
}

static void test_vsyscall(void)
{
	time_t (*plain)(time_t *) = code_page(vsyscall_stub, sizeof(vsyscall_stub), 0, 0);
	time_t (*nosys)(time_t *) = code_page(vsyscall_stub, sizeof(vsyscall_stub), 1, 0);
	time_t r, now;

	trap_count = 0;
	memset(&trap_info, 0, sizeof(trap_info));
	test_sel = PERWINE_TRAP;
	r = plain(NULL);
	test_sel = PERWINE_NATIVE;
	tap_ok(r == 42 && trap_count == 1 && trap_is(PERWINE_TRAP_SELECTOR, AUDIT_ARCH_X86_64, SYS_time) &&
	       (unsigned long)trap_info.si_call_addr == VSYSCALL_TIME,
	       "vsyscall time() at TRAP: traps with the vsyscall's address (%p, nr %d) and returns the result",
	       trap_info.si_call_addr, trap_info.si_syscall);

	memset(&trap_info, 0, sizeof(trap_info));
	r = nosys(NULL);
	tap_ok(r == 42 && trap_count == 2 && trap_is(PERWINE_TRAP_VMA, AUDIT_ARCH_X86_64, SYS_time),
	       "vsyscall called from a NOSYSCALL page at NATIVE: traps (errno %d)", trap_info.si_errno);

	now = time(NULL);
	r = plain(NULL);
	tap_ok(trap_count == 2 && r >= now && r <= now + 5,
	       "vsyscall called from an ordinary page at NATIVE: native time() (%ld)", (long)r);
	/* The fast syscall tests decide for themselves where NOSYSCALL pages are. */
	munmap(plain, PAGE);
	munmap(nosys, PAGE);
}

/*
 * The far jump: 32-bit code below 4 GiB writes "fast" to a pipe with a
 * SYSCALL or SYSENTER of its own, then stops on ud2.  A native syscall
 * returns to the landing pad of a 32-bit vDSO this process does not
 * have; the child then dies one way or another, but the bytes are in the
 * pipe.  A trap leaves the pipe empty.  A CPU that refuses the
 * instruction in compat mode raises #UD on it: SIGILL with the
 * instruction's own address, nothing else.  A SIGILL on the ud2 after it
 * means the kernel resumed there, which is no refusal but a failure.
 */
struct fast_result {
	int sig;		/* the signal that ended the child */
	siginfo_t si;
	unsigned long ip;	/* the RIP its frame saved */
	unsigned long insn;	/* the address of the entry instruction */
	int sigsys;		/* SIGSYS signals counted */
};

static struct fast_result *result;

static void child_signal(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	/* A case at TRAP: this handler's own syscalls (_exit) run natively. */
	test_sel = PERWINE_NATIVE;
	if (sig == SIGSYS)
		result->sigsys++;
	if (!result->sig) {
		result->sig = sig;
		result->si = *si;
		result->ip = uc->uc_mcontext.gregs[REG_RIP];
	}
	_exit(0);
}

static void jump32(uint32_t code, uint32_t stack)
{
	struct { uint32_t off; uint16_t sel; } __attribute__((packed)) far = { code, USER32_CS };

	__asm__ volatile("mov %k1, %%esp\n\tljmpl *(%0)" : : "r"(&far), "r"(stack) : "memory");
	__builtin_unreachable();
}

enum fast_insn { FAST_SYSCALL, FAST_SYSENTER };

/*
 * Returns the bytes that reached the pipe; *res what ended the child,
 * which makes the jump with the selector at SEL.
 */
static int fast_syscall(enum fast_insn insn, int nosys, int other_nosys_page, uint8_t sel,
			struct fast_result *res)
{
	unsigned char code[32], *p = code;
	unsigned char *data, *stack;
	char buf[8];
	int fds[2], status, n;
	size_t insn_off;
	pid_t pid;

	if (pipe(fds))
		tap_bail("pipe");
	data = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	stack = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (data == MAP_FAILED || stack == MAP_FAILED)
		tap_bail("mmap(MAP_32BIT)");
	memcpy(data, "fast", 4);

	*p++ = 0x89, *p++ = 0xe5;	/* mov %esp, %ebp: SYSENTER's stack */
	*p++ = 0xb8, memcpy(p, &(uint32_t){ I386_WRITE }, 4), p += 4;	/* mov $4, %eax */
	*p++ = 0xbb, memcpy(p, &(uint32_t){ fds[1] }, 4), p += 4;	/* mov $fd, %ebx */
	*p++ = 0xb9, memcpy(p, &(uint32_t){ (uint32_t)(uintptr_t)data }, 4), p += 4;	/* mov $data, %ecx */
	*p++ = 0xba, memcpy(p, &(uint32_t){ 4 }, 4), p += 4;	/* mov $4, %edx */
	insn_off = p - code;
	*p++ = 0x0f, *p++ = insn == FAST_SYSCALL ? 0x05 : 0x34;
	*p++ = 0x0f, *p++ = 0x0b;	/* ud2 */

	memset(result, 0, sizeof(*result));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		unsigned char *page = code_page(code, p - code, nosys, MAP_32BIT);
		struct sigaction sa;
		int sigs[] = { SIGSYS, SIGILL, SIGSEGV, SIGBUS, SIGTRAP, SIGFPE };

		close(fds[0]);
		alarm(20);
		result->insn = (unsigned long)page + insn_off;
		if (other_nosys_page)
			code_page(int80_stub, sizeof(int80_stub), 1, 0);
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = child_signal;
		sa.sa_flags = SA_SIGINFO;
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			sigaction(sigs[i], &sa, NULL);
		/* PER_WINE and the selector came with fork(); no syscall after this store. */
		test_sel = sel;
		jump32((uint32_t)(uintptr_t)page, (uint32_t)(uintptr_t)(stack + 16 * PAGE - 64));
	}
	close(fds[1]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		tap_bail("fork/waitpid");
	*res = *result;
	n = read(fds[0], buf, sizeof(buf));
	close(fds[0]);
	munmap(data, PAGE);
	munmap(stack, 16 * PAGE);
	return n;
}

/*
 * The CPU refused the instruction in compat mode (AMD: SYSENTER; Intel:
 * SYSCALL): #UD at the entry instruction itself, before the kernel saw
 * a syscall, so no trap and nothing written.
 */
static int refused(const struct fast_result *res, int n)
{
	return res->sig == SIGILL && (unsigned long)res->si.si_addr == res->insn &&
	       res->ip == res->insn && res->sigsys == 0 && n <= 0;
}

/* The ABI's trap of the fast write, by the rule WHY (si_errno). */
static int trapped_write(const struct fast_result *res, int n, int why)
{
	return n <= 0 && res->sig == SIGSYS && res->sigsys == 1 && res->si.si_code == SYS_USER_DISPATCH &&
	       res->si.si_errno == why && res->si.si_arch == AUDIT_ARCH_I386 &&
	       res->si.si_syscall == I386_WRITE;
}

/* Native: the bytes are in the pipe, then no trap and no SIGILL (the ud2 after it). */
static int native_write(const struct fast_result *res, int n)
{
	return n == 4 && res->sigsys == 0 && res->sig != SIGSYS && res->sig != SIGILL;
}

/*
 * Each instruction in each situation is a point of its own: a pass when
 * it ran and did what the ABI says, a skip (never a pass) when this CPU
 * refuses it at that instruction, a failure otherwise.
 */
static const struct fast_case {
	enum fast_insn insn;
	int nosys;		/* the instruction is in a PROT_NOSYSCALL page */
	int other_nosys_page;	/* a PROT_NOSYSCALL page elsewhere */
	uint8_t sel;		/* the selector at the jump */
	int traps;		/* what the ABI says: trap (its si_errno), else 0: native */
	const char *what;
} fast_cases[] = {
	/*
	 * A fast entry returns to the vDSO's landing pad whatever its call
	 * site, and is judged there, as a syscall of the vDSO: from a
	 * NOSYSCALL page, or with one elsewhere, it runs natively at NATIVE.
	 */
	{ FAST_SYSCALL, 1, 0, PERWINE_NATIVE, 0,
	  "32-bit syscall in a NOSYSCALL page (far jump to CS 0x23): native, judged at the landing pad" },
	{ FAST_SYSENTER, 1, 0, PERWINE_NATIVE, 0,
	  "sysenter in a NOSYSCALL page (far jump to CS 0x23): native, judged at the landing pad" },
	{ FAST_SYSCALL, 0, 1, PERWINE_NATIVE, 0, "32-bit syscall in an ordinary page, a NOSYSCALL page elsewhere: native" },
	{ FAST_SYSENTER, 0, 0, PERWINE_NATIVE, 0, "sysenter in an ordinary page, no NOSYSCALL page: native" },
	{ FAST_SYSENTER, 0, 1, PERWINE_NATIVE, 0,
	  "sysenter in an ordinary page, a NOSYSCALL page elsewhere: native, judged at the landing pad" },
	/*
	 * The selector decides the fast entries too.  Their negative
	 * controls are the native cases above: the same instruction in an
	 * ordinary page at NATIVE (sysenter with no NOSYSCALL page at all).
	 */
	{ FAST_SYSCALL, 0, 0, PERWINE_TRAP, PERWINE_TRAP_SELECTOR,
	  "32-bit syscall at selector TRAP (far jump to CS 0x23), no NOSYSCALL page: traps as i386 write by the selector" },
	{ FAST_SYSENTER, 0, 0, PERWINE_TRAP, PERWINE_TRAP_SELECTOR,
	  "sysenter at selector TRAP (far jump to CS 0x23), no NOSYSCALL page: traps as i386 write by the selector" },
};

static void test_fast(void)
{
	static const char *name[] = { "the 32-bit syscall", "sysenter" };
	struct fast_result res;
	char why[160];
	size_t i;
	int n;

	for (i = 0; i < sizeof(fast_cases) / sizeof(fast_cases[0]); i++) {
		const struct fast_case *c = &fast_cases[i];

		n = fast_syscall(c->insn, c->nosys, c->other_nosys_page, c->sel, &res);
		if (refused(&res, n)) {
			snprintf(why, sizeof(why), "this CPU refuses %s in compat mode (SIGILL at the instruction, %#lx)",
				 name[c->insn], res.insn);
			tap_skip(why, "%s", c->what);
			continue;
		}
		tap_ok(c->traps ? trapped_write(&res, n, c->traps) : native_write(&res, n),
		       "%s (wrote %d; signal %d at %p, RIP %#lx, the instruction at %#lx; %d SIGSYS, errno %d, arch %#x, nr %d)",
		       c->what, n, res.sig, res.si.si_addr, res.ip, res.insn, res.sigsys,
		       res.si.si_errno, res.si.si_arch, res.si.si_syscall);
	}
}

int main(void)
{
	tap_require_perwine_v2();
	result = mmap(NULL, sizeof(*result), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (result == MAP_FAILED)
		tap_bail("mmap(MAP_SHARED)");
	tap_plan(13);

	install_recorder();
	if (dispatch_on(&test_sel, 0, 0) || set_perwine(1))
		tap_bail("PER_WINE on: %s", strerror(errno));
	test_int80();
	test_vsyscall();
	test_fast();
	return tap_done();
}
