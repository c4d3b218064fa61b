/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rawsyscall.exe: raw `syscall` instructions from Windows code, the way
 * DRM and anti-cheat code issues them, under Wine; every result checked.
 * TAP on stdout; exit status 0 only if every point that must pass does.
 *
 *   x86_64-w64-mingw32-gcc -O2 -Wall -Wextra -o rawsyscall.exe rawsyscall.c
 *   WINEPERWINE=MODE wine rawsyscall.exe [Z:\path\to\elfdll.dll.so]
 *   (MODE off, dropin, vma, dropin-sigsys, vma-sigsys, none or proton)
 *   RAWSYSCALL_EXPECT=MODE   judge as MODE, not as WINEPERWINE says (a
 *                            Wine that must fall back to stock SUD)
 *
 * Three services, their numbers read from ntdll's own export stubs
 * (mov eax, imm32), each checked by its effect (rawsys.h):
 *   NtGetCurrentProcessorNumber  a processor number below the count
 *   NtSetEvent                   our event becomes signaled, previous state 0
 *   NtQueryInformationThread     ThreadBasicInformation gives our TEB and
 *                                client id, written back with its length
 * from each of these places:
 *   export  ntdll's export itself (thunk -> dispatcher, no trap): the
 *           baseline, which proves the checks right
 *   (a)     a stub in this program's .text (a PE image section)
 *   (b)     a stub generated in VirtualAlloc(PAGE_EXECUTE_READWRITE) memory
 *   (b')    a stub written to PAGE_READWRITE memory, then made
 *           PAGE_EXECUTE_READ with VirtualProtect (a W^X JIT's way)
 *   (c)     a verbatim copy of ntdll's stub in VirtualAlloc memory: on
 *           Wine it tests SharedUserData->SystemCall (1 on Wine) and calls
 *           the dispatcher through 0x7ffe1000, so it must work without a
 *           trap, wherever it is copied
 *   (c')    the same copy with its SystemCall test removed (jne -> nop),
 *           as the stub runs on Windows: the raw syscall at offset 0x12
 *           of the copy
 * then a raw syscall with the trap flag set (one single-step exception,
 * at the next instruction), a storm of suspensions (SuspendThread,
 * GetThreadContext: SIGUSR1 in Wine) of a thread making raw syscalls,
 * then the kernel's view (/proc: PerWine: and its selector, 'ns' in
 * smaps, the redirect flag where RAWSYSCALL_REDIRECT=1 says the kernel
 * has it) against the mode, then (d): an ELF builtin DLL is loaded
 * (argv[1], built from elfdll/elfdll.c with winegcc), its own raw Linux
 * syscall must run natively, the selector must be as the mode leaves it
 * then (drop-in: perwine off; vma and auto: no selector, PROT_NOSYSCALL
 * alone), and every case above runs again.
 *
 * How a failure shows: a syscall that Wine does not catch runs as a
 * Linux syscall with the NT number; rawsys_call() zeroes RDI and RSI
 * first, so with 11.10's numbers that is arch_prctl(0, 0) or
 * rt_sigprocmask(0, NULL, ...) (-EINVAL, reported as "reached Linux"),
 * or alarm(0), which returns 0 and writes nothing back (caught by the
 * length and TEB checks).  A crash is reported as "Bail out!" with the
 * case it happened in.
 *
 * What must pass: everything, in every mode, except that in mode off
 * (stock Wine, also when WINEPERWINE is unset: with wine/patches, unset
 * is auto, so run it as WINEPERWINE=auto) and dropin (perwine as a
 * drop-in for SUD, with Wine's policy) the trapping cases of (d) are
 * expected to reach Linux, since Wine turns syscall dispatch off when an
 * ELF builtin loads: they are TODO there (TAP: not counted as failures),
 * and must pass in vma and any other mode.  In mode none (Wine without
 * syscall dispatch, a benchmark's baseline) every trapping case is TODO:
 * they show that nothing catches them.  proton (Proton's seccomp filter)
 * must pass everything, as vma and auto (perwine's default: the selector,
 * then PROT_NOSYSCALL from the first ELF builtin on).
 */
#include "rawsys.h"
#include "elfdll/elfdll.h"

#include <stdarg.h>

/* (a): the stub in .text.  The number comes from a variable, since .text
 * is not writable; DRM stubs with an immediate are case (b). */
extern volatile uint32_t rawsys_text_nr;
volatile uint32_t rawsys_text_nr;
extern const unsigned char rawsys_text_stub[];
__asm__(".text\n"
	".p2align 4\n"
	".globl rawsys_text_stub\n"
	"rawsys_text_stub:\n"
	"	movq %rcx, %r10\n"
	"	movl rawsys_text_nr(%rip), %eax\n"
	"	syscall\n"
	"	ret\n");

/* The same stub with the trap flag set for its syscall: one single-step
 * exception, at rawsys_step_next, the instruction after the syscall (stock
 * Wine's SIGSYS path puts it there, returning with iretq). */
extern const unsigned char rawsys_step_stub[], rawsys_step_next[];
__asm__(".text\n"
	".p2align 4\n"
	".globl rawsys_step_stub\n"
	"rawsys_step_stub:\n"
	"	movq %rcx, %r10\n"
	"	movl rawsys_text_nr(%rip), %eax\n"
	"	pushfq\n"
	"	orq $0x100, (%rsp)\n"
	"	popfq\n"
	"	syscall\n"
	".globl rawsys_step_next\n"
	"rawsys_step_next:\n"
	"	nop\n"
	"	ret\n");

enum source { SRC_EXPORT, SRC_TEXT, SRC_RWX, SRC_RX, SRC_COPY, SRC_COPY_RAW, NSRC };

static const struct {
	const char *tag;
	const char *what;
	int traps;	/* issues a raw syscall (so Wine must trap it) */
} sources[NSRC] = {
	{ "export", "ntdll's export (thunk -> dispatcher, no trap)", 0 },
	{ "(a)", "stub in the program's .text", 1 },
	{ "(b)", "stub generated in VirtualAlloc PAGE_EXECUTE_READWRITE memory", 1 },
	{ "(b')", "stub written RW, then VirtualProtect'ed to PAGE_EXECUTE_READ", 1 },
	{ "(c)", "verbatim copy of ntdll's stub in VirtualAlloc memory (no trap on Wine)", 0 },
	{ "(c')", "copy of ntdll's stub without its SystemCall test: raw syscall at +0x12", 1 },
};

/* Wine's and Windows' x64 stub from offset 8: test SystemCall; jne; syscall; ret. */
static const unsigned char stub_middle[] = {
	0xf6, 0x04, 0x25, 0x08, 0x03, 0xfe, 0x7f, 0x01,	/* 08: testb $1, 0x7ffe0308 */
	0x75, 0x03,					/* 10: jne 0x15 */
	0x0f, 0x05,					/* 12: syscall */
	0xc3,						/* 14: ret */
};
#define STUB_COPY_LEN 32	/* a whole stub, on Wine (32 bytes) and on Windows (24, padded to 32) */
#define STUB_SLOT 64

/* Our code in VirtualAlloc memory, and what each copy is. */
struct pages {
	unsigned char *rwx;	/* (b): one 16-byte slot per service */
	unsigned char *rx;	/* (b') */
	unsigned char *copies;	/* (c) at slot i, (c') at slot RS_NFUNCS + i */
	int copy_ok[RS_NFUNCS];	/* ntdll's stub has the known layout */
	char copy_why[RS_NFUNCS][96];
};

enum mode_kind { MODE_STOCK, MODE_DROPIN, MODE_VMA, MODE_AUTO, MODE_NONE, MODE_PROTON, MODE_OTHER };

static struct rs_ctx ctx;
static struct pages pages;
static enum mode_kind mode_kind;
static int mode_sigsys;		/* a perwine mode told not to use the kernel's redirect */
/* Mode none is Wine without syscall dispatch: every trapping case must fail. */
#define NONE_TODO "TODO mode none: no syscall dispatch, raw syscalls reach Linux"
static const char *mode_name;
static const char *volatile current_case = "setup";
static int tap_n, n_pass, n_fail, n_todo_fail, n_todo_pass, n_skip;

#define PLAN (2 * NSRC * RS_NFUNCS + 2 + 2 + 4 + 3)

static void tap(int ok, const char *directive, const char *fmt, ...) RS_PRINTF(3, 4);
static void tap(int ok, const char *directive, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (directive)
		printf(" # %s", directive);
	printf("\n");
	if (directive && !strncmp(directive, "SKIP", 4))
		n_skip++;
	else if (directive)
		ok ? n_todo_pass++ : n_todo_fail++;
	else
		ok ? n_pass++ : n_fail++;
}

/* Last chance: name the case, rather than leave a Wine crash dump. */
static LONG WINAPI crash_filter(EXCEPTION_POINTERS *ep)
{
	printf("Bail out! exception %#lx at %p during %s\n",
	       (unsigned long)ep->ExceptionRecord->ExceptionCode,
	       ep->ExceptionRecord->ExceptionAddress, current_case);
	fflush(stdout);
	TerminateProcess(GetCurrentProcess(), 3);
	return EXCEPTION_EXECUTE_HANDLER;
}

static void bail(const char *why)
{
	printf("Bail out! %s\n", why);
	exit(2);
}

static enum mode_kind classify_mode(const char *m)
{
	if (!m || !strcmp(m, "off"))
		return MODE_STOCK;
	if (!strcmp(m, "dropin") || !strcmp(m, "dropin-sigsys"))
		return MODE_DROPIN;
	if (!strcmp(m, "vma") || !strcmp(m, "vma-sigsys"))
		return MODE_VMA;
	if (!strcmp(m, "auto"))
		return MODE_AUTO;
	if (!strcmp(m, "none"))
		return MODE_NONE;
	if (!strcmp(m, "proton"))
		return MODE_PROTON;
	return MODE_OTHER;
}

/* Generate the stubs and copies.  Returns 0 with a reason on failure. */
static int make_pages(char *why, size_t n)
{
	DWORD old;
	int i;

	pages.rwx = VirtualAlloc(NULL, 4096, MEM_COMMIT | MEM_RESERVE, PAGE_EXECUTE_READWRITE);
	pages.rx = VirtualAlloc(NULL, 4096, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
	pages.copies = VirtualAlloc(NULL, 4096, MEM_COMMIT | MEM_RESERVE, PAGE_EXECUTE_READWRITE);
	if (!pages.rwx || !pages.rx || !pages.copies) {
		snprintf(why, n, "VirtualAlloc failed, error %lu", (unsigned long)GetLastError());
		return 0;
	}
	/* int3 filler, so that a jump past a stub stops at once. */
	memset(pages.rwx, 0xcc, 4096);
	memset(pages.rx, 0xcc, 4096);
	memset(pages.copies, 0xcc, 4096);
	for (i = 0; i < RS_NFUNCS; i++) {
		const unsigned char *src = ctx.exports[i];
		unsigned char *raw = pages.copies + STUB_SLOT * (RS_NFUNCS + i);

		rs_emit_stub(pages.rwx + 16 * i, ctx.nr[i]);
		rs_emit_stub(pages.rx + 16 * i, ctx.nr[i]);
		if (memcmp(src + 8, stub_middle, sizeof(stub_middle))) {
			snprintf(pages.copy_why[i], sizeof(pages.copy_why[i]),
				 "ntdll's stub at %p has an unknown layout (byte 8: %02x %02x %02x)",
				 (const void *)src, src[8], src[9], src[10]);
			continue;
		}
		/* Reading 32 bytes is safe: a stub is followed by more code. */
		memcpy(pages.copies + STUB_SLOT * i, src, STUB_COPY_LEN);
		memcpy(raw, src, STUB_COPY_LEN);
		raw[0x10] = 0x66;	/* jne 0x15 -> 66 90, a two-byte nop */
		raw[0x11] = 0x90;
		pages.copy_ok[i] = 1;
	}
	if (!VirtualProtect(pages.rx, 4096, PAGE_EXECUTE_READ, &old)) {
		snprintf(why, n, "VirtualProtect(PAGE_EXECUTE_READ) failed, error %lu",
			 (unsigned long)GetLastError());
		return 0;
	}
	FlushInstructionCache(GetCurrentProcess(), NULL, 0);
	return 1;
}

/* Where SOURCE's code for FUNC is, or NULL with a reason. */
static const void *code_for(enum source src, enum rs_func func, const char **why)
{
	switch (src) {
	case SRC_EXPORT:
		return ctx.exports[func];
	case SRC_TEXT:
		rawsys_text_nr = ctx.nr[func];
		return rawsys_text_stub;
	case SRC_RWX:
		return pages.rwx + 16 * func;
	case SRC_RX:
		return pages.rx + 16 * func;
	case SRC_COPY:
	case SRC_COPY_RAW:
		if (!pages.copy_ok[func]) {
			*why = pages.copy_why[func];
			return NULL;
		}
		return pages.copies + STUB_SLOT * (src == SRC_COPY ? func : RS_NFUNCS + func);
	default:
		*why = "no such source";
		return NULL;
	}
}

/* One point per source and service.  TODO, if set, is the directive for
 * the sources that trap. */
static void run_sources(const char *phase, const char *todo)
{
	char why[512], name[128];
	int s, f;

	for (s = 0; s < NSRC; s++) {
		for (f = 0; f < RS_NFUNCS; f++) {
			const char *directive = sources[s].traps ? todo : NULL;
			const char *nowhy = "";
			const void *fn = code_for(s, f, &nowhy);
			int ok;

			snprintf(name, sizeof(name), "%s %s %s (service %#x)", phase, sources[s].tag,
				 rs_func_names[f], ctx.nr[f]);
			if (!fn) {
				tap(0, directive, "%s: %s", name, nowhy);
				continue;
			}
			current_case = name;
			ok = rs_call_checked(&ctx, f, fn, why, sizeof(why));
			current_case = "between cases";
			tap(ok, directive, "%s: %s", name, why);
		}
	}
}

/* The elf phase's points, skipped, with their names. */
static void skip_elf_phase(const char *reason)
{
	char directive[600];
	int s, f;

	snprintf(directive, sizeof(directive), "SKIP %s", reason);
	tap(1, directive, "elf load: an ELF builtin DLL is loaded");
	tap(1, directive, "elf native: the ELF library's own raw Linux syscall runs natively");
	tap(1, directive, "elf vsyscall: time() by a call into the vsyscall page gives the time");
	tap(1, directive, "elf selector: the thread's selector as the mode leaves it");
	for (s = 0; s < NSRC; s++)
		for (f = 0; f < RS_NFUNCS; f++)
			tap(1, directive, "elf %s %s (service %#x)", sources[s].tag, rs_func_names[f],
			    ctx.nr[f]);
}

/* --- The kernel's view, through /proc --------------------------------- */

/*
 * Wine opens files in wineserver (server/fd.c), so Z:\proc\self would be
 * wineserver's.  Our Unix pid: the process whose comm is our image name
 * (Wine's set_process_name() sets it with PR_SET_NAME) and whose smaps
 * has our page at ADDR.  Windows' main thread is the process's initial
 * thread, so /proc/PID/status describes this thread.
 */
struct page_probe {
	const char *what;
	const void *addr;
	int found;
	int ns;
	char perms[8];
};

/* Fill PP from /proc/PID/smaps.  Returns -1 if it cannot be read. */
static int smaps_probe(unsigned long pid, struct page_probe *pp, int n)
{
	char path[64], line[4096];
	int inside[8] = { 0 };
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "Z:\\proc\\%lu\\smaps", pid);
	if (!(f = fopen(path, "rb")))
		return -1;
	for (i = 0; i < n && i < 8; i++)
		pp[i].found = pp[i].ns = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) == 3) {
			for (i = 0; i < n && i < 8; i++) {
				ULONG_PTR a = (ULONG_PTR)pp[i].addr;

				inside[i] = a >= lo && a < hi;
				if (inside[i]) {
					pp[i].found = 1;
					snprintf(pp[i].perms, sizeof(pp[i].perms), "%s", perms);
				}
			}
		} else if (!strncmp(line, "VmFlags:", 8)) {
			/* Tokens are two letters, space separated: look for " ns". */
			int has_ns = strstr(line, " ns ") || strstr(line, " ns\n");

			for (i = 0; i < n && i < 8; i++)
				if (inside[i])
					pp[i].ns = has_ns;
		}
	}
	fclose(f);
	return 0;
}

static unsigned long find_unix_pid(const void *addr, char *why, size_t n)
{
	char exe[MAX_PATH], comm[32], path[64], *base;
	WIN32_FIND_DATAA fd;
	HANDLE h;
	unsigned long found = 0;

	if (!GetModuleFileNameA(NULL, exe, sizeof(exe))) {
		snprintf(why, n, "GetModuleFileName failed");
		return 0;
	}
	base = strrchr(exe, '\\') ? strrchr(exe, '\\') + 1 : exe;
	if (strlen(base) > 15)
		base[15] = 0;	/* the kernel keeps 15 characters of a comm */
	if ((h = FindFirstFileA("Z:\\proc\\*", &fd)) == INVALID_HANDLE_VALUE) {
		snprintf(why, n, "no Z:\\proc (not Linux, or no Z: drive)");
		return 0;
	}
	do {
		struct page_probe pp = { "probe", addr, 0, 0, "" };
		char *end;
		unsigned long pid = strtoul(fd.cFileName, &end, 10);
		FILE *f;

		if (*end || !pid)
			continue;
		snprintf(path, sizeof(path), "Z:\\proc\\%lu\\comm", pid);
		if (!(f = fopen(path, "rb")))
			continue;
		comm[0] = 0;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		comm[strcspn(comm, "\n")] = 0;
		if (_stricmp(comm, base))
			continue;
		if (smaps_probe(pid, &pp, 1) == 0 && pp.found) {
			found = pid;
			break;
		}
	} while (FindNextFileA(h, &fd));
	FindClose(h);
	if (!found)
		snprintf(why, n, "no process named %s with our page %p in /proc", base, addr);
	return found;
}

/* The value of KEY's line in /proc/PID/status, or "" if there is none. */
static int status_line(unsigned long pid, const char *key, char *out, size_t n)
{
	char path[64], line[512];
	size_t klen = strlen(key);
	FILE *f;

	out[0] = 0;
	snprintf(path, sizeof(path), "Z:\\proc\\%lu\\status", pid);
	if (!(f = fopen(path, "rb")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, klen)) {
			char *v = line + klen;

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = 0;
			snprintf(out, n, "%s", v);
			break;
		}
	}
	fclose(f);
	return 0;
}

static unsigned long unix_pid;

/* The number after KEY ("selector=", "flags=") in a PerWine: status line,
 * 0 when the line has none. */
static unsigned long long perwine_field(const char *perwine, const char *key)
{
	const char *v = strstr(perwine, key);

	return v ? strtoull(v + strlen(key), NULL, 0) : 0;
}

/*
 * The selector that PERWINE, a PerWine: status line, shows, as the mode
 * needs in PHASE: before an ELF builtin loads ("kernel"), both perwine
 * modes register one; after ("elf", once the builtin's own syscall
 * trapped on it), drop-in mode has turned perwine off, as Wine turns SUD
 * off, and vma mode has left the selector and kept the PROT_NOSYSCALL
 * rule alone.  The other modes are not PER_WINE.
 */
static void selector_check(const char *phase, const char *perwine)
{
	unsigned long long sel = perwine_field(perwine, "selector=");
	int on = !strncmp(perwine, "on", 2), elf = !strcmp(phase, "elf"), ok;
	const char *want;

	switch (mode_kind) {
	case MODE_DROPIN:
		want = elf ? "off" : "on with a selector";
		ok = elf ? !on : on && sel;
		break;
	case MODE_VMA:
	case MODE_AUTO:
		want = elf ? "on without a selector" : "on with a selector";
		ok = on && (elf ? !sel : !!sel);
		break;
	case MODE_OTHER:
		tap(1, "SKIP no expectation for this mode", "%s selector: PerWine: %s", phase, perwine);
		return;
	default:
		want = "not PER_WINE";
		ok = !on;
		break;
	}
	tap(ok, NULL, "%s selector: PerWine %s, as mode %s needs %s an ELF builtin loads (%s)", phase,
	    want, mode_name ? mode_name : "off", elf ? "once" : "until",
	    perwine[0] ? perwine : "no PerWine: line");
}

static void kernel_checks(void)
{
	struct page_probe pp[] = {
		{ "(a) .text", rawsys_text_stub, 0, 0, "" },
		{ "(b) RWX", pages.rwx, 0, 0, "" },
		{ "(b') RX", pages.rx, 0, 0, "" },
		{ "(c) copies", pages.copies, 0, 0, "" },
	};
	const int npp = (int)(sizeof(pp) / sizeof(pp[0]));
	char why[256], perwine[256], nosys[64], list[512];
	int i, want_on, want_ns, all = 1, none = 1, ok;
	size_t len = 0;

	unix_pid = find_unix_pid(pages.rwx, why, sizeof(why));
	if (!unix_pid) {
		/* Off Linux there is nothing to look at; on it, not finding
		 * ourselves would make these checks blind: a failure. */
		int linux_proc = GetFileAttributesA("Z:\\proc\\self") != INVALID_FILE_ATTRIBUTES;

		tap(!linux_proc, linux_proc ? NULL : "SKIP no /proc", "kernel: PerWine: state (%s)", why);
		tap(!linux_proc, linux_proc ? NULL : "SKIP no /proc", "kernel selector: (%s)", why);
		tap(!linux_proc, linux_proc ? NULL : "SKIP no /proc", "kernel: trap mechanism (%s)", why);
		tap(!linux_proc, linux_proc ? NULL : "SKIP no /proc", "kernel: PROT_NOSYSCALL pages (%s)", why);
		return;
	}
	printf("# Unix pid %lu\n", unix_pid);

	status_line(unix_pid, "PerWine:", perwine, sizeof(perwine));
	status_line(unix_pid, "VmNoSys:", nosys, sizeof(nosys));
	printf("# /proc/%lu/status: PerWine: %s; VmNoSys: %s\n", unix_pid,
	       perwine[0] ? perwine : "(none: not a perwine kernel)", nosys[0] ? nosys : "(none)");
	/* Stock Wine uses SUD, not the PER_WINE personality; both patched modes set it. */
	want_on = mode_kind == MODE_DROPIN || mode_kind == MODE_VMA || mode_kind == MODE_AUTO;
	if (mode_kind == MODE_OTHER)
		tap(1, "SKIP no expectation for this mode", "kernel: PerWine: %s", perwine);
	else if (want_on)
		tap(!strncmp(perwine, "on", 2), NULL, "kernel: PerWine: on, as mode %s needs (%s)",
		    mode_name ? mode_name : "off", perwine[0] ? perwine : "no PerWine: line");
	else
		tap(strncmp(perwine, "on", 2) != 0, NULL, "kernel: not PER_WINE, as mode %s needs (%s)",
		    mode_name ? mode_name : "off", perwine[0] ? perwine : "no PerWine: line");
	selector_check("kernel", perwine);

	/* PERWINE_FLAG_REDIRECT (0x8): where the kernel has it (wine-check.sh says
	 * so in RAWSYSCALL_REDIRECT), both modes return traps without a signal */
	{
		const char *env = getenv("RAWSYSCALL_REDIRECT");
		unsigned long flags = (unsigned long)perwine_field(perwine, "flags=");
		int want = want_on && !mode_sigsys && env && !strcmp(env, "1");

		if (!env || mode_kind == MODE_OTHER)
			tap(1, "SKIP RAWSYSCALL_REDIRECT not set", "kernel: trap mechanism (%s)", perwine);
		else
			tap(!!(flags & 0x8) == want, NULL, "kernel: traps %s, as mode %s on this kernel "
			    "needs (flags %#lx)", want ? "redirected (PERWINE_FLAG_REDIRECT)" : "by SIGSYS",
			    mode_name ? mode_name : "off", flags);
	}

	smaps_probe(unix_pid, pp, npp);
	list[0] = 0;
	for (i = 0; i < npp; i++) {
		len += snprintf(list + len, sizeof(list) - len, "%s%s %s%s", i ? ", " : "", pp[i].what,
				pp[i].found ? pp[i].perms : "unmapped?", pp[i].ns ? " ns" : "");
		if (len >= sizeof(list))
			len = sizeof(list) - 1;
		all &= pp[i].ns;
		none &= !pp[i].ns;
	}
	want_ns = mode_kind == MODE_VMA;
	if (mode_kind == MODE_OTHER) {
		tap(1, "SKIP no expectation for this mode", "kernel: pages: %s", list);
		return;
	}
	ok = want_ns ? all : none;
	tap(ok, NULL, "kernel: %s on the stub pages, as mode %s needs: %s",
	    want_ns ? "PROT_NOSYSCALL" : "no PROT_NOSYSCALL", mode_name ? mode_name : "off", list);
}

/* --- signals and single-stepping around a trapped syscall --------------- */

static volatile LONG step_count;
static const void *volatile step_addr;

static LONG WINAPI step_handler(EXCEPTION_POINTERS *ep)
{
	if (ep->ExceptionRecord->ExceptionCode != EXCEPTION_SINGLE_STEP)
		return EXCEPTION_CONTINUE_SEARCH;
	if (InterlockedIncrement(&step_count) == 1)
		step_addr = ep->ExceptionRecord->ExceptionAddress;
	ep->ContextRecord->EFlags &= ~0x100;
	return EXCEPTION_CONTINUE_EXECUTION;
}

/* A raw syscall with the trap flag set: its result right and one single-step
 * exception, at the instruction after it, wherever Wine took the trap. */
static void step_check(const char *todo)
{
	char why[512];
	void *veh;
	int ok;

	current_case = "step: a raw syscall with the trap flag set";
	step_count = 0;
	step_addr = NULL;
	if (!(veh = AddVectoredExceptionHandler(1, step_handler))) {
		tap(0, NULL, "step: AddVectoredExceptionHandler failed, error %lu",
		    (unsigned long)GetLastError());
		return;
	}
	rawsys_text_nr = ctx.nr[RS_GCPN];
	ok = rs_call_checked(&ctx, RS_GCPN, rawsys_step_stub, why, sizeof(why));
	RemoveVectoredExceptionHandler(veh);
	tap(ok && step_count == 1 && step_addr == rawsys_step_next, todo,
	    "step: a raw syscall from .text with the trap flag set: %s; %ld single-step "
	    "exception(s), the first at %p (expected one, at %p)", why, (long)step_count,
	    step_addr, (const void *)rawsys_step_next);
}

/* time() by a call into the legacy vsyscall page (0xffffffffff600400),
 * as Linux-aware DRM may make it from Windows code: rawsys_call() passes
 * RDI = 0, time(NULL).  It must give the time, as natively: perwine traps
 * it where SUD does not, and Wine must not take it for an NT call. */
static void vsyscall_check(const char *phase)
{
	ULONGLONG now;
	FILETIME ft;
	LONG64 t;

	current_case = "vsyscall: time() through the vsyscall page";
	t = (LONG64)rawsys_call((const void *)0xffffffffff600400ULL, 0, 0, 0, 0, 0);
	GetSystemTimeAsFileTime(&ft);
	now = ((((ULONGLONG)ft.dwHighDateTime << 32) | ft.dwLowDateTime) - 116444736000000000ULL) /
	      10000000;
	tap(t > 0 && (ULONGLONG)t <= now && now - (ULONGLONG)t <= 2, NULL,
	    "%s vsyscall: time() by a call into the vsyscall page gives the time (%lld, Windows' "
	    "clock %llu)", phase, (long long)t, (unsigned long long)now);
}

#define STORM_SUSPENDS 200
#define STORM_MIN_CALLS 1000

static volatile LONG storm_done;

/* Raw syscalls from (b) until the other thread has done its suspensions;
 * returns the number of calls, negated at the first wrong result. */
static DWORD WINAPI storm_thread(void *arg)
{
	char why[512];
	LONG n = 0;

	(void)arg;
	while (!storm_done || n < STORM_MIN_CALLS) {
		enum rs_func f = n & 1 ? RS_QIT : RS_GCPN;

		if (!rs_call_checked(&ctx, f, pages.rwx + 16 * f, why, sizeof(why))) {
			printf("# storm: call %ld (%s): %s\n", (long)n, rs_func_names[f], why);
			return (DWORD)-n - 1;
		}
		n++;
	}
	return (DWORD)n;
}

/* A thread making raw syscalls, suspended, read and resumed over and over
 * (each suspension a SIGUSR1 that may land anywhere on the way from the
 * syscall to Wine's dispatcher and back): every result right, the thread
 * alive.  Where the contexts were is printed, not judged: stock Wine shows
 * some inside its dispatcher's prolog. */
static void storm_check(const char *todo)
{
	int suspends = 0, at_syscall = 0, in_stub = 0, other = 0, ok;
	DWORD calls = 0;
	HANDLE th;
	CONTEXT c;

	current_case = "storm: suspensions during raw syscalls";
	storm_done = 0;
	if (!(th = CreateThread(NULL, 0, storm_thread, NULL, 0, NULL))) {
		tap(0, NULL, "storm: CreateThread failed, error %lu", (unsigned long)GetLastError());
		return;
	}
	while (suspends < STORM_SUSPENDS && WaitForSingleObject(th, 0) == WAIT_TIMEOUT) {
		if (SuspendThread(th) == (DWORD)-1)
			break;
		memset(&c, 0, sizeof(c));
		c.ContextFlags = CONTEXT_FULL;
		if (GetThreadContext(th, &c)) {
			const unsigned char *rip = (const unsigned char *)c.Rip;

			if (rip >= pages.rwx && rip < pages.rwx + 16 * RS_NFUNCS) {
				in_stub++;
				at_syscall += rip[0] == 0x0f && rip[1] == 0x05;
			} else {
				other++;
			}
		}
		ResumeThread(th);
		suspends++;
	}
	storm_done = 1;
	WaitForSingleObject(th, INFINITE);
	GetExitCodeThread(th, &calls);
	CloseHandle(th);
	ok = (LONG)calls >= STORM_MIN_CALLS && suspends == STORM_SUSPENDS;
	tap(ok, todo, "storm: %ld raw syscalls from (b), every result right, while another thread "
	    "suspended and read it %d times (contexts: %d in the stubs, %d of them at the syscall, "
	    "%d elsewhere)", (long)(LONG)calls, suspends, in_stub, at_syscall, other);
}

/* --- (d): an ELF builtin ------------------------------------------------ */

static void elf_phase(const char *dll)
{
	struct perwine_elfdll_probe p;
	perwine_elfdll_probe_fn probe;
	char reason[512], todo[256], perwine[256];
	HMODULE h;
	int ok;

	if (!dll) {
		skip_elf_phase("no ELF library given: rawsyscall.exe Z:\\path\\to\\elfdll.dll.so "
			       "(build it from wine/tests/elfdll/elfdll.c with winegcc)");
		return;
	}
	current_case = "elf load";
	if (!(h = LoadLibraryA(dll))) {
		DWORD err = GetLastError();

		snprintf(reason, sizeof(reason), "LoadLibrary(%s) failed, error %lu (%s)", dll,
			 (unsigned long)err,
			 GetFileAttributesA(dll) == INVALID_FILE_ATTRIBUTES ? "no such file" :
			 "the file exists: is it a winelib .so built for this Wine?");
		skip_elf_phase(reason);
		return;
	}
	probe = (perwine_elfdll_probe_fn)(ULONG_PTR)GetProcAddress(h, PERWINE_ELFDLL_PROBE);
	if (!probe) {
		snprintf(reason, sizeof(reason), "%s loaded at %p but has no %s: not wine/tests/elfdll",
			 dll, (void *)h, PERWINE_ELFDLL_PROBE);
		skip_elf_phase(reason);
		return;
	}
	memset(&p, 0, sizeof(p));
	p.size = sizeof(p);
	current_case = "elf probe (the ELF library's own raw syscall)";
	if (!probe(&p)) {
		snprintf(reason, sizeof(reason), "%s at %p refused the probe (another version of "
			 "elfdll.h)", dll, (void *)h);
		skip_elf_phase(reason);
		return;
	}
	if (!p.is_elf) {
		snprintf(reason, sizeof(reason), "%s at %p is not ELF code", dll, (void *)h);
		skip_elf_phase(reason);
		return;
	}
	tap(1, NULL, "elf load: %s is an ELF builtin at %p (its Unix pid %lld%s)", dll, (void *)h,
	    (long long)p.libc_getpid,
	    unix_pid && (unsigned long long)p.libc_getpid != unix_pid ? ", not the one /proc gave!" : "");
	/* Whatever the mode, Wine must let an ELF builtin's own syscalls run. */
	ok = p.raw_getppid > 0 && p.raw_getppid == p.libc_getppid;
	tap(ok, NULL, "elf native: the ELF library's own raw Linux syscall runs natively "
	    "(raw getppid %lld, libc's %lld)", (long long)p.raw_getppid, (long long)p.libc_getppid);
	perwine[0] = 0;
	if (unix_pid && status_line(unix_pid, "PerWine:", perwine, sizeof(perwine)) == 0)
		printf("# after the ELF load: PerWine: %s\n", perwine[0] ? perwine : "(none)");
	selector_check("elf", perwine);
	/* the first trap after the load: Wine's dispatch is off, perwine's still on */
	vsyscall_check("elf");

	todo[0] = 0;
	if (mode_kind == MODE_NONE)
		snprintf(todo, sizeof(todo), "%s", NONE_TODO);
	else if (mode_kind == MODE_STOCK || mode_kind == MODE_DROPIN)
		snprintf(todo, sizeof(todo), "TODO mode %s: Wine turns syscall dispatch off for the "
			 "process when an ELF builtin loads (dlopen_dll), so raw syscalls reach Linux",
			 mode_name ? mode_name : "off");
	run_sources("elf", todo[0] ? todo : NULL);
}

int main(int argc, char **argv)
{
	const char *version;
	char why[512];
	int s, f;

	setvbuf(stdout, NULL, _IONBF, 0);
	SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOGPFAULTERRORBOX);
	SetUnhandledExceptionFilter(crash_filter);

	mode_name = rs_mode();
	if (getenv("RAWSYSCALL_EXPECT")) {
		printf("# WINEPERWINE=%s, judged as RAWSYSCALL_EXPECT=%s\n",
		       mode_name ? mode_name : "(unset)", getenv("RAWSYSCALL_EXPECT"));
		mode_name = getenv("RAWSYSCALL_EXPECT");
	}
	mode_kind = classify_mode(mode_name);
	mode_sigsys = mode_name && strstr(mode_name, "-sigsys") != NULL;
	version = rs_wine_version();
	printf("# rawsyscall: WINEPERWINE=%s (%s)\n", mode_name ? mode_name : "(unset)",
	       mode_kind == MODE_STOCK ? "stock Wine: Syscall User Dispatch" :
	       mode_kind == MODE_DROPIN ? "perwine selector, a drop-in for SUD" :
	       mode_kind == MODE_VMA ? "perwine VMA mode: PROT_NOSYSCALL Windows code" :
	       mode_kind == MODE_AUTO ? "perwine's default: the selector, PROT_NOSYSCALL at an ELF load" :
	       mode_kind == MODE_NONE ? "no syscall dispatch: raw syscalls reach Linux" :
	       mode_kind == MODE_PROTON ? "Proton's seccomp filter in place of SUD" :
	       "unknown mode: every case must pass");
	printf("# Wine %s\n", version ? version : "not detected (no wine_get_version)");

	if (!rs_init(&ctx, why, sizeof(why)))
		bail(why);
	for (f = 0; f < RS_NFUNCS; f++)
		printf("# %s: service %#x, read from ntdll's stub at %p (uncaught: Linux syscall %u, %s)\n",
		       rs_func_names[f], ctx.nr[f], ctx.exports[f], ctx.nr[f], rs_linux_name(ctx.nr[f]));
	if (!make_pages(why, sizeof(why)))
		bail(why);
	for (s = 0; s < NSRC; s++)
		printf("# %s = %s\n", sources[s].tag, sources[s].what);

	printf("1..%d\n", PLAN);
	run_sources("base", mode_kind == MODE_NONE ? NONE_TODO : NULL);
	step_check(mode_kind == MODE_NONE ? NONE_TODO : NULL);
	vsyscall_check("base");
	storm_check(mode_kind == MODE_NONE ? NONE_TODO : NULL);
	kernel_checks();
	elf_phase(argc > 1 ? argv[1] : NULL);

	printf("# rawsyscall, mode %s: %d passed, %d failed, %d todo (expected failures), "
	       "%d todo passed, %d skipped\n", mode_name ? mode_name : "(unset)", n_pass, n_fail,
	       n_todo_fail, n_todo_pass, n_skip);
	if (tap_n != PLAN)
		printf("# plan mismatch: %d points for a plan of %d\n", tap_n, PLAN);
	return n_fail || tap_n != PLAN ? 1 : 0;
}
