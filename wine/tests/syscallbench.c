/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * syscallbench.exe: what a syscall costs Windows code under Wine, by the
 * normal path (ntdll's export: thunk -> __wine_syscall_dispatcher, no
 * trap) and by a raw `syscall` from VirtualAlloc'd code (SIGSYS ->
 * sigsys_handler -> the dispatcher: the trapped path).
 *
 *   x86_64-w64-mingw32-gcc -O2 -Wall -Wextra -o syscallbench.exe syscallbench.c
 *   WINEPERWINE=MODE wine syscallbench.exe [ITERATIONS]   (default 20000)
 *
 * In mode none (Wine without syscall dispatch) raw syscalls are not
 * caught: the raw rows are left out, and the others are the baseline
 * that gives each other mode's interception cost.
 *
 * Every row is the best of 5 rounds of ITERATIONS calls, in ns per call
 * from QueryPerformanceCounter (Wine's runs at 10 MHz: a round of 20000
 * calls resolves 0.005 ns per call).  In the perwine guest under QEMU
 * with -icount shift=0 guest time advances 1 ns per guest instruction,
 * so the rows count guest instructions per call, wineserver's included
 * (one vCPU runs both).  Under noise a round only gets slower, so the
 * best round is the path's own cost.
 *
 * Rows (machine-readable, one per line: row<TAB>name<TAB>value):
 *   empty call                               rawsys_call() into `xor eax,eax; ret`
 *   NtGetCurrentProcessorNumber export|raw   cheap service (sched_getcpu): the
 *                                            trap's cost shows
 *   NtQueryInformationThread export|raw      ThreadBasicInformation: a wineserver
 *                                            round trip
 *   ... raw minus export                     the trap's extra cost per call
 *   Win32 SetFilePointer+ReadFile            a syscall-heavy Win32 loop: seek, read
 *                                            one byte of a temporary file, checked
 *   W^X JIT: VirtualProtect RW, write, RX,   a JIT's loop: a function written to
 *     call, ReadFile                         RW memory, made RX, called (its result
 *                                            checked), and one file read
 * All go through rawsys_call() (rawsys.h), which costs the same in every
 * row.  Each row checks its call once in full (rawsys.h's checks) before
 * it is timed, and each result in the timed loop (status, or processor
 * number below the count): a row whose calls are not caught prints
 * FAILED and is not timed, and the exit status is 1.  Other lines are
 * info<TAB>key<TAB>value or comments (#).
 */
#include "rawsys.h"

#define ROUNDS 5

static struct rs_ctx ctx;
static unsigned char *code;	/* raw stubs at 16 * service, the empty call after them */
static LARGE_INTEGER freq;
static int failed;

enum row_kind { ROW_EMPTY, ROW_GCPN, ROW_QIT, ROW_WIN32, ROW_WX };

#define FILE_BYTES 256
static HANDLE file;		/* FILE_BYTES bytes, byte i = i ^ 0x5a */
static unsigned char *jit;	/* the W^X row's page */

/* One Win32 read of byte I of the file, checked; 0 if right. */
static int read_byte(unsigned int i)
{
	unsigned char b = 0;
	DWORD got = 0;

	if (SetFilePointer(file, i % FILE_BYTES, NULL, FILE_BEGIN) != i % FILE_BYTES)
		return 1;
	if (!ReadFile(file, &b, 1, &got, NULL) || got != 1)
		return 1;
	return b != ((i % FILE_BYTES) ^ 0x5a);
}

/* The W^X row's iteration I: `mov eax, I; ret` written to the page while
 * it is PAGE_READWRITE, the page made PAGE_EXECUTE_READ and called, then
 * one file read; 0 if everything was right. */
static int jit_round(unsigned int i)
{
	DWORD old;

	if (!VirtualProtect(jit, 4096, PAGE_READWRITE, &old))
		return 1;
	jit[0] = 0xb8;	/* mov eax, imm32 */
	memcpy(jit + 1, &i, 4);
	jit[5] = 0xc3;	/* ret */
	if (!VirtualProtect(jit, 4096, PAGE_EXECUTE_READ, &old))
		return 1;
	FlushInstructionCache(GetCurrentProcess(), jit, 6);
	if ((unsigned int)rawsys_call(jit, 0, 0, 0, 0, 0) != i)
		return 1;
	return read_byte(i);
}

struct row {
	const char *name;
	enum row_kind kind;
	const void *fn;
	double best;	/* ns per call; < 0: failed */
};

/* One round of N calls; returns ns per call, or -1 if a result was wrong. */
static double round_ns(const struct row *r, unsigned int n)
{
	struct rs_thread_basic_info info;
	LARGE_INTEGER t0, t1;
	ULONG len, bad = 0;
	unsigned int i;

	QueryPerformanceCounter(&t0);
	switch (r->kind) {
	case ROW_EMPTY:
		for (i = 0; i < n; i++)
			bad += rawsys_call(r->fn, 0, 0, 0, 0, 0) != 0;
		break;
	case ROW_GCPN:
		for (i = 0; i < n; i++)
			bad += (ULONG)rawsys_call(r->fn, 0, 0, 0, 0, 0) >= ctx.ncpu;
		break;
	case ROW_QIT:
		for (i = 0; i < n; i++)
			bad += (LONG)(ULONG)rawsys_call(r->fn, (ULONG_PTR)GetCurrentThread(),
						   RS_THREAD_BASIC_INFORMATION, (ULONG_PTR)&info,
						   sizeof(info), (ULONG_PTR)&len) != 0;
		break;
	case ROW_WIN32:
		for (i = 0; i < n; i++)
			bad += read_byte(i);
		break;
	case ROW_WX:
		for (i = 0; i < n; i++)
			bad += jit_round(i);
		break;
	}
	QueryPerformanceCounter(&t1);
	if (bad)
		return -1;
	return (double)(t1.QuadPart - t0.QuadPart) * 1e9 / (double)freq.QuadPart / n;
}

static void measure(struct row *r, unsigned int n)
{
	char why[512];
	double ns[ROUNDS];
	int i;

	r->best = -1;
	/* Checked in full once: a row whose calls are not caught is not timed
	 * (the loops of the Win32 rows check each call as they go). */
	if ((r->kind == ROW_GCPN || r->kind == ROW_QIT) &&
	    !rs_call_checked(&ctx, r->kind == ROW_GCPN ? RS_GCPN : RS_QIT, r->fn, why, sizeof(why))) {
		printf("# %s: FAILED before timing: %s\n", r->name, why);
		return;
	}
	for (i = 0; i < ROUNDS; i++) {
		ns[i] = round_ns(r, n);
		if (ns[i] < 0) {
			printf("# %s: FAILED: a call in round %d gave a wrong result\n", r->name, i + 1);
			return;
		}
		if (r->best < 0 || ns[i] < r->best)
			r->best = ns[i];
	}
	printf("# %s: rounds", r->name);
	for (i = 0; i < ROUNDS; i++)
		printf(" %.1f", ns[i]);
	printf("\n");
}

static void print_row(const char *name, double v)
{
	if (v < 0) {
		printf("row\t%s\tFAILED\n", name);
		failed = 1;
	} else {
		printf("row\t%s\t%.1f\n", name, v);
	}
}

int main(int argc, char **argv)
{
	static const unsigned char empty[] = { 0x31, 0xc0, 0xc3 };	/* xor eax,eax; ret */
	const char *mode = rs_mode(), *version = rs_wine_version();
	const int no_dispatch = mode && !strcmp(mode, "none");	/* nothing catches a raw syscall */
	unsigned int n = 20000;
	char why[512], name[128];
	unsigned char bytes[FILE_BYTES];
	char tmp[MAX_PATH], path[MAX_PATH];
	DWORD written;
	struct row rows[7];
	int i, nrows = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1) {
		char *end;
		unsigned long v = strtoul(argv[1], &end, 10);

		if (*end || !v || v > 100000000) {
			printf("usage: syscallbench.exe [ITERATIONS]   (1 to 100000000, default 20000)\n");
			return 2;
		}
		n = (unsigned int)v;
	}
	if (!rs_init(&ctx, why, sizeof(why))) {
		printf("# syscallbench: %s\n", why);
		return 2;
	}
	QueryPerformanceFrequency(&freq);
	code = VirtualAlloc(NULL, 4096, MEM_COMMIT | MEM_RESERVE, PAGE_EXECUTE_READWRITE);
	if (!code) {
		printf("# syscallbench: VirtualAlloc failed, error %lu\n", (unsigned long)GetLastError());
		return 2;
	}
	memset(code, 0xcc, 4096);
	for (i = 0; i < RS_NFUNCS; i++)
		rs_emit_stub(code + 16 * i, ctx.nr[i]);
	memcpy(code + 16 * RS_NFUNCS, empty, sizeof(empty));
	FlushInstructionCache(GetCurrentProcess(), NULL, 0);
	jit = VirtualAlloc(NULL, 4096, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
	if (!jit) {
		printf("# syscallbench: VirtualAlloc failed, error %lu\n", (unsigned long)GetLastError());
		return 2;
	}
	for (i = 0; i < FILE_BYTES; i++)
		bytes[i] = (unsigned char)(i ^ 0x5a);
	if (!GetTempPathA(sizeof(tmp), tmp) || !GetTempFileNameA(tmp, "scb", 0, path)) {
		printf("# syscallbench: no temporary file, error %lu\n", (unsigned long)GetLastError());
		return 2;
	}
	file = CreateFileA(path, GENERIC_READ | GENERIC_WRITE, 0, NULL, CREATE_ALWAYS,
			   FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE, NULL);
	if (file == INVALID_HANDLE_VALUE || !WriteFile(file, bytes, FILE_BYTES, &written, NULL) ||
	    written != FILE_BYTES) {
		printf("# syscallbench: cannot write %s, error %lu\n", path, (unsigned long)GetLastError());
		return 2;
	}

	printf("info\tmode\t%s\n", mode ? mode : "(unset)");
	printf("info\twine\t%s\n", version ? version : "(not detected)");
	printf("info\titerations\t%u\n", n);
	printf("info\trounds\t%d\n", ROUNDS);
	printf("info\tqpc_frequency\t%lld\n", (long long)freq.QuadPart);
	for (i = 0; i < RS_NFUNCS; i++)
		printf("info\t%s\t%#x\n", rs_func_names[i], ctx.nr[i]);

	rows[nrows++] = (struct row){ "empty call", ROW_EMPTY, code + 16 * RS_NFUNCS, -1 };
	rows[nrows++] = (struct row){ "NtGetCurrentProcessorNumber export", ROW_GCPN,
				      ctx.exports[RS_GCPN], -1 };
	rows[nrows++] = (struct row){ "NtGetCurrentProcessorNumber raw", ROW_GCPN,
				      code + 16 * RS_GCPN, -1 };
	rows[nrows++] = (struct row){ "NtQueryInformationThread export", ROW_QIT,
				      ctx.exports[RS_QIT], -1 };
	rows[nrows++] = (struct row){ "NtQueryInformationThread raw", ROW_QIT,
				      code + 16 * RS_QIT, -1 };
	rows[nrows++] = (struct row){ "Win32 SetFilePointer+ReadFile", ROW_WIN32, NULL, -1 };
	rows[nrows++] = (struct row){ "W^X JIT: VirtualProtect RW, write, RX, call, ReadFile",
				      ROW_WX, NULL, -1 };

	for (i = 0; i < nrows; i++) {
		if (no_dispatch && strstr(rows[i].name, " raw")) {
			printf("# %s: not measured in mode none (nothing catches it)\n", rows[i].name);
			continue;
		}
		measure(&rows[i], n);
		print_row(rows[i].name, rows[i].best);
	}
	/* The trap's own cost: the raw row minus the export row of a service
	 * (rows 1-2 and 3-4).  Printed even if negative, which would be odd. */
	for (i = 1; i + 1 < nrows && rows[i + 1].kind == rows[i].kind; i += 2) {
		snprintf(name, sizeof(name), "%s raw minus export",
			 rows[i].kind == ROW_GCPN ? rs_func_names[RS_GCPN] : rs_func_names[RS_QIT]);
		if (no_dispatch)
			continue;
		if (rows[i].best < 0 || rows[i + 1].best < 0)
			print_row(name, -1);
		else
			printf("row\t%s\t%.1f\n", name, rows[i + 1].best - rows[i].best);
	}
	CloseHandle(file);
	return failed ? 1 : 0;
}
