// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * PROT_NOSYSCALL regions: code whose syscalls always trap, whatever the
 * selector says (the kernel's fallback check).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

static size_t page_round(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (len + page - 1) & ~(page - 1);
}

int perwine_protect(void *addr, size_t len, int prot)
{
	if (!addr || len == 0)
		return -EINVAL;
	if (mprotect(addr, len, prot | PROT_NOSYSCALL) != 0)
		return -errno;
	return 0;
}

int perwine_map_code(const void *code, size_t len, unsigned int flags, void **addr)
{
	int prot = PROT_READ | PROT_EXEC;
	size_t size;
	void *p;
	int ret;

	if (!code || len == 0 || !addr || (flags & ~PERWINE_MAP_NATIVE))
		return -EINVAL;
	size = page_round(len);
	if (size < len)
		return -EINVAL;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	memcpy(p, code, len);
	if (flags & PERWINE_MAP_NATIVE)
		ret = mprotect(p, size, prot) ? -errno : 0;
	else
		ret = perwine_protect(p, size, prot);
	if (ret < 0) {
		munmap(p, size);
		return ret;
	}
	*addr = p;
	return 0;
}

int perwine_unmap_code(void *addr, size_t len)
{
	if (!addr || len == 0)
		return -EINVAL;
	if (munmap(addr, page_round(len)) != 0)
		return -errno;
	return 0;
}
