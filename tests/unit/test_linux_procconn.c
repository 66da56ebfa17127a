/*
 * test_linux_procconn.c - the kernel's process events (host/linux/procconn.c):
 * - parsing datagrams built here as the kernel lays them out: a process's fork, exec, rename
 *   and exit become events, a thread's fork, rename and exit do not, nor do the events
 *   vnumad does not use; the acknowledgement gives its error; a message of another connector
 *   is passed over; a truncated or malformed one is refused with what came before it kept;
 * - on this machine, when the kernel takes the subscription (root in the initial PID
 *   namespace; skipped otherwise, saying why): a child that is forked, exec()s and exits is
 *   reported in that order, and the Linux host says it uses the events.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/host.h"
#include "host/linux/procconn.h"

/* Room for a few messages of one datagram. */
struct dgram {
	unsigned char bytes[4096] __attribute__((aligned(8)));
	size_t len;
};

/* Append one netlink message carrying a cn_msg of connector idx and the proc_event ev. */
static void
dgram_add_idx(struct dgram *d, unsigned int idx, unsigned int ack, const struct proc_event *ev)
{
	struct nlmsghdr *nl = (struct nlmsghdr *)(d->bytes + d->len);
	struct cn_msg *cn;
	size_t payload = sizeof(*cn) + sizeof(*ev);

	assert_true(d->len + NLMSG_SPACE(payload) <= sizeof(d->bytes));
	memset(nl, 0, NLMSG_SPACE(payload));
	nl->nlmsg_len = NLMSG_LENGTH(payload);
	nl->nlmsg_type = NLMSG_DONE;
	cn = NLMSG_DATA(nl);
	cn->id.idx = idx;
	cn->id.val = CN_VAL_PROC;
	cn->seq = 7;
	cn->ack = ack;
	cn->len = sizeof(*ev);
	memcpy(cn->data, ev, sizeof(*ev));
	d->len += NLMSG_SPACE(payload);
}

static void
dgram_add(struct dgram *d, const struct proc_event *ev)
{
	dgram_add_idx(d, CN_IDX_PROC, 0, ev);
}

static struct proc_event
ev_fork(int child_pid, int child_tgid)
{
	struct proc_event ev = {.what = PROC_EVENT_FORK};

	ev.event_data.fork.parent_pid = ev.event_data.fork.parent_tgid = 1;
	ev.event_data.fork.child_pid = child_pid;
	ev.event_data.fork.child_tgid = child_tgid;
	return ev;
}

static struct proc_event
ev_of(enum what what, int pid, int tgid)
{
	struct proc_event ev = {.what = what};

	/* process_pid and process_tgid lead every one of these members */
	ev.event_data.exec.process_pid = pid;
	ev.event_data.exec.process_tgid = tgid;
	return ev;
}

static void
test_parse_events(void **state)
{
	struct linux_proc_delta delta = {0};
	struct dgram d = {0};
	struct proc_event ev;
	int ack = -1;

	(void)state;
	ev = ev_fork(300, 300);
	dgram_add(&d, &ev);
	ev = ev_fork(301, 300); /* a thread of 300 */
	dgram_add(&d, &ev);
	ev = ev_of(PROC_EVENT_EXEC, 300, 300);
	dgram_add(&d, &ev);
	ev = ev_of(PROC_EVENT_COMM, 301, 300); /* a thread names itself */
	dgram_add(&d, &ev);
	ev = ev_of(PROC_EVENT_COMM, 300, 300);
	dgram_add(&d, &ev);
	ev = ev_of(PROC_EVENT_UID, 300, 300);
	dgram_add(&d, &ev);
	ev = ev_of(PROC_EVENT_EXIT, 301, 300);
	dgram_add(&d, &ev);
	ev = ev_of(PROC_EVENT_EXIT, 300, 300);
	dgram_add(&d, &ev);
	ev = ev_fork(400, 400);
	dgram_add_idx(&d, CN_IDX_PROC + 1, 0, &ev); /* another connector's */

	assert_int_equal(linux_procconn_parse(d.bytes, d.len, &delta, &ack), 4);
	assert_int_equal(ack, -1);
	assert_int_equal(delta.nr, 4);
	assert_int_equal(delta.events[0].pid, 300);
	assert_int_equal(delta.events[0].kind, LINUX_PROC_EVENT_NEW);
	assert_int_equal(delta.events[1].kind, LINUX_PROC_EVENT_CHANGED);
	assert_int_equal(delta.events[2].kind, LINUX_PROC_EVENT_CHANGED);
	assert_int_equal(delta.events[3].kind, LINUX_PROC_EVENT_EXIT);
	assert_false(delta.full);
	linux_proc_delta_free(&delta);
}

static void
test_parse_ack(void **state)
{
	struct linux_proc_delta delta = {0};
	struct dgram d = {0};
	struct proc_event ev = {.what = PROC_EVENT_NONE};
	int ack = -1;

	(void)state;
	ev.event_data.ack.err = EPERM;
	dgram_add_idx(&d, CN_IDX_PROC, 0, &ev); /* not an answer: ack 0 */
	assert_int_equal(linux_procconn_parse(d.bytes, d.len, &delta, &ack), 0);
	assert_int_equal(ack, -1);
	d.len = 0;
	dgram_add_idx(&d, CN_IDX_PROC, 1, &ev);
	assert_int_equal(linux_procconn_parse(d.bytes, d.len, &delta, &ack), 0);
	assert_int_equal(ack, EPERM);
	ev.event_data.ack.err = 0;
	d.len = 0;
	dgram_add_idx(&d, CN_IDX_PROC, 1, &ev);
	assert_int_equal(linux_procconn_parse(d.bytes, d.len, &delta, &ack), 0);
	assert_int_equal(ack, 0);
	assert_int_equal(delta.nr, 0);
	linux_proc_delta_free(&delta);
}

static void
test_parse_malformed(void **state)
{
	struct linux_proc_delta delta = {0};
	struct dgram d = {0};
	struct proc_event ev = ev_fork(500, 500);
	struct nlmsghdr *second;
	struct cn_msg *cn;
	int ack = -1;

	(void)state;
	dgram_add(&d, &ev);
	second = (struct nlmsghdr *)(d.bytes + d.len);
	dgram_add(&d, &ev);
	/* truncated: the datagram ends inside the second message */
	assert_int_equal(linux_procconn_parse(d.bytes, d.len - 8, &delta, &ack), -EBADMSG);
	assert_int_equal(delta.nr, 1); /* the first one kept */
	linux_proc_delta_clear(&delta);
	/* a cn_msg whose len runs past its netlink message */
	cn = NLMSG_DATA(second);
	cn->len = 4000;
	assert_int_equal(linux_procconn_parse(d.bytes, d.len, &delta, &ack), -EBADMSG);
	assert_int_equal(delta.nr, 1);
	linux_proc_delta_clear(&delta);
	/* a proc_event shorter than its header */
	cn->len = 4;
	assert_int_equal(linux_procconn_parse(d.bytes, d.len, &delta, &ack), -EBADMSG);
	/* a netlink message shorter than a cn_msg */
	second->nlmsg_len = NLMSG_LENGTH(8);
	assert_int_equal(linux_procconn_parse(
	                     d.bytes, (size_t)((unsigned char *)second - d.bytes) + NLMSG_SPACE(8),
	                     &delta, &ack),
	                 -EBADMSG);
	/* nothing at all, and garbage shorter than a netlink header */
	linux_proc_delta_clear(&delta);
	assert_int_equal(linux_procconn_parse(d.bytes, 0, &delta, &ack), 0);
	assert_int_equal(linux_procconn_parse(d.bytes, 7, &delta, &ack), -EBADMSG);
	assert_int_equal(delta.nr, 0);
	linux_proc_delta_free(&delta);
}

/* The events of pid in delta, as a string of N (new), C (changed), X (exit). */
static void
kinds_of(const struct linux_proc_delta *delta, int pid, char *out, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < delta->nr && n + 1 < size; i++)
		if (delta->events[i].pid == pid)
			out[n++] = "NCX"[delta->events[i].kind];
	out[n] = '\0';
}

/* Open and drain until acknowledged; false (with the reason printed) when the kernel will
 * not give this process its events. */
static bool
live_open(struct linux_procconn **pc, struct linux_proc_delta *delta)
{
	int ret = linux_procconn_open(pc);

	if (ret < 0) {
		print_message("no process events here: cannot subscribe: %s\n", strerror(-ret));
		return false;
	}
	for (int i = 0; i < LINUX_PROCCONN_ACK_DRAINS; i++) {
		if ((ret = linux_procconn_drain(*pc, delta)) < 0)
			break;
		if (linux_procconn_live(*pc))
			return true;
		poll(NULL, 0, 100);
	}
	print_message("no process events here: %s\n",
	              ret < 0 ? strerror(-ret) : "no acknowledgement");
	linux_procconn_close(*pc);
	*pc = NULL;
	return false;
}

static void
test_live_child(void **state)
{
	struct linux_proc_delta delta = {0};
	struct linux_procconn *pc;
	char kinds[16] = "";
	pid_t child;
	int status;

	(void)state;
	if (!live_open(&pc, &delta)) {
		linux_proc_delta_free(&delta);
		skip();
	}
	linux_proc_delta_clear(&delta);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* the exit event is sent before the parent is woken: it is queued by now */
	for (int i = 0; i < 50 && strchr(kinds, 'X') == NULL; i++) {
		assert_int_equal(linux_procconn_drain(pc, &delta), 0);
		kinds_of(&delta, child, kinds, sizeof(kinds));
		if (strchr(kinds, 'X') == NULL)
			poll(NULL, 0, 20);
	}
	/* fork, exec (and possibly a rename: exec sets the comm), exit */
	assert_true(kinds[0] == 'N');
	assert_true(strchr(kinds, 'C') != NULL);
	assert_true(kinds[strlen(kinds) - 1] == 'X');
	assert_true(linux_procconn_events(pc) >= 3);
	linux_procconn_close(pc);
	linux_proc_delta_free(&delta);
}

/* The Linux host of this machine says whether it uses them, and why not. */
static void
test_host_says(void **state)
{
	struct host *h;
	struct snapshot *snap;
	char err[256];
	const char *d;

	(void)state;
	assert_int_equal(host_linux_open(NULL, 0, &h, err, sizeof(err)), 0);
	assert_int_equal(h->ops->snapshot(h, &snap), 0);
	snapshot_free(snap);
	d = h->ops->describe(h);
	assert_non_null(strstr(d, "process events: "));
	if (strstr(d, "process events: yes") == NULL)
		print_message("host: %s\n", d);
	h->ops->close(h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_events),    cmocka_unit_test(test_parse_ack),
	    cmocka_unit_test(test_parse_malformed), cmocka_unit_test(test_live_child),
	    cmocka_unit_test(test_host_says),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
