// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Probing the kernel and turning perwine on and off for one thread.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include "internal.h"

__thread volatile uint8_t perwine_thread_selector;
__thread struct perwine_thread perwine_self;

/*
 * The library's own syscalls go through perwine_native_syscall(), so that they
 * run natively even when the caller's selector still says TRAP.
 */
static long native_prctl(long op, long a2, long a3, long a4, long a5)
{
	return perwine_native_syscall(SYS_prctl, op, a2, a3, a4, a5, 0);
}

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

/*
 * Where the personality is refused, can PERWINE_FLAG_ACTIVATE switch
 * dispatch on instead (ABI v3)?  An enabled thread has shown it; a
 * thread without a configuration tries it, with no selector, and turns
 * it off again; one configured by someone else is left alone.
 */
static int activate_works(void)
{
	struct perwine_config cfg = { .flags = PERWINE_FLAG_ON | PERWINE_FLAG_ACTIVATE };
	struct perwine_config now;

	if (perwine_self.enabled)
		return perwine_self.activate;
	if (native_prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, (long)&now, sizeof(now), 0) || now.flags)
		return 0;
	if (native_prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, (long)&cfg, PERWINE_CONFIG_SIZE_VER0, 0))
		return 0;
	native_prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);
	return 1;
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
	} else if (personality_refused() && !activate_works()) {
		why = "a sandbox refuses personality(PER_WINE) (a seccomp filter such as Flatpak's or Docker's), "
		      "and the kernel lacks PERWINE_FLAG_ACTIVATE";
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

/*
 * Does the kernel know PERWINE_FLAG_REDIRECT (ABI v3)?  A SET of the
 * 48-byte structure with the flag but not ON changes nothing anywhere:
 * ABI v3 refuses the flag without ON (EINVAL), ABI v2 the non-zero
 * bytes past its 32 (E2BIG), ABI v1 the operation (EINVAL as well:
 * perwine_kernel_signal_native() tells it apart).
 */
static int kernel_has_redirect(void)
{
	static _Atomic int known;	/* 0 unknown, 1 no, 2 yes */
	int k = atomic_load(&known);

	if (!k) {
		struct perwine_config cfg = {
			.flags = PERWINE_FLAG_REDIRECT,
			.redirect = (uintptr_t)perwine_redirect_entry,
		};
		long v3 = native_prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, (long)&cfg,
				       PERWINE_CONFIG_SIZE_VER1, 0);

		k = v3 == -EINVAL && perwine_kernel_signal_native() ? 2 : 1;
		atomic_store(&known, k);
	}
	return k == 2;
}

int perwine_trap_mechanism(void)
{
	const char *env = getenv("PERWINE_REDIRECT");

	if (env && strcmp(env, "0") == 0)
		return PERWINE_MECHANISM_SIGSYS;
	return kernel_has_redirect() ? PERWINE_MECHANISM_REDIRECT : PERWINE_MECHANISM_SIGSYS;
}

/*
 * The configuration of the calling thread, with or without the redirect,
 * and switched on by the personality or by PERWINE_FLAG_ACTIVATE.
 */
static long set_config(volatile uint8_t *selector, int redirect, int activate)
{
	struct perwine_config cfg = {
		.selector = (uintptr_t)selector,
		.start = (uintptr_t)perwine_native_begin,
		.len = perwine_native_end - perwine_native_begin,
		.flags = PERWINE_FLAG_ON | PERWINE_FLAG_SIGNAL_NATIVE |
			 (activate ? PERWINE_FLAG_ACTIVATE : 0),
	};
	size_t size = PERWINE_CONFIG_SIZE_VER0;

	if (redirect) {
		cfg.flags |= PERWINE_FLAG_REDIRECT;
		cfg.redirect = (uintptr_t)perwine_redirect_entry;
		size = PERWINE_CONFIG_SIZE_VER1;
	}
	return native_prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, (long)&cfg, size, 0);
}

int perwine_thread_redirect(int on)
{
	long ret;

	if (!perwine_self.enabled || perwine_self.redirect == on)
		return 0;
	if (on && perwine_trap_mechanism() != PERWINE_MECHANISM_REDIRECT)
		return 0;
	ret = set_config(perwine_self.selector, on, perwine_self.activate);
	if (ret == 0)
		perwine_self.redirect = on;
	return ret;
}

int perwine_enable(volatile uint8_t *selector)
{
	unsigned long start = (unsigned long)perwine_native_begin;
	unsigned long len = perwine_native_end - perwine_native_begin;
	int redirect = perwine_dispatcher_redirects() &&
		       perwine_trap_mechanism() == PERWINE_MECHANISM_REDIRECT;
	long ret;
	int old;

	if (perwine_self.enabled)
		return -EEXIST;
	/*
	 * ABI v2: the kernel keeps the selector NATIVE in every signal
	 * handler; ABI v3 also returns traps to the redirect entry.
	 */
	ret = set_config(selector, redirect, 0);
	/* ABI v1 knows no SET: the library wraps handlers instead. */
	if (ret == -EINVAL)
		ret = native_prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_ON, (long)selector, start, len);
	if (ret < 0)
		return ret == -EINVAL ? -ENOSYS : ret;
	old = set_personality_type(PERWINE_PER_WINE);
	/* A sandbox refuses the personality: ABI v3 has the flag instead. */
	if (old < 0 && set_config(selector, redirect, 1) == 0) {
		perwine_self.activate = 1;
		old = PER_LINUX;
	}
	if (old < 0) {
		native_prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);
		return old;
	}
	perwine_self.redirect = redirect;
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
	/* A thread enabled by PERWINE_FLAG_ACTIVATE kept its personality. */
	ret = perwine_self.activate ? 0 : set_personality_type(perwine_self.old_type);
	if (ret < 0)
		return ret;
	ret = native_prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);
	if (ret < 0)
		return ret;
	perwine_self.selector = NULL;
	perwine_self.redirect = 0;
	perwine_self.activate = 0;
	perwine_self.enabled = 0;
	return 0;
}
