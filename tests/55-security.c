// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Security properties: dispatch state belongs to one thread and cannot
 * be changed from outside it; selectors in kernel memory are refused;
 * nothing of it survives execve, setuid or not.  (That no path of
 * PERWINE_PER_WINE lets a syscall skip seccomp is 50-interplay's.)
 *
 *   55-security              run the tests
 *   55-security --exec-probe the program the tests execve: exits 0 when
 *                            it runs with no dispatch config and no
 *                            PROT_NOSYSCALL mapping, and its syscalls run
 */
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <sys/auxv.h>
#include "tap.h"

/* The config's flags, with 0x100 for a registered selector; -1 on error. */
static int config_flags(void)
{
	struct perwine_config cfg;

	if (get_config(&cfg))
		return -1;
	return (int)cfg.flags | (cfg.selector ? 0x100 : 0);
}

/*
 * In the new program.  Both execs were armed with PERWINE_PER_WINE |
 * ADDR_NO_RANDOMIZE; a setuid exec (AT_SECURE, another euid) must drop
 * the flag as PER_CLEAR_ON_SETID says, a plain one keeps it.
 */
static int exec_probe(int setuid)
{
	int per = personality(0xffffffff);

	if (setuid && (getauxval(AT_SECURE) != 1 || geteuid() != 65534 || geteuid() == getuid()))
		return 14;
	if (!setuid && (getauxval(AT_SECURE) != 0 || geteuid() != getuid()))
		return 15;
	if ((per & ADDR_NO_RANDOMIZE ? 0 : 1) != setuid)
		return 16;
	if (config_flags() != 0)
		return 10;
	if (smaps_count_flag("ns") != 0)
		return 11;
	/* PERWINE_PER_WINE is kept across execve; with no config nothing traps. */
	if ((personality(0xffffffff) & PERWINE_PER_MASK) != PERWINE_PER_WINE)
		return 12;
	if (test_syscall(SYS_getppid, 0, 0, 0) != getppid())
		return 13;
	return 0;
}

static void *thread_turns_off(void *arg)
{
	(void)arg;
	/* This thread's OFF, and an ON of its own, touch only itself. */
	prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);
	dispatch_on(NULL, 0, 0);
	prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);
	return NULL;
}

static char self_path[4096];
static char setuid_path[] = "/tmp/perwine-55-setuid-XXXXXX";

/* Everything armed, then execve: the new program must start clean. */
static void exec_armed(const char *path)
{
	void *page = mmap(NULL, 4096, PROT_READ | PROT_EXEC | PROT_NOSYSCALL,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long ret;

	/* The execve itself would trap: it runs from the always-native range. */
	if (page == MAP_FAILED || dispatch_on(&test_sel, (unsigned long)test_syscall_ret, 1) ||
	    personality(PERWINE_PER_WINE | ADDR_NO_RANDOMIZE) == -1)
		_exit(20);
	test_sel = PERWINE_TRAP;
	ret = test_syscall(SYS_execve, (long)path,
			   (long)(char *[]){ (char *)path,
					     path == setuid_path ? "--exec-probe-setuid" : "--exec-probe",
					     NULL },
			   (long)(char *[]){ NULL });
	_exit(ret == 0 ? 21 : 22);
}

static void exec_self(void)
{
	exec_armed(self_path);
}

static void exec_setuid(void)
{
	exec_armed(setuid_path);
}

/* A copy of this program, setuid to nobody: returns 0 when it is ready. */
static int make_setuid_copy(void)
{
	char buf[65536];
	ssize_t n;
	int in = open(self_path, O_RDONLY), out = mkstemp(setuid_path);

	if (in < 0 || out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			return -1;
	close(in);
	if (fchown(out, 65534, 65534) || fchmod(out, 04755))
		return -1;
	return close(out);
}

int main(int argc, char **argv)
{
	struct perwine_config cfg;
	pthread_t t;
	pid_t pid;
	int status;

	if (argc > 1 && strcmp(argv[1], "--exec-probe") == 0)
		return exec_probe(0);
	if (argc > 1 && strcmp(argv[1], "--exec-probe-setuid") == 0)
		return exec_probe(1);
	tap_require_perwine();
	tap_plan(10);
	if (!realpath("/proc/self/exe", self_path)) {
		printf("Bail out! realpath /proc/self/exe: %s\n", strerror(errno));
		return 1;
	}

	dispatch_on(&test_sel, 0, 0);
	pthread_create(&t, NULL, thread_turns_off, NULL);
	pthread_join(t, NULL);
	tap_ok(config_flags() == (PERWINE_CONFIG_ON | 0x100),
	       "another thread's OFF and ON leave this thread's config alone");

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);
		_exit(config_flags() == 0 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	tap_ok(exited_with(status, 0) && config_flags() == (PERWINE_CONFIG_ON | 0x100),
	       "a child's OFF leaves the parent's config alone");
	prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_OFF, 0, 0, 0);

	tap_ok(dispatch_on((volatile uint8_t *)0xffffffff81000000UL, 0, 0) == -1 && errno == EFAULT,
	       "a selector in the kernel text: EFAULT");
	tap_ok(dispatch_on((volatile uint8_t *)0xffff888000000000UL, 0, 0) == -1 && errno == EFAULT,
	       "a selector in the kernel direct map: EFAULT");
	/* Above TASK_SIZE_MAX with 4- and with 5-level page tables (TCG's -cpu max has LA57). */
	tap_ok(dispatch_on((volatile uint8_t *)0x0100000000000000UL, 0, 0) == -1 && errno == EFAULT,
	       "a selector above the user address space: EFAULT");
	tap_ok(dispatch_on((volatile uint8_t *)-1UL, 0, 0) == -1 && errno == EFAULT,
	       "a selector at the last address: EFAULT");
	tap_ok(prctl(PR_WINE_DISPATCH, PR_WINE_DISPATCH_GET, &cfg, sizeof(cfg), 0) == 0 &&
	       cfg.flags == 0 && cfg.selector == 0, "refused selectors leave nothing registered");

	tap_ok(exited_with(run_child(exec_self), 0),
	       "execve with selector TRAP and a PROT_NOSYSCALL mapping: the new program starts clean");
	tap_ok(make_setuid_copy() == 0, "a setuid-nobody copy of this test");
	status = run_child(exec_setuid);
	tap_ok(exited_with(status, 0),
	       "a setuid execve starts clean too, as nobody with AT_SECURE, ADDR_NO_RANDOMIZE dropped (%#x)",
	       status);
	unlink(setuid_path);

	return tap_done();
}
