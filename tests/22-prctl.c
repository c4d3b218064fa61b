// SPDX-License-Identifier: LGPL-2.1-or-later
/* PR_WINE_DISPATCH: every documented error, and GET round-trips ON. */
#include "tap.h"

static int fails_with(int ret, int err)
{
	return ret == -1 && errno == err;
}

int main(void)
{
	struct perwine_config cfg;
	int r;

	tap_require_perwine();
	tap_plan(14);

	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, (unsigned long)&test_sel, ~0UL - 10, 20);
	tap_ok(fails_with(r, EINVAL), "ON with an overflowing range: EINVAL");
	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, 0xffffffff81000000UL, 0, 0);
	tap_ok(fails_with(r, EFAULT), "ON with a kernel-address selector: EFAULT");
	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 1, 0, 0);
	tap_ok(fails_with(r, EINVAL), "OFF with a non-zero argument: EINVAL");
	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 1, 0);
	tap_ok(fails_with(r, EINVAL), "OFF with a non-zero arg4: EINVAL");
	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 1);
	tap_ok(fails_with(r, EINVAL), "OFF with a non-zero arg5: EINVAL");
	r = prctl(PR_WINE_DISPATCH, 4, 0, 0, 0);
	tap_ok(fails_with(r, EINVAL), "unknown operation 4 (after SET, 3): EINVAL");
	r = prctl(PR_WINE_DISPATCH, 0x1000, 0, 0, 0);
	tap_ok(fails_with(r, EINVAL), "unknown operation 0x1000: EINVAL");
	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, &cfg, PERWINE_CONFIG_SIZE_VER0 - 1, 0);
	tap_ok(fails_with(r, EINVAL), "GET with a size below the first version's: EINVAL");
	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, 16, sizeof(cfg), 0);
	tap_ok(fails_with(r, EFAULT), "GET with a bad pointer: EFAULT");

	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, (unsigned long)&test_sel, 0x1000, 0x2000);
	tap_ok(r == 0, "ON with selector and range");
	memset(&cfg, 0xaa, sizeof(cfg));
	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, &cfg, sizeof(cfg), 0);
	tap_ok(r == 0 && cfg.selector == (uintptr_t)&test_sel && cfg.start == 0x1000 &&
	       cfg.len == 0x2000 && cfg.flags == PERWINE_CONFIG_ON && cfg.reserved == 0,
	       "GET returns what ON set");
	tap_ok(prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0) == 0, "OFF");
	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, &cfg, sizeof(cfg), 0);
	tap_ok(r == 0 && cfg.selector == 0 && cfg.start == 0 && cfg.len == 0 && cfg.flags == 0 &&
	       cfg.reserved == 0, "GET after OFF is all clear");
	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, 0, 0, 0);
	prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, &cfg, sizeof(cfg), 0);
	tap_ok(r == 0 && cfg.flags == PERWINE_CONFIG_ON && cfg.selector == 0,
	       "ON without a selector is accepted (VMA check only)");
	return tap_done();
}
