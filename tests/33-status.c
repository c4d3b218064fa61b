// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The PerWine: line of /proc/PID/status (ABI v2.1).
 *
 * - "The status line is not a leak": the line, which says whether a
 *   process runs under an emulator and where its selector and range
 *   are, is shown to a reader that may ptrace the task, and not at all
 *   to another user (uid 65534), who still reads the rest of the file.
 * - lookups= counts the thread's VMA lookups under the mmap lock, the
 *   refills of its cache: another thread's 10,000 mmap/munmap of
 *   ordinary memory leave it alone, and so do PROT_NOSYSCALL pages that
 *   come and go outside the cached ranges (ABI v3: a new mapping, and
 *   100 W^X flips of a JIT page), a syscall from a new VMA costs one
 *   while NOSYSCALL pages exist, and none once the last one is gone
 *   ("the VMA check costs nothing").
 */
#include <pthread.h>
#include <sys/mman.h>

#include "tap.h"

#define PAGE 4096

struct perwine_line {
	char state[8];
	unsigned long selector, start, len, lookups;
	unsigned int flags;
};

/* Which lines a status file has: FOUND_NAME, FOUND_PERWINE (complete,
 * into *l, which may be NULL), or -1 when it cannot be opened. */
#define FOUND_NAME	1
#define FOUND_PERWINE	2
static int find_lines(const char *path, struct perwine_line *l)
{
	struct perwine_line dummy;
	char line[512];
	int found = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	if (!l)
		l = &dummy;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Name:", 5))
			found |= FOUND_NAME;
		if (sscanf(line, "PerWine: %7s selector=%lx start=%lx len=%lx flags=%x lookups=%lu",
			   l->state, &l->selector, &l->start, &l->len, &l->flags, &l->lookups) == 6)
			found |= FOUND_PERWINE;
	}
	fclose(f);
	return found;
}

/* The PerWine: line of a status file; bails when it is missing or short. */
static void read_line(const char *path, struct perwine_line *l)
{
	int found = find_lines(path, l);

	if (found < 0)
		tap_bail("cannot open %s: %s", path, strerror(errno));
	if (!(found & FOUND_PERWINE))
		tap_bail("no complete PerWine: line (with lookups=) in %s", path);
}

static unsigned long my_lookups(void)
{
	char path[64];
	struct perwine_line l;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/status", (long)syscall(SYS_gettid));
	read_line(path, &l);
	return l.lookups;
}

static char parent_status[64];

/* Exits with the lines it found (find_lines()), 8 if it could not open
 * the file, 9 if it could not become uid 65534. */
static void unprivileged_reader(void)
{
	int found;

	if (setgid(65534) || setuid(65534))
		_exit(9);
	found = find_lines(parent_status, NULL);
	_exit(found < 0 ? 8 : found);
}

static void test_privacy(void)
{
	struct perwine_line own;
	int st;

	snprintf(parent_status, sizeof(parent_status), "/proc/%d/status", getpid());
	read_line(parent_status, &own);
	tap_ok(own.selector == (unsigned long)&test_sel && own.start == 0x1000 && own.len == 0x2000,
	       "the process itself sees its selector and range (%#lx %#lx %#lx)", own.selector, own.start,
	       own.len);
	st = run_child(unprivileged_reader);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) < 8 && (WEXITSTATUS(st) & FOUND_NAME),
	       "uid 65534 reads the rest of the status file (its Name: line; status %#x)", st);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) < 8 && !(WEXITSTATUS(st) & FOUND_PERWINE),
	       "uid 65534 gets no PerWine: line, which says whether and where the process "
	       "dispatches (status %#x)", st);
}

static volatile int churn_go, churn_done;
static unsigned char *late_page;

static void *churner(void *arg)
{
	int i;

	(void)arg;
	while (!churn_go)
		;
	for (i = 0; i < 10000; i++) {
		void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED || munmap(p, PAGE))
			return (void *)1;
	}
	churn_done = 1;
	while (churn_go != 2)
		;
	late_page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC | PROT_NOSYSCALL,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	churn_done = 2;
	return late_page == MAP_FAILED ? (void *)1 : NULL;
}

static const unsigned char stub[] = { 0x48, 0x89, 0xf8, 0x0f, 0x05, 0xc3 };	/* mov %rdi,%rax; syscall; ret */

/* A fresh ordinary code page: one syscall from a VMA no cache holds. */
static long (*fresh_code(void))(long)
{
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		tap_bail("mmap: %s", strerror(errno));
	memcpy(p, stub, sizeof(stub));
	if (mprotect(p, PAGE, PROT_READ | PROT_EXEC))
		tap_bail("mprotect: %s", strerror(errno));
	return (long (*)(long))p;
}

static void test_lookups(void)
{
	unsigned long l0, l1, l2, l3, l4, l5;
	unsigned char *nosys;
	int i;
	pthread_t t;
	void *ret;

	nosys = mmap(NULL, PAGE, PROT_READ | PROT_EXEC | PROT_NOSYSCALL, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (nosys == MAP_FAILED)
		tap_bail("mmap(PROT_NOSYSCALL): %s", strerror(errno));
	if (pthread_create(&t, NULL, churner, NULL))
		tap_bail("pthread_create");
	my_lookups();	/* the cache now holds libc's VMA */
	l0 = my_lookups();
	l1 = my_lookups();
	tap_ok(l1 == l0, "syscalls from a cached VMA take no lookup (%lu, %lu)", l0, l1);

	churn_go = 1;
	while (churn_done != 1)
		;
	l2 = my_lookups();
	tap_ok(l2 == l1, "another thread's 10000 ordinary mmap/munmap leave the cache alone (%lu, %lu)", l1, l2);

	churn_go = 2;
	while (churn_done != 2)
		;
	l3 = my_lookups();
	tap_ok(l3 == l2, "a new PROT_NOSYSCALL mapping elsewhere costs no refill (%lu -> %lu)", l2, l3);
	pthread_join(t, &ret);

	/* A W^X JIT: its page RW, then RX and PROT_NOSYSCALL again, a syscall after each. */
	for (i = 0; i < 100 && ret == NULL; i++)
		if (mprotect(late_page, PAGE, i & 1 ? PROT_READ | PROT_EXEC | PROT_NOSYSCALL : PROT_READ | PROT_WRITE) ||
		    my_lookups() != l3)
			break;
	tap_ok(i == 100, "100 W^X flips of a page elsewhere cost no refill (%lu -> %lu after %d)", l3, my_lookups(),
	       i);

	l3 = my_lookups();
	fresh_code()(SYS_getppid);
	l4 = my_lookups();
	/* The fresh page's syscall; libc's answer moved to the second entry. */
	tap_ok(l4 == l3 + 1, "a syscall from a new VMA, NOSYSCALL pages present: looked up (%lu -> %lu)", l3, l4);

	munmap(nosys, PAGE);
	munmap(late_page, PAGE);
	my_lookups();
	l4 = my_lookups();
	fresh_code()(SYS_getppid);
	l5 = my_lookups();
	tap_ok(ret == NULL && l5 == l4 && status_kb("VmNoSys") == 0,
	       "no NOSYSCALL page left: a syscall from a new VMA takes no lookup (%lu -> %lu)", l4, l5);
}

int main(void)
{
	tap_require_perwine_v2();
	tap_plan(9);
	if (getuid() != 0)
		tap_skip_all("needs root to read its status as another user");
	if (dispatch_on(&test_sel, 0x1000, 0x2000) || set_perwine(1) == -1)
		tap_bail("PER_WINE: %s", strerror(errno));
	test_privacy();
	test_lookups();
	return tap_done();
}
