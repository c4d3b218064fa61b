// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ABI v2.1 "Addresses are linear": the always-native range and the VMA
 * rule are judged on the linear address of the real call site.
 *
 * - int $0x80 from an LDT code segment whose base is a NOSYSCALL page
 *   traps, and from one whose base is in the always-native range runs
 *   natively at TRAP (an unfixed kernel compares the offset in the
 *   segment: the first runs natively, the second traps);
 * - the 32-bit SYSCALL enters with the vDSO's landing pad for IP and
 *   returns there whatever its call site: it is judged at the pad.  At
 *   TRAP it runs natively when the pad is in the always-native range,
 *   also from a page outside it and with an LDT, and traps when only its
 *   call site is in the range; at NATIVE a SYSCALL from a NOSYSCALL page
 *   runs natively (series v2 judged the call site, and took it for
 *   unknown with an LDT: all four the other way).
 *
 * Each case runs in a child that far-jumps to 32-bit code below 4 GiB
 * and ends on ud2: a native int $0x80 then stops with SIGILL at that
 * ud2, a native SYSCALL writes to a pipe (and returns to the landing
 * pad of a vDSO this 64-bit process does not have), a trap raises
 * SIGSYS.  The child's first signal says which.
 */
#include <asm/ldt.h>
#include <linux/audit.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "tap.h"

#define PAGE 4096
#define USER32_CS 0x23
#define LDT_CS(entry) ((entry) << 3 | 4 | 3)	/* TI = LDT, RPL 3 */
#define I386_GETPID 20
#define I386_WRITE 4
#define INT80_UD2 7	/* offset of ud2 in the int $0x80 code */

struct outcome {
	int sig;
	siginfo_t si;
};

static struct outcome *out;

static void child_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (!out->sig) {
		out->sig = sig;
		out->si = *si;
	}
	_exit(0);
}

static void *low_page(int prot)
{
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);

	if (p == MAP_FAILED)
		tap_bail("mmap(MAP_32BIT): %s", strerror(errno));
	if (prot != (PROT_READ | PROT_WRITE) && mprotect(p, PAGE, prot))
		tap_bail("mprotect: %s", strerror(errno));
	return p;
}

/* A 32-bit code segment in LDT entry 0 with this base, 4 GiB long: 0 or -1. */
static int ldt_code_segment(uint32_t base)
{
	struct user_desc d = {
		.entry_number = 0,
		.base_addr = base,
		.limit = 0xfffff,
		.seg_32bit = 1,
		.contents = MODIFY_LDT_CONTENTS_CODE,
		.limit_in_pages = 1,
		.useable = 1,
	};

	return syscall(SYS_modify_ldt, 1, &d, sizeof(d)) ? -1 : 0;
}

static void __attribute__((noreturn)) jump32(uint16_t sel, uint32_t off, uint32_t stack)
{
	struct { uint32_t off; uint16_t sel; } __attribute__((packed)) far = { off, sel };

	__asm__ volatile("mov %k1, %%esp\n\tljmpl *(%0)" : : "r"(&far), "r"(stack) : "memory");
	__builtin_unreachable();
}

struct site_case {
	const unsigned char *code;	/* copied to the start of the code page */
	size_t len;
	int nosys;		/* the code page is PROT_NOSYSCALL */
	int other_nosys;	/* a NOSYSCALL page elsewhere */
	int ldt;		/* enter through an LDT segment based at the page */
	int add_ldt;		/* an LDT exists, but the flat CS is used */
	int in_range;		/* the code page is the always-native range */
	int vdso_range;		/* the vDSO (where the landing pad is) is */
	int sel;		/* the selector during the call */
	int fd_slot;		/* where the code wants the pipe's fd, or 0 */
	int data_slot;		/* where it wants the page's address + DATA_OFF, or 0 */
};

#define DATA_OFF 28	/* the text a SYSCALL case writes, in its page */
/*
 * From the start of the vDSO: more than it spans, whatever the landing
 * pad's offset (that of the 32-bit vDSO's image, which this 64-bit
 * process does not have mapped).
 */
#define VDSO_SPAN 0x10000

/*
 * Run one case in a child; returns the bytes that reached the pipe and
 * leaves what ended the child in *out.  *page gets the code's address.
 */
static int run_case(const struct site_case *c, void **page)
{
	unsigned char *code = low_page(PROT_READ | PROT_WRITE);
	unsigned char *stack = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	int fds[2], status, n;
	char buf[8];
	pid_t pid;

	if (stack == MAP_FAILED || pipe(fds))
		tap_bail("mmap/pipe: %s", strerror(errno));
	memcpy(code, c->code, c->len);
	if (c->fd_slot)
		memcpy(code + c->fd_slot, &(uint32_t){ (uint32_t)fds[1] }, 4);
	if (c->data_slot)
		memcpy(code + c->data_slot, &(uint32_t){ (uint32_t)(uintptr_t)(code + DATA_OFF) }, 4);
	if (mprotect(code, PAGE, PROT_READ | PROT_EXEC | (c->nosys ? PROT_NOSYSCALL : 0)))
		tap_bail("mprotect: %s", strerror(errno));
	*page = code;
	memset(out, 0, sizeof(*out));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		static const int sigs[] = { SIGSYS, SIGILL, SIGSEGV, SIGBUS, SIGTRAP, SIGFPE };
		unsigned long start = 0, len = 0;
		struct sigaction sa;
		size_t i;

		close(fds[0]);
		alarm(60);
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = child_signal;
		sa.sa_flags = SA_SIGINFO;
		for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			sigaction(sigs[i], &sa, NULL);
		if (c->other_nosys)
			low_page(PROT_READ | PROT_EXEC | PROT_NOSYSCALL);
		/* The parent reports an LDT that could not be made: exit 4. */
		if ((c->ldt || c->add_ldt) && ldt_code_segment((uint32_t)(uintptr_t)code))
			_exit(4);
		if (c->in_range)
			start = (unsigned long)code, len = PAGE;
		else if (c->vdso_range)
			start = getauxval(AT_SYSINFO_EHDR), len = VDSO_SPAN;
		if (dispatch_on(&test_sel, start, len) || set_perwine(1) == -1)
			_exit(3);
		test_sel = c->sel;
		jump32(c->ldt ? LDT_CS(0) : USER32_CS, c->ldt ? 0 : (uint32_t)(uintptr_t)code,
		       (uint32_t)(uintptr_t)(stack + 16 * PAGE - 64));
	}
	close(fds[1]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		tap_bail("fork/waitpid");
	if (exited_with(status, 4))
		tap_bail("modify_ldt() failed: this kernel has no CONFIG_MODIFY_LDT_SYSCALL");
	if (exited_with(status, 3))
		tap_bail("could not turn PER_WINE dispatch on in the child");
	n = read(fds[0], buf, sizeof(buf));
	close(fds[0]);
	munmap(stack, 16 * PAGE);
	return n;
}

static int trapped(int why, int nr)
{
	return out->sig == SIGSYS && out->si.si_code == SYS_USER_DISPATCH && out->si.si_errno == why &&
	       out->si.si_arch == AUDIT_ARCH_I386 && out->si.si_syscall == nr;
}

/*
 * int $0x80 ran natively: the child stopped on the ud2 after it (whose
 * si_addr is the offset in the code segment, as the trap reports it).
 */
static int int80_native(const struct site_case *c, const void *page)
{
	return out->sig == SIGILL &&
	       (uintptr_t)out->si.si_addr == (c->ldt ? 0 : (uintptr_t)page) + INT80_UD2;
}

static const unsigned char int80_getpid[] = {
	0xb8, I386_GETPID, 0, 0, 0,	/* mov $20, %eax */
	0xcd, 0x80,			/* int $0x80 */
	0x0f, 0x0b,			/* ud2 */
};

static void test_int80(void)
{
	struct site_case c = { .code = int80_getpid, .len = sizeof(int80_getpid), .sel = PERWINE_NATIVE };
	void *page;

	c.nosys = 1, c.ldt = 1;
	run_case(&c, &page);
	tap_ok(trapped(PERWINE_TRAP_VMA, I386_GETPID),
	       "int $0x80 through an LDT segment based at a NOSYSCALL page, NATIVE: VMA trap (signal %d, errno %d)",
	       out->sig, out->si.si_errno);
	c.ldt = 0;
	run_case(&c, &page);
	tap_ok(trapped(PERWINE_TRAP_VMA, I386_GETPID),
	       "control: the same page through the flat CS 0x23: VMA trap (signal %d, errno %d)",
	       out->sig, out->si.si_errno);

	c.nosys = 0, c.other_nosys = 1, c.ldt = 1;
	run_case(&c, &page);
	tap_ok(int80_native(&c, page),
	       "int $0x80 through an LDT segment based at an ordinary page, NOSYSCALL elsewhere: native (signal %d at %p)",
	       out->sig, out->si.si_addr);

	c.other_nosys = 0, c.in_range = 1, c.sel = PERWINE_TRAP;
	run_case(&c, &page);
	tap_ok(int80_native(&c, page),
	       "int $0x80 through an LDT segment based in the always-native range, TRAP: native (signal %d, errno %d)",
	       out->sig, out->si.si_errno);
	c.in_range = 0;
	run_case(&c, &page);
	tap_ok(trapped(PERWINE_TRAP_SELECTOR, I386_GETPID),
	       "control: the same outside the range, TRAP: selector trap (signal %d, errno %d)",
	       out->sig, out->si.si_errno);
}

/* write(fd, "fast", 4) by the 32-bit SYSCALL, then ud2; the text at DATA_OFF. */
static unsigned char syscall_write[DATA_OFF + 4];
static int syscall_insn;

static void make_syscall_write(struct site_case *c)
{
	unsigned char *p = syscall_write;

	*p++ = 0xb8, memcpy(p, &(uint32_t){ I386_WRITE }, 4), p += 4;	/* mov $4, %eax */
	*p++ = 0xbb, c->fd_slot = (int)(p - syscall_write), p += 4;	/* mov $fd, %ebx */
	*p++ = 0xb9, c->data_slot = (int)(p - syscall_write), p += 4;	/* mov $text, %ecx */
	*p++ = 0xba, memcpy(p, &(uint32_t){ 4 }, 4), p += 4;	/* mov $4, %edx */
	syscall_insn = (int)(p - syscall_write);
	*p++ = 0x0f, *p++ = 0x05;	/* syscall */
	*p++ = 0x0f, *p++ = 0x0b;	/* ud2 */
	memcpy(syscall_write + DATA_OFF, "fast", 4);
	c->code = syscall_write;
	c->len = sizeof(syscall_write);
}

/* Bytes written; *refused: the CPU raised #UD at the SYSCALL itself. */
static int run_syscall_case(const struct site_case *c, int *refused)
{
	void *page;
	int n = run_case(c, &page);

	*refused = out->sig == SIGILL && out->si.si_addr == (char *)page + syscall_insn;
	return n;
}

static void test_fast_syscall(void)
{
	struct site_case c = { .sel = PERWINE_TRAP, .in_range = 1 };
	int n, refused;

	make_syscall_write(&c);
	n = run_syscall_case(&c, &refused);
	if (refused) {
		tap_ok(1, "32-bit SYSCALL in the always-native range # SKIP this CPU refuses SYSCALL in compat mode");
		tap_ok(1, "32-bit SYSCALL, the landing pad in the range # SKIP this CPU refuses SYSCALL in compat mode");
		tap_ok(1, "32-bit SYSCALL with an LDT # SKIP this CPU refuses SYSCALL in compat mode");
		tap_ok(1, "32-bit SYSCALL in a NOSYSCALL page # SKIP this CPU refuses SYSCALL in compat mode");
		return;
	}
	tap_ok(n <= 0 && trapped(PERWINE_TRAP_SELECTOR, I386_WRITE),
	       "32-bit SYSCALL whose call site is in the always-native range, TRAP: judged at the landing pad, "
	       "outside it: selector trap (wrote %d, signal %d, errno %d)", n, out->sig, out->si.si_errno);
	c.in_range = 0, c.vdso_range = 1;
	n = run_syscall_case(&c, &refused);
	tap_ok(n == 4 && out->sig != SIGSYS,
	       "32-bit SYSCALL from outside the range, the vDSO's landing pad in it, TRAP: native (wrote %d, signal %d)",
	       n, out->sig);
	c.add_ldt = 1;
	n = run_syscall_case(&c, &refused);
	tap_ok(n == 4 && out->sig != SIGSYS,
	       "the same in a process with an LDT: native, the frame's code segment is flat (wrote %d, signal %d)",
	       n, out->sig);
	c.add_ldt = 0, c.vdso_range = 0, c.nosys = 1, c.sel = PERWINE_NATIVE;
	n = run_syscall_case(&c, &refused);
	tap_ok(n == 4 && out->sig != SIGSYS,
	       "32-bit SYSCALL from a NOSYSCALL page, NATIVE: native, the VMA check looks at the landing pad "
	       "(wrote %d, signal %d, errno %d)", n, out->sig, out->si.si_errno);
}

int main(void)
{
	tap_require_perwine_v2();
	tap_plan(9);
	out = mmap(NULL, sizeof(*out), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (out == MAP_FAILED)
		tap_bail("mmap(MAP_SHARED)");
	install_recorder();
	test_int80();
	test_fast_syscall();
	return tap_done();
}
