/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * elfdll.dll.so: an ELF builtin DLL ("winelib"), for case (d) of
 * rawsyscall.exe.
 *
 * Why it exists: Wine 11.10 turns Syscall User Dispatch off for the
 * whole process as soon as it loads a builtin DLL built as an ELF .so
 * (dlopen_dll() in dlls/ntdll/unix/loader.c calls
 * signal_disable_syscall_dispatch()), because such a DLL's code runs on
 * the Windows side, with the selector at BLOCK, and its syscalls come
 * from outside libc.  From then on the raw syscalls of Windows code go
 * to Linux.  perwine's VMA mode is meant to keep them caught.  A PE-only
 * Wine build (x86_64 PE modules, as wine/build-wine.sh makes) has no ELF
 * builtin of its own: its x86_64-unix directory holds only Unix
 * libraries (ntdll.so, win32u.so, *.so without .dll), which are loaded
 * by load_unixlib, not by dlopen_dll.  dlopen_dll is reached when
 *   - LoadLibrary is given a file that is not a PE image (the loader
 *     gets STATUS_INVALID_IMAGE_NOT_MZ and tries it as a .so:
 *     load_so_dll() in dlls/ntdll/loader.c, then in unix/loader.c), or
 *   - the builtin search (find_builtin_dll) finds NAME.dll.so in a dll
 *     path (WINEDLLPATH, the build tree) before a PE NAME.dll, or
 *   - the main program is a winelib NAME.exe.so;
 * and dlopen_dll accepts only a .so that exports __wine_spec_nt_header,
 * which winebuild generates from a .spec file.  So the way in is this
 * library, built with the winegcc of the same Wine, and loaded by its
 * path (rawsyscall.exe Z:\path\to\elfdll.dll.so).
 *
 * Build (gcc and binutils, and the Wine install or build tree it is
 * for; the library imports nothing from Windows DLLs, so it needs only
 * winecrt0, the Unix-side static library with the DLL entry point):
 *   from an install (bin/winegcc, lib/wine/x86_64-unix/libwinecrt0.a):
 *     $WINE/bin/winegcc -shared -nodefaultlibs -o elfdll.dll \
 *         elfdll.c elfdll.spec -lwinecrt0
 *   from a build tree as wine/build-wine.sh leaves it (BUILD, and SRC for
 *   the headers), after `make -C $BUILD libs/winecrt0/libwinecrt0.a`:
 *     $BUILD/tools/winegcc/winegcc --wine-objdir $BUILD -I$SRC/include \
 *         -shared -o elfdll.dll elfdll.c elfdll.spec -lwinecrt0
 * Both write elfdll.dll.so (winegcc names ELF output NAME.so).
 * rawsyscall checks is_elf, so that a library that is not ELF code is
 * reported as such, not taken for one.
 */
/* The base types and calling conventions are all it needs (and the rest
 * of windows.h wants headers that Wine generates at build time). */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "elfdll.h"

/*
 * What an ELF builtin may do and Windows code may not: a syscall from
 * its own code, outside libc.  Whatever the mode, Wine must let it run
 * natively (stock Wine by turning dispatch off and retrying it, VMA mode
 * by leaving ELF code out of PROT_NOSYSCALL and clearing the selector).
 * getppid because it has no side effect, and because if Wine took it
 * for an NT call, service 110 (NtAlpcCreatePort in 11.10) is a stub
 * that returns STATUS_NOT_IMPLEMENTED: wrong, but harmless and visible.
 */
static int64_t raw_linux_getppid(void)
{
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_getppid) : "rcx", "r11", "memory");
	return ret;
}

int WINAPI perwine_elfdll_probe(struct perwine_elfdll_probe *p)
{
	if (!p || p->size != sizeof(*p))
		return 0;
#ifdef __ELF__
	p->is_elf = 1;
#else
	p->is_elf = 0;
#endif
	p->raw_getppid = raw_linux_getppid();
	p->libc_getppid = getppid();
	p->libc_getpid = getpid();
	return 1;
}

/* Our own, so that winecrt0's default (which imports kernel32) is not linked. */
BOOL WINAPI DllMain(HINSTANCE inst, DWORD reason, void *reserved)
{
	(void)inst;
	(void)reason;
	(void)reserved;
	return TRUE;
}
