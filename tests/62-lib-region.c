// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperwine: perwine_map_code, perwine_unmap_code, perwine_protect and
 * perwine_syscall, with every error path.
 */
#include <sys/mman.h>

#include "tap.h"

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
	/* mov $42, %eax; ret */
	static const unsigned char ret42[] = { 0xb8, 42, 0, 0, 0, 0xc3 };
	long page_size = sysconf(_SC_PAGESIZE);
	void *code = NULL, *plain = NULL, *area;

	tap_require_perwine();
	tap_plan(20);

	tap_ok(perwine_map_code(NULL, 1, 0, &code) == -EINVAL, "map_code NULL code: -EINVAL");
	tap_ok(perwine_map_code(ret_insn, 0, 0, &code) == -EINVAL, "map_code length 0: -EINVAL");
	tap_ok(perwine_map_code(ret_insn, 1, 0, NULL) == -EINVAL, "map_code NULL addr: -EINVAL");
	tap_ok(perwine_map_code(ret_insn, 1, 0x80, &code) == -EINVAL, "map_code unknown flag: -EINVAL");
	tap_ok(perwine_map_code(ret_insn, (size_t)-1, 0, &code) == -EINVAL, "map_code huge length: -EINVAL");

	tap_ok(perwine_map_code(ret42, sizeof(ret42), 0, &code) == 0 && code, "map_code");
	tap_ok(smaps_has_flag(code, "ns") && smaps_has_flag(code, "ex") && !smaps_has_flag(code, "wr"),
	       "map_code pages: exec, not writable, PROT_NOSYSCALL (ns)");
	tap_ok(((int (*)(void))code)() == 42, "the mapped code runs and returns 42");
	tap_ok(perwine_map_code(ret_insn, 1, PERWINE_MAP_NATIVE, &plain) == 0 &&
	       smaps_has_flag(plain, "ex") && !smaps_has_flag(plain, "ns"), "PERWINE_MAP_NATIVE: no ns");

	tap_ok(perwine_unmap_code(NULL, 1) == -EINVAL, "unmap_code NULL: -EINVAL");
	tap_ok(perwine_unmap_code(code, 0) == -EINVAL, "unmap_code length 0: -EINVAL");
	tap_ok(perwine_unmap_code(code, 1) == 0 && !mapped(code), "unmap_code unmaps");
	tap_ok(perwine_unmap_code((char *)plain + 1, 1) == -EINVAL, "unmap_code unaligned: -EINVAL");
	perwine_unmap_code(plain, 1);

	area = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	tap_ok(perwine_protect(NULL, 1, PROT_READ) == -EINVAL, "protect NULL: -EINVAL");
	tap_ok(perwine_protect((char *)area + 1, 1, PROT_READ) == -EINVAL, "protect unaligned: -EINVAL");
	tap_ok(perwine_protect(area, page_size, PROT_READ | PROT_EXEC) == 0 && smaps_has_flag(area, "ns"),
	       "protect adds PROT_NOSYSCALL");
	tap_ok(mprotect(area, page_size, PROT_READ) == 0 && !smaps_has_flag(area, "ns"),
	       "a plain mprotect takes it away again");
	munmap(area, page_size);

	tap_ok(perwine_syscall(SYS_getppid, 0, 0, 0, 0, 0, 0) == getppid(), "perwine_syscall getppid");
	tap_ok(perwine_syscall(100000, 0, 0, 0, 0, 0, 0) == -ENOSYS, "perwine_syscall unknown: -ENOSYS");
	tap_ok(exited_with(run_child(syscall_while_trapping), 0),
	       "perwine_syscall runs natively with the selector at TRAP");
	return tap_done();
}
