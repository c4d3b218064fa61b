// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A trapped syscall never ran, so syscall auditing (AUDITSYSCALL) must
 * not record it: with a rule on getppid, a child makes two native
 * getppid() calls and one trapped in between, and the kernel log (no
 * auditd: kauditd prints the records) gets exactly two SYSCALL records
 * of that child.  Needs root (CAP_AUDIT_CONTROL), as in the guest.
 * Last in the suite: once audit was enabled, every process forked for
 * the rest of the boot gets an audit context and takes the syscall slow
 * path, which the tests before it must not.
 */
#include <fcntl.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include "tap.h"

static int audit_fd;

/* One request to the audit netlink socket; 0 or -errno from its ACK. */
static int audit_request(int type, const void *data, size_t len)
{
	struct {
		struct nlmsghdr nlh;
		char data[sizeof(struct audit_rule_data) + 64];
	} req;
	struct {
		struct nlmsghdr nlh;
		struct nlmsgerr err;
		char more[256];
	} ack;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = NLMSG_LENGTH(len);
	req.nlh.nlmsg_type = type;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	req.nlh.nlmsg_seq = type;
	memcpy(NLMSG_DATA(&req.nlh), data, len);
	if (sendto(audit_fd, &req, req.nlh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(audit_fd, &ack, sizeof(ack), 0);

		if (n < 0)
			return -errno;
		if (ack.nlh.nlmsg_type == NLMSG_ERROR)
			return ack.err.error;
	}
}

static int audit_enable(int on)
{
	struct audit_status s;

	memset(&s, 0, sizeof(s));
	s.mask = AUDIT_STATUS_ENABLED;
	s.enabled = on;
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

/* The child: native, trapped, native.  Its audit context comes from fork(). */
static void calls(void)
{
	install_recorder();
	if (dispatch_on(&test_sel, 0, 0) || set_perwine(1))
		_exit(10);
	test_syscall(SYS_getppid, 0, 0, 0);
	trap_count = 0;
	if (trapped_call(SYS_getppid, 0, 0, 0) != 42 || trap_count != 1)
		_exit(11);
	test_syscall(SYS_getppid, 0, 0, 0);
	_exit(0);
}

/* SYSCALL records of getppid by a child of PARENT in the kernel log on fd, for up to ms. */
static int count_records(int fd, pid_t parent, int ms)
{
	char rec[2048], want[64];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int count = 0;

	snprintf(want, sizeof(want), " ppid=%d ", (int)parent);
	while (poll(&p, 1, ms) > 0) {
		ssize_t n = read(fd, rec, sizeof(rec) - 1);

		if (n <= 0)
			continue;
		rec[n] = '\0';
		if (strstr(rec, "type=1300") && strstr(rec, "arch=c000003e") &&
		    strstr(rec, " syscall=110 ") && strstr(rec, want))
			count++;
	}
	return count;
}

int main(void)
{
	int kmsg, status, r, records;

	tap_require_perwine_v2();
	audit_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
	if (audit_fd < 0)
		tap_skip_all("no audit netlink socket (kernel without AUDIT)");
	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg < 0)
		tap_skip_all("cannot read /dev/kmsg");
	tap_plan(4);
	r = audit_enable(1);
	tap_ok(r == 0, "audit enabled (%d)", r);
	r = audit_rule(AUDIT_ADD_RULE);
	tap_ok(r == 0, "audit rule: always,exit arch=b64 getppid (%d)", r);
	lseek(kmsg, 0, SEEK_END);

	status = run_child(calls);
	records = count_records(kmsg, getpid(), 2000);
	tap_ok(exited_with(status, 0), "the child made two native getppid() and one trapped (status %#x)", status);
	tap_ok(records == 2, "the kernel audited the two native calls only (%d SYSCALL records of the child)",
	       records);

	audit_rule(AUDIT_DEL_RULE);
	audit_enable(0);
	return tap_done();
}
