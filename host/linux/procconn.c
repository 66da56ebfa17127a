/*
 * procconn.c - the kernel's process events (procconn.h).
 */
#include "host/linux/procconn.h"

#include <errno.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "policy/util.h"

/* One datagram read at a time; the kernel sends one event per datagram. */
#define PC_RECV_BYTES 65536

struct linux_procconn {
	int fd;
	unsigned int seq; /* of our requests */
	bool live;        /* acknowledged with no error */
	int drains;       /* drains so far without the acknowledgement */
	int ack_err;      /* the last refusal seen (0: none) */
	unsigned long events, overruns;
	unsigned char *buf; /* PC_RECV_BYTES */
};

/* Send op (PROC_CN_MCAST_LISTEN or _IGNORE) numbered seq.  0 or -errno. */
static int
pc_send_op(int fd, unsigned int seq, enum proc_cn_mcast_op op)
{
	union {
		struct nlmsghdr nl;
		unsigned char bytes[NLMSG_SPACE(sizeof(struct cn_msg) + sizeof(op))];
	} m;
	struct cn_msg *cn;
	struct sockaddr_nl to = {.nl_family = AF_NETLINK};

	memset(&m, 0, sizeof(m));
	m.nl.nlmsg_len = NLMSG_LENGTH(sizeof(*cn) + sizeof(op));
	m.nl.nlmsg_type = NLMSG_DONE;
	cn = NLMSG_DATA(&m.nl);
	cn->id.idx = CN_IDX_PROC;
	cn->id.val = CN_VAL_PROC;
	cn->seq = seq;
	cn->len = sizeof(op);
	memcpy(cn->data, &op, sizeof(op));
	if (sendto(fd, &m, m.nl.nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	return 0;
}

int
linux_procconn_open(struct linux_procconn **out)
{
	struct sockaddr_nl me = {.nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC};
	struct linux_procconn *pc;
	int fd, size = LINUX_PROCCONN_RCVBUF_BYTES, ret;

	*out = NULL;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)); /* best effort */
	if (bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0) {
		ret = -errno;
		goto fail;
	}
	pc = xcalloc(1, sizeof(*pc));
	pc->fd = fd;
	pc->seq = (unsigned int)getpid();
	if ((ret = pc_send_op(fd, pc->seq, PROC_CN_MCAST_LISTEN)) < 0) {
		free(pc);
		goto fail;
	}
	pc->buf = xcalloc(1, PC_RECV_BYTES);
	*out = pc;
	return 0;
fail:
	close(fd);
	return ret;
}

void
linux_procconn_close(struct linux_procconn *pc)
{
	if (pc == NULL)
		return;
	(void)pc_send_op(pc->fd, pc->seq + 1, PROC_CN_MCAST_IGNORE);
	close(pc->fd);
	free(pc->buf);
	free(pc);
}

bool
linux_procconn_live(const struct linux_procconn *pc)
{
	return pc != NULL && pc->live;
}

unsigned long
linux_procconn_events(const struct linux_procconn *pc)
{
	return pc != NULL ? pc->events : 0;
}

unsigned long
linux_procconn_overruns(const struct linux_procconn *pc)
{
	return pc != NULL ? pc->overruns : 0;
}

/* One proc_event of len bytes into delta (or *ack_err).  1: an event added, else 0. */
static int
pc_event_apply(const unsigned char *data, size_t len, const struct cn_msg *cn,
               struct linux_proc_delta *delta, int *ack_err)
{
	struct proc_event ev;

	memset(&ev, 0, sizeof(ev));
	memcpy(&ev, data, len < sizeof(ev) ? len : sizeof(ev));
	switch (ev.what) {
	case PROC_EVENT_NONE:
		if (cn->ack ==
		    1) /* the answer to a request sent with ack 0 (seq is the kernel's) */
			*ack_err = (int)ev.event_data.ack.err;
		return 0;
	case PROC_EVENT_FORK:
		if (ev.event_data.fork.child_pid != ev.event_data.fork.child_tgid)
			return 0; /* a thread */
		linux_proc_delta_add(delta, ev.event_data.fork.child_tgid, LINUX_PROC_EVENT_NEW);
		return 1;
	case PROC_EVENT_EXEC:
		linux_proc_delta_add(delta, ev.event_data.exec.process_tgid,
		                     LINUX_PROC_EVENT_CHANGED);
		return 1;
	case PROC_EVENT_COMM:
		if (ev.event_data.comm.process_pid != ev.event_data.comm.process_tgid)
			return 0; /* a thread named itself (a vCPU, say): the task list tells */
		linux_proc_delta_add(delta, ev.event_data.comm.process_tgid,
		                     LINUX_PROC_EVENT_CHANGED);
		return 1;
	case PROC_EVENT_EXIT:
		if (ev.event_data.exit.process_pid != ev.event_data.exit.process_tgid)
			return 0;
		linux_proc_delta_add(delta, ev.event_data.exit.process_tgid, LINUX_PROC_EVENT_EXIT);
		return 1;
	default:
		return 0;
	}
}

int
linux_procconn_parse(const void *buf, size_t len, struct linux_proc_delta *delta, int *ack_err)
{
	const struct nlmsghdr *nl = buf;
	size_t left = len;
	int added = 0;

	for (; NLMSG_OK(nl, left); nl = NLMSG_NEXT(nl, left)) {
		const struct cn_msg *cn = NLMSG_DATA(nl);
		size_t payload = nl->nlmsg_len - NLMSG_HDRLEN;

		if (nl->nlmsg_type == NLMSG_NOOP || nl->nlmsg_type == NLMSG_ERROR)
			continue;
		if (payload < sizeof(*cn) || cn->len > payload - sizeof(*cn))
			return -EBADMSG;
		if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC)
			continue;
		if (cn->len < offsetof(struct proc_event, event_data))
			return -EBADMSG;
		added += pc_event_apply(cn->data, cn->len, cn, delta, ack_err);
	}
	if (left != 0)
		return -EBADMSG; /* a truncated message at the end */
	return added;
}

int
linux_procconn_drain(struct linux_procconn *pc, struct linux_proc_delta *delta)
{
	for (;;) {
		struct sockaddr_nl from;
		socklen_t from_len = sizeof(from);
		int ack_err = -1, ret;
		ssize_t n = recvfrom(pc->fd, pc->buf, PC_RECV_BYTES, MSG_DONTWAIT,
		                     (struct sockaddr *)&from, &from_len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) { /* the kernel dropped events: list once */
				pc->overruns++;
				delta->full = true;
				continue;
			}
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -errno;
		}
		if (from_len != sizeof(from) || from.nl_pid != 0)
			continue; /* only the kernel speaks on this group */
		ret = linux_procconn_parse(pc->buf, (size_t)n, delta, &ack_err);
		if (ret < 0) {
			delta->full =
			    true; /* an event we could not read may have been one we need */
			continue;
		}
		pc->events += (unsigned long)ret;
		if (ack_err == 0)
			pc->live = true;
		else if (ack_err > 0)
			pc->ack_err = ack_err; /* ours, or another subscriber's: wait for a yes */
	}
	if (!pc->live && ++pc->drains >= LINUX_PROCCONN_ACK_DRAINS)
		return pc->ack_err > 0 ? -pc->ack_err : -ETIMEDOUT;
	return 0;
}
