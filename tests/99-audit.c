// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A trapped syscall never ran, so syscall auditing (AUDITSYSCALL) must
 * not record it: with a rule on getppid, a child makes a native
 * getppid(0x1111), a trapped getppid(0x2222) and a native
 * getppid(0x3333), and the kernel's records of that child hold a0=1111
 * and a0=3333 (the negative control: records are read) and nothing else.
 *
 * The records come from the audit netlink socket, as the audit daemon
 * gets them: this process registers itself as the daemon (AUDIT_SET with
 * AUDIT_STATUS_PID), so nothing goes through printk and its rate limit.
 * The kernel takes one daemon at a time: with another one alive the test
 * skips (in the guest, a failure); in make check it runs after every
 * other test and the guest has no auditd.  A message of its own
 * (AUDIT_USER) sent after the child has exited comes back through the
 * same queue behind every record of the child: the end of the records,
 * with no time window to guess.  At the end the previous state is
 * restored (rule deleted, enabled as before, no daemon).  Needs root
 * (CAP_AUDIT_CONTROL, CAP_AUDIT_WRITE), as in the guest.
 *
 * Last in the suite: once audit was enabled, every process forked for
 * the rest of the boot gets an audit context and takes the syscall slow
 * path, which the tests before it must not.
 */
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include "tap.h"

#define TIMEOUT 30	/* seconds for any answer of the kernel (TCG, KASAN) */

static int audit_fd;
static unsigned int audit_seq;
static struct audit_status saved;	/* the state before the test */
static int changed;			/* something to restore at exit */

/* One datagram from the audit socket into buf: its length, or -errno. */
static ssize_t audit_recv(void *buf, size_t size, int ms)
{
	struct pollfd p = { .fd = audit_fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return -ETIMEDOUT;
	n = recv(audit_fd, buf, size - 1, MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	((char *)buf)[n] = '\0';
	return n;
}

static int audit_send(int type, int flags, const void *data, size_t len)
{
	struct {
		struct nlmsghdr nlh;
		char data[sizeof(struct audit_rule_data) + 256];
	} req;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = NLMSG_LENGTH(len);
	req.nlh.nlmsg_type = type;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | flags;
	req.nlh.nlmsg_seq = ++audit_seq;
	memcpy(NLMSG_DATA(&req.nlh), data, len);
	if (sendto(audit_fd, &req, req.nlh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	return 0;
}

/*
 * One request and its ACK: 0 or -errno.  Records that arrive meanwhile
 * are dropped (none of the child's: it runs between requests).
 */
static int audit_request(int type, const void *data, size_t len)
{
	static char buf[16384];
	const struct nlmsghdr *nlh = (const void *)buf;
	int r = audit_send(type, NLM_F_ACK, data, len);

	while (r == 0) {
		ssize_t n = audit_recv(buf, sizeof(buf), TIMEOUT * 1000);

		if (n < 0)
			return (int)n;
		if ((size_t)n >= NLMSG_HDRLEN + sizeof(struct nlmsgerr) && nlh->nlmsg_type == NLMSG_ERROR &&
		    nlh->nlmsg_seq == audit_seq)
			return ((const struct nlmsgerr *)NLMSG_DATA(nlh))->error;
	}
	return r;
}

/* AUDIT_GET: its reply comes from a kernel thread of its own, not with an ACK. */
static int audit_get(struct audit_status *s)
{
	static char buf[16384];
	const struct nlmsghdr *nlh = (const void *)buf;
	int r = audit_send(AUDIT_GET, 0, NULL, 0);

	while (r == 0) {
		ssize_t n = audit_recv(buf, sizeof(buf), TIMEOUT * 1000);

		if (n < 0)
			return (int)n;
		if ((size_t)n < NLMSG_HDRLEN || nlh->nlmsg_seq != audit_seq)
			continue;
		if (nlh->nlmsg_type == NLMSG_ERROR && (size_t)n >= NLMSG_HDRLEN + sizeof(struct nlmsgerr))
			return ((const struct nlmsgerr *)NLMSG_DATA(nlh))->error;
		if (nlh->nlmsg_type == AUDIT_GET) {
			memset(s, 0, sizeof(*s));
			memcpy(s, NLMSG_DATA(nlh), (size_t)n - NLMSG_HDRLEN < sizeof(*s) ?
			       (size_t)n - NLMSG_HDRLEN : sizeof(*s));
			return 0;
		}
	}
	return r;
}

static int audit_set(unsigned int mask, unsigned int enabled, unsigned int pid)
{
	struct audit_status s;

	memset(&s, 0, sizeof(s));
	s.mask = mask;
	s.enabled = enabled;
	s.pid = pid;
	return audit_request(AUDIT_SET, &s, sizeof(s));
}

/* always,exit -F arch=b64 -S getppid */
static int audit_rule(int type)
{
	struct audit_rule_data r;

	memset(&r, 0, sizeof(r));
	r.flags = AUDIT_FILTER_EXIT;
	r.action = AUDIT_ALWAYS;
	r.field_count = 1;
	r.fields[0] = AUDIT_ARCH;
	r.fieldflags[0] = AUDIT_EQUAL;
	r.values[0] = AUDIT_ARCH_X86_64;
	r.mask[AUDIT_WORD(SYS_getppid)] |= AUDIT_BIT(SYS_getppid);
	return audit_request(type, &r, sizeof(r));
}

/*
 * Back to the state before the test: rule deleted, audit enabled as it
 * was, then no daemon (with audit off that logs nothing).  Also at
 * exit, should the test stop halfway.
 */
static int audit_restore(void)
{
	int rule, enabled, pid;

	if (!changed)
		return 0;
	changed = 0;
	rule = audit_rule(AUDIT_DEL_RULE);
	enabled = audit_set(AUDIT_STATUS_ENABLED, saved.enabled, 0);
	pid = audit_set(AUDIT_STATUS_PID, 0, 0);
	if (rule || enabled || pid)
		printf("# restore: delete the rule %d, enabled %d, no daemon %d\n", rule, enabled, pid);
	return rule ? rule : enabled ? enabled : pid;
}

static void restore_at_exit(void)
{
	audit_restore();
}

/* The child: native, trapped, native.  Its audit context comes from fork(). */
static void calls(void)
{
	install_recorder();
	if (dispatch_on(&test_sel, 0, 0) || set_perwine(1))
		_exit(10);
	test_syscall(SYS_getppid, 0x1111, 0, 0);
	trap_count = 0;
	if (trapped_call(SYS_getppid, 0x2222, 0, 0) != 42 || trap_count != 1)
		_exit(11);
	test_syscall(SYS_getppid, 0x3333, 0, 0);
	_exit(0);
}

struct records {
	int total;		/* SYSCALL records of getppid by a child of ours */
	int a0[3];		/* ... with a0=1111, 2222, 3333 */
	int fence;		/* our AUDIT_USER message came back */
};

/*
 * Read the records up to our fence message: the kernel queues records
 * in order, and the fence was sent after the child had exited.
 */
static void read_records(pid_t parent, struct records *rec)
{
	static char buf[16384];
	const struct nlmsghdr *nlh = (const void *)buf;
	static const char *const a0[3] = { " a0=1111 ", " a0=2222 ", " a0=3333 " };
	char fence[64], ppid[32];
	struct timespec start, now;
	int r;

	memset(rec, 0, sizeof(*rec));
	snprintf(ppid, sizeof(ppid), " ppid=%d ", (int)parent);
	snprintf(fence, sizeof(fence), "perwine-99-audit fence %d", (int)parent);
	r = audit_send(AUDIT_USER, NLM_F_ACK, fence, strlen(fence) + 1);
	if (r) {
		printf("# AUDIT_USER: %s\n", strerror(-r));
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		const char *text = buf + NLMSG_HDRLEN;
		ssize_t n;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec >= TIMEOUT)
			break;
		n = audit_recv(buf, sizeof(buf), 1000);
		if (n < (ssize_t)NLMSG_HDRLEN)
			continue;	/* nothing yet, or no message */
		if (nlh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(nlh);

			if (nlh->nlmsg_seq == audit_seq && e->error) {
				printf("# AUDIT_USER: %s\n", strerror(-e->error));
				return;
			}
		} else if (nlh->nlmsg_type == AUDIT_USER && strstr(text, fence)) {
			rec->fence = 1;
			return;
		} else if (nlh->nlmsg_type == AUDIT_SYSCALL && strstr(text, "arch=c000003e") &&
			   strstr(text, " syscall=110 ") && strstr(text, ppid)) {
			rec->total++;
			for (int i = 0; i < 3; i++)
				rec->a0[i] += strstr(text, a0[i]) != NULL;
		}
	}
	printf("# no fence message after %d s\n", TIMEOUT);
}

int main(void)
{
	struct audit_status now;
	struct records rec;
	int rcvbuf = 1 << 20, status, r;

	tap_require_perwine_v2();
	audit_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
	if (audit_fd < 0)
		tap_skip_all("no audit netlink socket (kernel without AUDIT)");
	setsockopt(audit_fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	r = audit_get(&saved);
	if (r == -EPERM)
		tap_skip_all("the audit socket needs root (CAP_AUDIT_CONTROL)");
	if (r)
		tap_bail("AUDIT_GET: %s", strerror(-r));
	if (saved.enabled == 2)
		tap_skip_all("the audit configuration is locked (enabled=2)");
	if (saved.pid && kill((pid_t)saved.pid, 0) == 0)
		tap_skip_all("another audit daemon is registered: this test must be the audit daemon");
	tap_plan(7);

	atexit(restore_at_exit);
	changed = 1;
	r = audit_set(AUDIT_STATUS_PID, 0, (unsigned int)getpid());
	tap_ok(r == 0, "this process is the audit daemon (AUDIT_SET pid %d: %d)", (int)getpid(), r);
	r = audit_set(AUDIT_STATUS_ENABLED, 1, 0);
	tap_ok(r == 0, "audit enabled (%d)", r);
	r = audit_rule(AUDIT_ADD_RULE);
	tap_ok(r == 0, "audit rule: always,exit arch=b64 getppid (%d)", r);

	status = run_child(calls);
	read_records(getpid(), &rec);
	tap_ok(exited_with(status, 0),
	       "the child made a native getppid(), a trapped one, a native one (status %#x)", status);
	tap_ok(rec.fence && rec.a0[0] == 1 && rec.a0[2] == 1,
	       "the kernel audited both native calls, a0=1111 and a0=3333 (%d, %d; all records read: %s)",
	       rec.a0[0], rec.a0[2], rec.fence ? "yes" : "no");
	tap_ok(rec.fence && rec.a0[1] == 0 && rec.total == 2,
	       "and not the trapped one, a0=2222 (%d; %d SYSCALL records of the child)", rec.a0[1], rec.total);

	memset(&now, 0xff, sizeof(now));
	r = audit_restore();
	if (r == 0)
		r = audit_get(&now);
	tap_ok(r == 0 && now.enabled == saved.enabled && now.pid == 0,
	       "the previous state is back: rule deleted, enabled %u, no audit daemon (%d)", saved.enabled, r);
	return tap_done();
}
