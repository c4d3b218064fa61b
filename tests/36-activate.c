// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ABI v3 "Switching dispatch on without the personality": under the
 * personality() rule of Docker's default seccomp profile (PER_WINE is
 * refused with EPERM, as wine/tests/nopersonality does), SET with
 * PERWINE_FLAG_ACTIVATE turns dispatch on for the thread; it lives as
 * the configuration does (fork keeps it, a new thread and execve do
 * not), OFF ends it; libperwine uses it where the personality is
 * refused.  A kernel without the flag fails the points that need it
 * to trap or to be set: SET refuses the unknown flag.
 */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "tap.h"

#define NR_PROBE 1000	/* no such syscall: a trap answers trap_return */

/* personality(): only the values Docker's profile allows, else EPERM. */
static int refuse_personality(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_personality, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x8, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x20000, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x20008, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffff, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static long set_flags(uint32_t flags)
{
	struct perwine_config cfg = { .selector = (uintptr_t)&test_sel, .flags = flags };

	return prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_SET, &cfg, PERWINE_CONFIG_SIZE_VER0, 0) ? -errno : 0;
}

/* One probe through the selector: the recorder's answer when it trapped. */
static int probe_traps(void)
{
	int before = trap_count;

	return trapped_call(NR_PROBE, 0, 0, 0) == trap_return && trap_count == before + 1;
}

static void fork_child(void)
{
	_exit(probe_traps() ? 0 : 1);
}

static void *thread_main(void *arg)
{
	struct perwine_config cfg;

	*(long *)arg = get_config(&cfg) == 0 ? (long)cfg.flags : -1L;
	return NULL;
}

/* This program again, in a forked child, through execve(). */
static int run_child_exec(char **argv)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid ? status : -1;
}

static long lib_answer(long nr, const long args[6], void *ctx)
{
	(void)args, (void)ctx;
	return nr == NR_PROBE ? 4711 : -ENOSYS;
}

int main(int argc, char **argv)
{
	struct perwine_config cfg;
	char line[256], *exec_argv[] = { argv[0], "exec-child", NULL };
	const char *why = NULL;
	long thread_flags = -2, r;
	pthread_t t;
	int status;

	/* After execve: report the configuration that survived it. */
	if (argc > 1 && strcmp(argv[1], "exec-child") == 0) {
		perwine_status_line("/proc/thread-self/status", line, sizeof(line));
		return get_config(&cfg) == 0 && cfg.flags == 0 && strncmp(line, "off ", 4) == 0 ? 0 : 1;
	}

	tap_require_perwine_v2();
	tap_plan(16);
	install_recorder();
	if (refuse_personality())
		tap_bail("seccomp filter: %s", strerror(errno));
	errno = 0;
	tap_ok(personality(PERWINE_PER_WINE) == -1 && errno == EPERM,
	       "the filter refuses personality(PER_WINE) with EPERM");

	r = set_flags(PERWINE_FLAG_ACTIVATE);
	tap_ok(r == -EINVAL, "SET ACTIVATE without ON: EINVAL (%ld)", r);
	r = set_flags(PERWINE_FLAG_ON | PERWINE_FLAG_ACTIVATE);
	tap_ok(r == 0, "SET ON | ACTIVATE: 0 (%ld)", r);
	tap_ok(get_config(&cfg) == 0 && cfg.flags == (PERWINE_FLAG_ON | PERWINE_FLAG_ACTIVATE),
	       "GET reports the flag (%#x)", cfg.flags);
	perwine_status_line("/proc/thread-self/status", line, sizeof(line));
	tap_ok(strncmp(line, "on ", 3) == 0 && strstr(line, "flags=0x5"),
	       "/proc/PID/status: on, with the flag: %s", line);
	tap_ok(probe_traps(), "the selector traps without the personality");
	tap_ok((personality(0xffffffff) & PERWINE_PER_MASK) == PER_LINUX,
	       "the personality is still PER_LINUX");
	status = run_child(fork_child);
	tap_ok(exited_with(status, 0), "a forked child keeps it: its selector traps (status %#x)", status);
	pthread_create(&t, NULL, thread_main, &thread_flags);
	pthread_join(t, NULL);
	tap_ok(thread_flags == 0, "a new thread has no configuration (flags %ld)", thread_flags);
	status = run_child_exec(exec_argv);
	tap_ok(exited_with(status, 0), "execve clears it with the configuration (status %#x)", status);
	r = prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);
	test_sel = PERWINE_TRAP;
	r = r ? -1 : test_syscall(SYS_getppid, 0, 0, 0);
	test_sel = PERWINE_NATIVE;
	tap_ok(r == getppid(), "OFF: the selector no longer traps (%ld)", r);

	/* libperwine, in the same sandbox. */
	tap_ok(perwine_available(&why) == 1,
	       "perwine_available says yes under the filter (%s)", why ? why : "no reason");
	r = perwine_enable(PERWINE_THREAD_SELECTOR);
	tap_ok(r == 0 && get_config(&cfg) == 0 && (cfg.flags & PERWINE_FLAG_ACTIVATE) &&
	       (personality(0xffffffff) & PERWINE_PER_MASK) == PER_LINUX,
	       "perwine_enable switches dispatch on by the flag (%ld, flags %#x)", r, cfg.flags);
	r = perwine_set_dispatcher(lib_answer, NULL);
	perwine_trap();
	r = r ? r : test_syscall(NR_PROBE, 0, 0, 0);
	perwine_native();
	tap_ok(r == 4711, "a trap reaches the dispatcher's callback (%ld)", r);
	tap_ok(perwine_available(NULL) == 1, "perwine_available still says yes once enabled");
	r = perwine_disable();
	tap_ok(r == 0 && get_config(&cfg) == 0 && cfg.flags == 0,
	       "perwine_disable turns it off (%ld, flags %#x)", r, cfg.flags);
	return tap_done();
}
