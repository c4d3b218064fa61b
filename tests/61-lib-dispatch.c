// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperwine: the simple dispatcher, by redirect or SIGSYS (tests/65
 * runs this under PERWINE_REDIRECT=0).  The callback gets the number, the
 * six argument registers and its context; its result is what the
 * trapped syscall returns; the selector is NATIVE while it runs and
 * back at TRAP afterwards; other SIGSYS go to the previous action.
 */
#include <sys/time.h>

#include "tap.h"

#define NR_ECHO		1000	/* returns the sum of args[i] * (i + 1) */
#define NR_FAIL		1001	/* returns -EPERM */
#define NR_NEST		1002	/* traps NR_ECHO again from inside the callback */
#define NR_SIGNAL	1003	/* sends itself SIGUSR1 */
#define NR_CLOBBER	1004	/* zeroes every vector register */

static struct {
	long nr, args[6];
	void *ctx;
	int selector;		/* selector value seen in the callback */
	long ppid;		/* a native getppid made in the callback */
	siginfo_t info;
	int calls;
} seen;
static volatile int usr1_count, prev_calls, prev_code;

static long weigh(const long args[6])
{
	long sum = 0;

	for (int i = 0; i < 6; i++)
		sum += args[i] * (i + 1);
	return sum;
}

#define XMM_LIST "xmm0","xmm1","xmm2","xmm3","xmm4","xmm5","xmm6","xmm7","xmm8","xmm9","xmm10","xmm11","xmm12","xmm13","xmm14","xmm15"
#define CLOBBER_XMM \
	"pxor %%xmm0, %%xmm0\n" \
	"pxor %%xmm1, %%xmm1\n" \
	"pxor %%xmm2, %%xmm2\n" \
	"pxor %%xmm3, %%xmm3\n" \
	"pxor %%xmm4, %%xmm4\n" \
	"pxor %%xmm5, %%xmm5\n" \
	"pxor %%xmm6, %%xmm6\n" \
	"pxor %%xmm7, %%xmm7\n" \
	"pxor %%xmm8, %%xmm8\n" \
	"pxor %%xmm9, %%xmm9\n" \
	"pxor %%xmm10, %%xmm10\n" \
	"pxor %%xmm11, %%xmm11\n" \
	"pxor %%xmm12, %%xmm12\n" \
	"pxor %%xmm13, %%xmm13\n" \
	"pxor %%xmm14, %%xmm14\n" \
	"pxor %%xmm15, %%xmm15\n"

static long callback(long nr, const long args[6], void *ctx)
{
	long ret;

	seen.calls++;
	seen.nr = nr;
	memcpy(seen.args, args, sizeof(seen.args));
	seen.ctx = ctx;
	seen.selector = perwine_thread_selector;
	seen.ppid = getppid();
	seen.info = *perwine_trap_info();
	switch (nr) {
	case NR_ECHO:
		return weigh(args);
	case NR_FAIL:
		return -EPERM;
	case NR_NEST:
		perwine_trap();
		ret = test_syscall6(NR_ECHO, 1, 0, 0, 0, 0, 0);
		perwine_native();
		/* The outer trap is the one being handled again. */
		return perwine_trap_info()->si_syscall == NR_NEST ? ret + 100 : -1;
	case NR_CLOBBER:
		__asm__ volatile(CLOBBER_XMM ::: XMM_LIST);
		return 0;
	case NR_SIGNAL:
		ret = usr1_count;
		kill(getpid(), SIGUSR1);
		return usr1_count - ret;	/* 1: taken while the callback ran */
	default:
		return -ENOSYS;
	}
}

static long other_callback(long nr, const long args[6], void *ctx)
{
	(void)args, (void)ctx;
	return -nr;
}

static void on_usr1(int sig)
{
	(void)sig;
	usr1_count++;
}

static volatile int trap_selector = -1, trap_ppid_ok;

/* SIGTRAP from an int3 on the foreign side: must run natively. */
static void on_sigtrap(int sig)
{
	(void)sig;
	trap_selector = perwine_thread_selector;
	trap_ppid_ok = getppid() == seen.ppid;
}

static void previous_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	prev_calls++;
	prev_code = si->si_code;
}

static void sigsys_default_kills(void)
{
	signal(SIGSYS, SIG_DFL);
	perwine_set_dispatcher(callback, NULL);
	kill(getpid(), SIGSYS);
	_exit(0);
}

static void sigsys_ignored_stays_ignored(void)
{
	signal(SIGSYS, SIG_IGN);
	perwine_set_dispatcher(callback, NULL);
	kill(getpid(), SIGSYS);
	_exit(0);
}

/*
 * With SIGSYS blocked a signal trap kills (the kernel forces the default
 * action); a redirected trap takes no signal and reaches the callback.
 */
static void trap_with_sigsys_blocked(void)
{
	sigset_t set;
	long ret;

	sigemptyset(&set);
	sigaddset(&set, SIGSYS);
	sigprocmask(SIG_BLOCK, &set, NULL);
	perwine_trap();
	ret = test_syscall6(NR_ECHO, 1, 0, 0, 0, 0, 0);
	perwine_native();
	_exit(ret == 1 ? 0 : 1);
}

/*
 * A syscall keeps the vector registers, and so does a trap whose
 * callback (or libc in it) uses them: XMM0-15 hold a pattern across a
 * trapped NR_CLOBBER.
 */
static int vectors_survive(void)
{
	static uint64_t in[32], out[32];

	for (int i = 0; i < 32; i++)
		in[i] = 0x0101010101010101ULL * (i + 1);
	perwine_trap();
	__asm__ volatile("movdqu 0(%[in]), %%xmm0\n"
			 "movdqu 16(%[in]), %%xmm1\n"
			 "movdqu 32(%[in]), %%xmm2\n"
			 "movdqu 48(%[in]), %%xmm3\n"
			 "movdqu 64(%[in]), %%xmm4\n"
			 "movdqu 80(%[in]), %%xmm5\n"
			 "movdqu 96(%[in]), %%xmm6\n"
			 "movdqu 112(%[in]), %%xmm7\n"
			 "movdqu 128(%[in]), %%xmm8\n"
			 "movdqu 144(%[in]), %%xmm9\n"
			 "movdqu 160(%[in]), %%xmm10\n"
			 "movdqu 176(%[in]), %%xmm11\n"
			 "movdqu 192(%[in]), %%xmm12\n"
			 "movdqu 208(%[in]), %%xmm13\n"
			 "movdqu 224(%[in]), %%xmm14\n"
			 "movdqu 240(%[in]), %%xmm15\n"
			 "mov %[nr], %%eax\n"
			 "syscall\n"
			 "movdqu %%xmm0, 0(%[out])\n"
			 "movdqu %%xmm1, 16(%[out])\n"
			 "movdqu %%xmm2, 32(%[out])\n"
			 "movdqu %%xmm3, 48(%[out])\n"
			 "movdqu %%xmm4, 64(%[out])\n"
			 "movdqu %%xmm5, 80(%[out])\n"
			 "movdqu %%xmm6, 96(%[out])\n"
			 "movdqu %%xmm7, 112(%[out])\n"
			 "movdqu %%xmm8, 128(%[out])\n"
			 "movdqu %%xmm9, 144(%[out])\n"
			 "movdqu %%xmm10, 160(%[out])\n"
			 "movdqu %%xmm11, 176(%[out])\n"
			 "movdqu %%xmm12, 192(%[out])\n"
			 "movdqu %%xmm13, 208(%[out])\n"
			 "movdqu %%xmm14, 224(%[out])\n"
			 "movdqu %%xmm15, 240(%[out])\n"
			 :
			 : [in] "r"(in), [out] "r"(out), [nr] "i"(NR_CLOBBER)
			 : "rax", "rcx", "r11", "memory", XMM_LIST);
	perwine_native();
	return memcmp(in, out, sizeof(in)) == 0;
}

static long trap6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	uint8_t after;
	long ret;

	perwine_trap();
	ret = test_syscall6(nr, a1, a2, a3, a4, a5, a6);
	after = perwine_thread_selector;
	perwine_native();	/* before printing: printf's write would trap */
	tap_ok(after == PERWINE_TRAP, "nr %ld: selector back at TRAP after the trap", nr);
	return ret;
}

int main(void)
{
	static const unsigned char vma_code[] = { 0x48, 0x89, 0xf8, 0x0f, 0x05, 0xc3 }; /* mov %rdi,%rax; syscall; ret */
	long (*vma_call)(long nr);
	struct sigaction act, old;
	struct perwine_config cfg;
	int mechanism, want, redirect_off, status;
	uint8_t after;
	int ctx_word;
	void *page;
	long ret;

	tap_require_perwine();
	tap_plan(40);
	install_sigsys(previous_sigsys);
	signal(SIGUSR1, on_usr1);

	tap_ok(perwine_set_dispatcher(NULL, NULL) == -ENOENT, "removing a dispatcher never set: -ENOENT");
	tap_ok(perwine_enable(PERWINE_THREAD_SELECTOR) == 0, "enable");
	tap_ok(perwine_set_dispatcher(callback, &ctx_word) == 0, "set the dispatcher");
	mechanism = perwine_trap_mechanism();
	redirect_off = getenv("PERWINE_REDIRECT") && strcmp(getenv("PERWINE_REDIRECT"), "0") == 0;
	get_config(&cfg);
	/* The guest's kernels have ABI v3: there, only the variable turns it off. */
	if (redirect_off)
		want = PERWINE_MECHANISM_SIGSYS;
	else if (getenv("PERWINE_REQUIRE"))
		want = PERWINE_MECHANISM_REDIRECT;
	else
		want = mechanism;
	tap_ok(mechanism == want &&
	       !!(cfg.flags & PERWINE_FLAG_REDIRECT) == (mechanism == PERWINE_MECHANISM_REDIRECT),
	       "traps come by %s (PERWINE_REDIRECT=%s), as the thread's configuration says (flags %#x)",
	       mechanism == PERWINE_MECHANISM_REDIRECT ? "redirect" : "SIGSYS",
	       getenv("PERWINE_REDIRECT") ? getenv("PERWINE_REDIRECT") : "unset", cfg.flags);
	status = run_child(trap_with_sigsys_blocked);
	tap_ok(mechanism == PERWINE_MECHANISM_REDIRECT ? exited_with(status, 0) : killed_by(status, SIGSYS),
	       "with SIGSYS blocked, a trap %s", mechanism == PERWINE_MECHANISM_REDIRECT ?
	       "still reaches the callback: no signal" : "kills: it is a signal");

	ret = trap6(NR_ECHO, 1, 2, 3, 4, 5, 6);
	tap_ok(ret == 1 + 4 + 9 + 16 + 25 + 36, "the callback's result is the syscall's result");
	tap_ok(seen.nr == NR_ECHO && seen.ctx == &ctx_word, "the callback got the number and its context");
	tap_ok(seen.args[0] == 1 && seen.args[1] == 2 && seen.args[2] == 3 && seen.args[3] == 4 &&
	       seen.args[4] == 5 && seen.args[5] == 6, "the callback got rdi, rsi, rdx, r10, r8, r9");
	tap_ok(seen.selector == PERWINE_NATIVE, "the selector is NATIVE in the callback");
	tap_ok(seen.ppid == getppid(), "a syscall in the callback runs natively");
	tap_ok(seen.info.si_code == SYS_USER_DISPATCH && seen.info.si_errno == PERWINE_TRAP_SELECTOR &&
	       seen.info.si_syscall == NR_ECHO && seen.info.si_call_addr == (void *)test_syscall6_ret,
	       "perwine_trap_info in the callback: the trap's siginfo");
	tap_ok(perwine_trap_info() == NULL, "perwine_trap_info outside a callback: NULL");

	tap_ok(trap6(NR_FAIL, 0, 0, 0, 0, 0, 0) == -EPERM, "a callback's -EPERM is the raw result");
	perwine_trap();
	errno = 0;
	ret = syscall(NR_FAIL);
	perwine_native();
	tap_ok(ret == -1 && errno == EPERM, "through libc's syscall(): -1 with errno EPERM");
	tap_ok(trap6(4242, 0, 0, 0, 0, 0, 0) == -ENOSYS, "a callback's -ENOSYS for an unknown number");
	tap_ok(vectors_survive(), "XMM0-15 survive a trap whose callback zeroes them");

	seen.calls = 0;
	tap_ok(trap6(NR_NEST, 0, 0, 0, 0, 0, 0) == 101 && seen.calls == 2,
	       "a callback can run code that traps again");
	tap_ok(trap6(NR_SIGNAL, 0, 0, 0, 0, 0, 0) == 1 && usr1_count == 1,
	       "a signal sent during the callback is taken there, once");

	tap_ok(perwine_map_code(vma_code, sizeof(vma_code), 0, &page) == 0, "map a PROT_NOSYSCALL page");
	vma_call = (long (*)(long))page;
	seen.calls = 0;
	ret = vma_call(NR_FAIL);
	tap_ok(ret == -EPERM && seen.calls == 1 && seen.info.si_errno == PERWINE_TRAP_VMA &&
	       seen.info.si_call_addr == (char *)page + 5, "a PROT_NOSYSCALL trap: si_errno VMA, si_call_addr");
	tap_ok(perwine_thread_selector == PERWINE_NATIVE, "a VMA trap leaves the selector NATIVE");

	tap_ok(perwine_sigaction(SIGSYS, NULL, NULL) == -EINVAL && perwine_sigaction(0, NULL, NULL) == -EINVAL &&
	       perwine_sigaction(_NSIG, NULL, NULL) == -EINVAL && perwine_sigaction(SIGKILL, NULL, NULL) == -EINVAL,
	       "perwine_sigaction refuses SIGSYS, SIGKILL and bad numbers");
	memset(&act, 0, sizeof(act));
	act.sa_handler = on_sigtrap;
	tap_ok(perwine_sigaction(SIGTRAP, &act, &old) == 0 && old.sa_handler == SIG_DFL,
	       "perwine_sigaction installs, reports the old action");
	perwine_trap();
	__asm__ __volatile__("int3");
	after = perwine_thread_selector;
	perwine_native();
	tap_ok(after == PERWINE_TRAP, "after a signal on the foreign side: selector TRAP");
	tap_ok(trap_selector == PERWINE_NATIVE && trap_ppid_ok,
	       "a perwine_sigaction handler runs with the selector NATIVE, its syscalls native");
	tap_ok(perwine_sigaction(SIGTRAP, NULL, &old) == 0 && old.sa_handler == on_sigtrap,
	       "perwine_sigaction reports the user's handler, not its wrapper");

	tap_ok(perwine_set_dispatcher(other_callback, NULL) == 0, "replace the callback");
	tap_ok(trap6(77, 0, 0, 0, 0, 0, 0) == -77, "the new callback handles the next trap");
	perwine_set_dispatcher(callback, &ctx_word);

	seen.calls = 0;
	kill(getpid(), SIGSYS);
	tap_ok(prev_calls == 1 && prev_code == SI_USER && seen.calls == 0,
	       "a SIGSYS from kill() goes to the previous handler");

	tap_ok(perwine_set_dispatcher(NULL, NULL) == 0, "remove the dispatcher");
	sigaction(SIGSYS, NULL, &old);
	tap_ok(old.sa_sigaction == previous_sigsys, "the previous SIGSYS action is back");
	tap_ok(perwine_set_dispatcher(NULL, NULL) == -ENOENT, "remove twice: -ENOENT");

	tap_ok(killed_by(run_child(sigsys_default_kills), SIGSYS),
	       "previous action SIG_DFL: a foreign SIGSYS still kills");
	tap_ok(exited_with(run_child(sigsys_ignored_stays_ignored), 0),
	       "previous action SIG_IGN: a foreign SIGSYS is ignored");
	perwine_unmap_code(page, sizeof(vma_code));
	perwine_disable();
	return tap_done();
}
