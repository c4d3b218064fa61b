// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ABI v2 "Extensible config": PR_WINE_DISPATCH_SET takes a struct
 * perwine_config whose size is its version; GET accepts any size from
 * 32 to the page size (ABI v3: a larger one is E2BIG, as for SET),
 * zero-fills what it does not know and reports SET's flags.
 */
#include <sys/mman.h>
#include "tap.h"

static long set_cfg(const void *cfg, unsigned long size, unsigned long arg5)
{
	return prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, cfg, size, arg5) ? -errno : 0;
}

static long get_cfg(void *cfg, unsigned long size, unsigned long arg5)
{
	return prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, cfg, size, arg5) ? -errno : 0;
}

int main(void)
{
	struct {
		struct perwine_config cfg;
		uint64_t tail[3];
	} big;
	struct perwine_config cfg, on = {
		.selector = (uintptr_t)&test_sel,
		.flags = PERWINE_FLAG_ON,
	};
	unsigned char *guard, *page;
	long r;

	tap_require_perwine_v2();
	tap_plan(30);

	tap_ok(PERWINE_CONFIG_SIZE_VER0 == 32 && PERWINE_CONFIG_SIZE_VER1 == sizeof(struct perwine_config),
	       "PERWINE_CONFIG_SIZE_VER0 is 32, VER1 sizeof(struct perwine_config) (%zu)", sizeof(cfg));

	/* Sizes */
	tap_ok(set_cfg(&on, 0, 0) == -EINVAL, "SET size 0: EINVAL");
	tap_ok(set_cfg(&on, 31, 0) == -EINVAL, "SET size 31: EINVAL");
	memset(&big, 0, sizeof(big));
	big.cfg = on;
	tap_ok(set_cfg(&big, sizeof(big), 0) == 0, "SET a larger struct with a zero tail: 0");
	big.tail[2] = 1;
	r = set_cfg(&big, sizeof(big), 0);
	tap_ok(r == -E2BIG, "SET a larger struct with a non-zero tail byte: E2BIG (%ld)", r);
	big.tail[2] = 0;
	/*
	 * Past the page size: the struct at the start of two zeroed pages,
	 * so that only the size rule can refuse it (copy_struct_from_user()
	 * would accept the zero tail), and one non-zero byte at a known
	 * offset within the size.
	 */
	page = zeroed_pages(2);
	memcpy(page, &on, sizeof(on));
	r = set_cfg(page, 4096, 0);
	tap_ok(r == 0, "SET a page-size struct with a zero tail: 0 (%ld)", r);
	page[4095] = 1;
	r = set_cfg(page, 4096, 0);
	tap_ok(r == -E2BIG, "SET a page-size struct with a non-zero byte at offset 4095: E2BIG (%ld)", r);
	page[4095] = 0;
	r = set_cfg(page, 4097, 0);
	tap_ok(r == -E2BIG, "SET size 4097 (above the page size) with a zero tail: E2BIG (%ld)", r);
	munmap(page, 2 * 4096);

	/* Bad pointers and arguments */
	tap_ok(set_cfg(NULL, sizeof(on), 0) == -EFAULT, "SET from NULL: EFAULT");
	guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	tap_ok(set_cfg(guard, sizeof(on), 0) == -EFAULT, "SET from a PROT_NONE page: EFAULT");
	tap_ok(set_cfg(&on, sizeof(on), 1) == -EINVAL, "SET with a non-zero arg5: EINVAL");
	cfg = on;
	cfg.reserved = 1;
	tap_ok(set_cfg(&cfg, sizeof(cfg), 0) == -EINVAL, "SET with reserved != 0: EINVAL");
	cfg = on;
	cfg.flags |= 1u << 7;
	tap_ok(set_cfg(&cfg, sizeof(cfg), 0) == -EINVAL, "SET with an unknown flag: EINVAL");
	cfg = on;
	cfg.start = ~0ull - 10;
	cfg.len = 100;
	tap_ok(set_cfg(&cfg, sizeof(cfg), 0) == -EINVAL, "SET with an overflowing range: EINVAL");
	cfg = on;
	cfg.selector = 0xffff800000000000ull;
	tap_ok(set_cfg(&cfg, sizeof(cfg), 0) == -EFAULT, "SET with a kernel-address selector: EFAULT");

	/* What SET stored is what GET reports, flags included. */
	cfg = on;
	cfg.start = 0x10000;
	cfg.len = 0x2000;
	cfg.flags = PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE;
	tap_ok(set_cfg(&cfg, sizeof(cfg), 0) == 0, "SET ON | SIGNAL_NATIVE with a range: 0");
	memset(&big, 0xa5, sizeof(big));
	tap_ok(get_cfg(&big, sizeof(big), 0) == 0, "GET into a larger buffer: 0");
	tap_ok(big.cfg.selector == (uintptr_t)&test_sel && big.cfg.start == 0x10000 &&
	       big.cfg.len == 0x2000 && big.cfg.reserved == 0,
	       "GET reports the selector, range and a zero reserved field");
	tap_ok(big.cfg.flags == (PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE),
	       "GET reports the flags SET stored (%#x)", big.cfg.flags);
	tap_ok(big.tail[0] == 0 && big.tail[1] == 0 && big.tail[2] == 0,
	       "GET zero-fills the rest of the caller's buffer");
	tap_ok(get_cfg(&big, 31, 0) == -EINVAL, "GET size 31: EINVAL");
	tap_ok(get_cfg(&big, sizeof(big.cfg), 1) == -EINVAL, "GET with a non-zero arg5: EINVAL");
	tap_ok(get_cfg(guard, sizeof(big.cfg), 0) == -EFAULT, "GET into a PROT_NONE page: EFAULT");
	page = zeroed_pages(2);
	memset(page, 0xa5, 2 * 4096);
	r = get_cfg(page, 4097, 0);
	tap_ok(r == -E2BIG && page[0] == 0xa5 && page[4096] == 0xa5,
	       "GET size 4097 (above the page size): E2BIG, the buffer untouched (%ld)", r);
	memset(page, 0xa5, 2 * 4096);
	tap_ok(get_cfg(page, 4096, 0) == 0 && page[4095] == 0 && page[4096] == 0xa5,
	       "GET size 4096: 0, zero-filled to the end of the page only");
	munmap(page, 2 * 4096);

	/* ON is SET with PERWINE_FLAG_ON: it drops SIGNAL_NATIVE. */
	dispatch_on(&test_sel, 0, 0);
	get_cfg(&cfg, sizeof(cfg), 0);
	tap_ok(cfg.flags == PERWINE_FLAG_ON, "ON after SET reports only PERWINE_FLAG_ON (%#x)", cfg.flags);

	/* Without ON: every other field zero is OFF, anything else EINVAL. */
	memset(&cfg, 0, sizeof(cfg));
	cfg.flags = PERWINE_FLAG_SIGNAL_NATIVE;
	tap_ok(set_cfg(&cfg, sizeof(cfg), 0) == -EINVAL, "SET SIGNAL_NATIVE without ON: EINVAL");
	memset(&cfg, 0, sizeof(cfg));
	cfg.selector = (uintptr_t)&test_sel;
	tap_ok(set_cfg(&cfg, sizeof(cfg), 0) == -EINVAL, "SET a selector without ON: EINVAL");
	memset(&cfg, 0, sizeof(cfg));
	tap_ok(set_cfg(&cfg, sizeof(cfg), 0) == 0, "SET all zero: 0 (OFF)");
	memset(&cfg, 0xff, sizeof(cfg));
	get_cfg(&cfg, sizeof(cfg), 0);
	tap_ok(cfg.selector == 0 && cfg.start == 0 && cfg.len == 0 && cfg.flags == 0,
	       "GET after SET OFF is all clear");
	return tap_done();
}
