// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Probing the kernel and turning perwine on and off for one thread.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include "internal.h"

__thread volatile uint8_t perwine_thread_selector;
__thread struct perwine_thread perwine_self;

/* Does the config of the running kernel say the option is off? */
static int config_says_off(void)
{
	struct utsname u;
	char path[128 + sizeof(u.release)], line[256];
	int off = 0;
	FILE *f;

	if (uname(&u) != 0)
		return 0;
	snprintf(path, sizeof(path), "/boot/config-%s", u.release);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strcmp(line, "# CONFIG_PER_WINE_DISPATCH is not set\n") == 0)
			off = 1;
	fclose(f);
	return off;
}

/*
 * Sandboxes such as Flatpak's and Docker's default seccomp profiles let
 * personality() through only for the values they know: try PER_WINE
 * and put the old personality back at once.  A thread that is already
 * PER_WINE (under perwine-run, or enabled) has shown it works.
 */
static int personality_refused(void)
{
	long cur = perwine_native_syscall(SYS_personality, 0xffffffff, 0, 0, 0, 0, 0);
	long ret;

	if (cur < 0)
		return 1;
	if ((cur & PERWINE_PER_MASK) == PERWINE_PER_WINE)
		return 0;
	ret = perwine_native_syscall(SYS_personality, (cur & ~PERWINE_PER_MASK) | PERWINE_PER_WINE,
				     0, 0, 0, 0, 0);
	if (ret < 0)
		return 1;
	perwine_native_syscall(SYS_personality, cur, 0, 0, 0, 0, 0);
	return 0;
}

int perwine_available(const char **reason)
{
	const char *why = NULL;
#ifdef __x86_64__
	struct perwine_config cfg;

	if (prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, &cfg, sizeof(cfg), 0) != 0) {
		if (errno != EINVAL)
			why = "prctl(PR_WINE_DISPATCH) is refused here (a seccomp filter?)";
		else if (config_says_off())
			why = "the kernel was built without CONFIG_PER_WINE_DISPATCH";
		else
			why = "the kernel lacks the perwine patches (PR_WINE_DISPATCH is unknown)";
	} else if (personality_refused()) {
		why = "a sandbox refuses personality(PER_WINE) (a seccomp filter such as Flatpak's or Docker's)";
	}
#else
	why = "perwine exists on x86-64 only";
#endif
	if (reason)
		*reason = why;
	return why == NULL;
}

const char *perwine_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case -ENOSYS:
		return "the kernel has no perwine dispatch (see perwine_available())";
	case -EEXIST:
		return "perwine is already enabled in this thread";
	case -ENOENT:
		return "perwine is not enabled in this thread";
	case -EFAULT:
		return "the selector is not a user-space address";
	default:
		return err < 0 ? strerror(-err) : "not a perwine error code";
	}
}

/*
 * The library's own syscalls go through perwine_native_syscall(), so that they
 * run natively even when the caller's selector still says TRAP.
 */
static long native_prctl(long op, long a2, long a3, long a4, long a5)
{
	return perwine_native_syscall(SYS_prctl, op, a2, a3, a4, a5, 0);
}

/* Replace the type byte of the personality; returns the old type or -errno. */
static int set_personality_type(int type)
{
	long cur = perwine_native_syscall(SYS_personality, 0xffffffff, 0, 0, 0, 0, 0);
	long ret;

	if (cur < 0)
		return cur;
	ret = perwine_native_syscall(SYS_personality, (cur & ~PERWINE_PER_MASK) | type, 0, 0, 0, 0, 0);
	if (ret < 0)
		return ret;
	return cur & PERWINE_PER_MASK;
}

int perwine_enable(volatile uint8_t *selector)
{
	unsigned long start = (unsigned long)perwine_native_begin;
	unsigned long len = perwine_native_end - perwine_native_begin;
	long ret;
	int old;

	struct perwine_config cfg = {
		.selector = (uintptr_t)selector,
		.start = start,
		.len = len,
		.flags = PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE,
	};

	if (perwine_self.enabled)
		return -EEXIST;
	/* ABI v2: the kernel keeps the selector NATIVE in every signal handler. */
	ret = native_prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, (long)&cfg, sizeof(cfg), 0);
	/* ABI v1 knows no SET: the library wraps handlers instead. */
	if (ret == -EINVAL)
		ret = native_prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, (long)selector, start, len);
	if (ret < 0)
		return ret == -EINVAL ? -ENOSYS : ret;
	old = set_personality_type(PERWINE_PER_WINE);
	if (old < 0) {
		native_prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);
		return old;
	}
	perwine_self.selector = selector;
	perwine_self.old_type = old == PERWINE_PER_WINE ? PER_LINUX : old;
	perwine_self.enabled = 1;
	return 0;
}

int perwine_disable(void)
{
	long ret;

	if (!perwine_self.enabled)
		return -ENOENT;
	ret = set_personality_type(perwine_self.old_type);
	if (ret < 0)
		return ret;
	ret = native_prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);
	if (ret < 0)
		return ret;
	perwine_self.selector = NULL;
	perwine_self.enabled = 0;
	return 0;
}
