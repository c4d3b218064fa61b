// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperwine: perwine_map_code, perwine_unmap_code, perwine_protect and
 * perwine_syscall, with every error path.
 */
#include <sys/mman.h>

#include "tap.h"

/* The VmFlags line of the smaps entry that holds addr. */
static int vmflags(const void *addr, char *flags, size_t size)
{
	unsigned long a = (unsigned long)addr, lo, hi;
	char line[512];
	int inside = 0, found = 0;
	FILE *f = fopen("/proc/self/smaps", "re");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			inside = lo <= a && a < hi;
		else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
			snprintf(flags, size, "%.*s", (int)size - 1, line + 8);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

static int has_flag(const void *addr, const char *flag)
{
	char flags[512], want[8];

	snprintf(want, sizeof(want), " %s ", flag);
	return vmflags(addr, flags, sizeof(flags)) && strstr(flags, want) != NULL;
}

static int mapped(void *addr)
{
	unsigned char vec;

	return mincore(addr, 1, &vec) == 0;
}

/* perwine_syscall with the selector at TRAP and no dispatcher: native. */
static void syscall_while_trapping(void)
{
	long ppid = getppid(), ret;

	if (perwine_enable(PERWINE_THREAD_SELECTOR))
		_exit(2);
	perwine_trap();
	ret = perwine_syscall(SYS_getppid, 0, 0, 0, 0, 0, 0);
	perwine_native();
	_exit(ret == ppid ? 0 : 3);
}

int main(void)
{
	static const unsigned char ret_insn[] = { 0xc3 };
	long page_size = sysconf(_SC_PAGESIZE);
	void *code = NULL, *plain = NULL, *area;

	tap_require_perwine();
	tap_plan(20);

	tap_ok(perwine_map_code(NULL, 1, 0, &code) == -EINVAL, "map_code NULL code: -EINVAL");
	tap_ok(perwine_map_code(ret_insn, 0, 0, &code) == -EINVAL, "map_code length 0: -EINVAL");
	tap_ok(perwine_map_code(ret_insn, 1, 0, NULL) == -EINVAL, "map_code NULL addr: -EINVAL");
	tap_ok(perwine_map_code(ret_insn, 1, 0x80, &code) == -EINVAL, "map_code unknown flag: -EINVAL");
	tap_ok(perwine_map_code(ret_insn, (size_t)-1, 0, &code) == -EINVAL, "map_code huge length: -EINVAL");

	tap_ok(perwine_map_code(ret_insn, 1, 0, &code) == 0 && code, "map_code");
	tap_ok(has_flag(code, "ns") && has_flag(code, "ex") && !has_flag(code, "wr"),
	       "map_code pages: exec, not writable, PROT_NOSYSCALL (ns)");
	((void (*)(void))code)();
	tap_ok(1, "the mapped code runs");
	tap_ok(perwine_map_code(ret_insn, 1, PERWINE_MAP_NATIVE, &plain) == 0 &&
	       has_flag(plain, "ex") && !has_flag(plain, "ns"), "PERWINE_MAP_NATIVE: no ns");

	tap_ok(perwine_unmap_code(NULL, 1) == -EINVAL, "unmap_code NULL: -EINVAL");
	tap_ok(perwine_unmap_code(code, 0) == -EINVAL, "unmap_code length 0: -EINVAL");
	tap_ok(perwine_unmap_code(code, 1) == 0 && !mapped(code), "unmap_code unmaps");
	tap_ok(perwine_unmap_code((char *)plain + 1, 1) == -EINVAL, "unmap_code unaligned: -EINVAL");
	perwine_unmap_code(plain, 1);

	area = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	tap_ok(perwine_protect(NULL, 1, PROT_READ) == -EINVAL, "protect NULL: -EINVAL");
	tap_ok(perwine_protect((char *)area + 1, 1, PROT_READ) == -EINVAL, "protect unaligned: -EINVAL");
	tap_ok(perwine_protect(area, page_size, PROT_READ | PROT_EXEC) == 0 && has_flag(area, "ns"),
	       "protect adds PROT_NOSYSCALL");
	tap_ok(mprotect(area, page_size, PROT_READ) == 0 && !has_flag(area, "ns"),
	       "a plain mprotect takes it away again");
	munmap(area, page_size);

	tap_ok(perwine_syscall(SYS_getppid, 0, 0, 0, 0, 0, 0) == getppid(), "perwine_syscall getppid");
	tap_ok(perwine_syscall(100000, 0, 0, 0, 0, 0, 0) == -ENOSYS, "perwine_syscall unknown: -ENOSYS");
	tap_ok(exited_with(run_child(syscall_while_trapping), 0),
	       "perwine_syscall runs natively with the selector at TRAP");
	return tap_done();
}
