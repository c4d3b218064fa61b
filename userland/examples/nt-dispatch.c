// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * nt-dispatch: a tiny "Windows" program whose raw syscall instructions,
 * with made-up NT-style numbers, are caught by perwine and emulated on
 * the Unix side, as Wine would do.
 *
 * The "Windows" code (below, in assembly) follows the NT x64 convention:
 * number in EAX, first argument in RCX copied to R10, then RDX, R8, R9;
 * the result is an NTSTATUS.  It runs twice: from a PROT_NOSYSCALL
 * mapping (the kernel's VMA fallback traps) and from a normal mapping
 * with the selector at TRAP.  Then the Unix side makes a native call,
 * and the Windows side ends the process with NtTerminateProcess.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "perwine.h"

/* Made-up service numbers in the style of ntdll's. */
#define NT_WRITE_FILE		0x0008
#define NT_TERMINATE_PROCESS	0x002c
#define NT_QUERY_SYSTEM_TIME	0x005a
#define NT_NO_SUCH_SERVICE	0x0fff

#define STATUS_SUCCESS			0x00000000L
#define STATUS_INVALID_HANDLE		0xc0000008L
#define STATUS_INVALID_SYSTEM_SERVICE	0xc000001cL

/* 100 ns intervals from 1601-01-01 to 1970-01-01. */
#define EPOCH_1601 116444736000000000ULL

/*
 * The Windows side, assembled into .rodata: it is data to this program
 * and becomes code only once copied into a mapping of its own.
 * win_main() returns 0 when each call gave the status it expects.
 */
extern const char win_begin[], win_main[], win_exit[], win_end[];
__asm__(".section .rodata\n"
	".balign 16\n"
	"win_begin:\n"
	"win_main:\n"
	"	sub $24, %rsp\n"
	/* NtWriteFile(handle 1, buffer, length) */
	"	mov $1, %ecx\n"
	"	lea win_msg(%rip), %rdx\n"
	"	mov $(win_msg_end - win_msg), %r8d\n"
	"	mov %rcx, %r10\n"
	"	mov $0x0008, %eax\n"
	"	syscall\n"
	"	test %eax, %eax\n"
	"	jnz 1f\n"
	/* NtQuerySystemTime(&time) */
	"	mov %rsp, %rcx\n"
	"	mov %rcx, %r10\n"
	"	mov $0x005a, %eax\n"
	"	syscall\n"
	"	test %eax, %eax\n"
	"	jnz 1f\n"
	/* A service that does not exist. */
	"	xor %ecx, %ecx\n"
	"	mov %rcx, %r10\n"
	"	mov $0x0fff, %eax\n"
	"	syscall\n"
	"	cmp $0xc000001c, %eax\n"
	"	jne 1f\n"
	"	xor %eax, %eax\n"
	"1:	add $24, %rsp\n"
	"	ret\n"
	/* win_exit(status): NtTerminateProcess(current process, status) */
	"win_exit:\n"
	"	mov $-1, %rcx\n"
	"	mov %rdi, %rdx\n"
	"	mov %rcx, %r10\n"
	"	mov $0x002c, %eax\n"
	"	syscall\n"
	"	ud2\n"
	"win_msg:\n"
	"	.ascii \"Hello from the Windows side!\\n\"\n"
	"win_msg_end:\n"
	"win_end:\n"
	".text\n");

static int emulated;

static const char *trap_kind(void)
{
	return perwine_trap_info()->si_errno == PERWINE_TRAP_VMA ? "vma" : "selector";
}

static long nt_write_file(long handle, const char *buf, unsigned long len)
{
	ssize_t n;

	if (handle != 1)
		return STATUS_INVALID_HANDLE;
	n = write(STDOUT_FILENO, buf, len);
	printf("  [%s] NtWriteFile(handle=%ld, length=%lu) = %s\n", trap_kind(), handle, len,
	       n == (ssize_t)len ? "STATUS_SUCCESS" : "STATUS_UNSUCCESSFUL");
	return n == (ssize_t)len ? STATUS_SUCCESS : 0xc0000001L;
}

static long nt_query_system_time(uint64_t *time_out)
{
	struct timespec ts;
	char when[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	*time_out = EPOCH_1601 + ts.tv_sec * 10000000ULL + ts.tv_nsec / 100;
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&ts.tv_sec));
	printf("  [%s] NtQuerySystemTime() = STATUS_SUCCESS, %s\n", trap_kind(), when);
	return STATUS_SUCCESS;
}

static long nt_terminate_process(long handle, long status)
{
	printf("  [%s] NtTerminateProcess(handle=%ld, status=%ld): exiting\n", trap_kind(),
	       handle, status);
	printf("nt-dispatch: %d syscalls emulated\n", emulated);
	fflush(stdout);
	_exit((int)status);
}

/* The NT convention puts argument 1 in R10, then RDX, R8, R9. */
static long nt_dispatch(long nr, const long args[6], void *ctx)
{
	long a1 = args[3], a2 = args[2], a3 = args[4];

	(void)ctx;
	emulated++;
	switch (nr) {
	case NT_WRITE_FILE:
		return nt_write_file(a1, (const char *)a2, a3);
	case NT_QUERY_SYSTEM_TIME:
		return nt_query_system_time((uint64_t *)a1);
	case NT_TERMINATE_PROCESS:
		return nt_terminate_process(a1, a2);
	default:
		printf("  [%s] syscall 0x%lx = STATUS_INVALID_SYSTEM_SERVICE\n", trap_kind(), nr);
		return STATUS_INVALID_SYSTEM_SERVICE;
	}
}

static void *map_windows_code(unsigned int flags)
{
	void *code;
	int err = perwine_map_code(win_begin, win_end - win_begin, flags, &code);

	if (err) {
		fprintf(stderr, "nt-dispatch: perwine_map_code: %s\n", perwine_strerror(err));
		exit(1);
	}
	return code;
}

static long (*entry(void *code, const char *sym))(long)
{
	return (long (*)(long))((char *)code + (sym - win_begin));
}

int main(void)
{
	const char *why;
	struct utsname u;
	void *nosys, *plain;
	long status;
	int err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	uname(&u);
	if (!perwine_available(&why)) {
		fprintf(stderr, "nt-dispatch: %s (kernel %s)\n", why, u.release);
		return 77;
	}
	printf("nt-dispatch: perwine available (kernel %s)\n", u.release);
	err = perwine_enable(PERWINE_THREAD_SELECTOR);
	if (!err)
		err = perwine_set_dispatcher(nt_dispatch, NULL);
	if (err) {
		fprintf(stderr, "nt-dispatch: %s\n", perwine_strerror(err));
		return 1;
	}
	nosys = map_windows_code(0);
	plain = map_windows_code(PERWINE_MAP_NATIVE);

	printf("== Windows code in a PROT_NOSYSCALL mapping, selector NATIVE ==\n");
	status = entry(nosys, win_main)(0);
	printf("  Windows code returned 0x%lx\n", status);

	printf("== Windows code in a normal mapping, selector TRAP ==\n");
	perwine_trap();
	status = entry(plain, win_main)(0);
	perwine_native();
	printf("  Windows code returned 0x%lx\n", status);

	printf("== Unix side, selector NATIVE: syscalls run natively ==\n");
	err = emulated;
	printf("  getppid() = %ld, emulated calls before and after: %d, %d\n",
	       (long)syscall(SYS_getppid), err, emulated);

	printf("== Windows code ends the process ==\n");
	entry(nosys, win_exit)(0);
	return 1;	/* not reached: NtTerminateProcess exits */
}
