/*
 * procconn.h - the kernel's process events (the proc connector: a NETLINK_CONNECTOR socket
 * in the CN_IDX_PROC group, CONFIG_PROC_EVENTS), so that a round learns which processes
 * were forked, exec()ed, renamed or ended since the last one instead of listing /proc.
 *
 * The kernel takes the subscription only from a process with CAP_NET_ADMIN in the initial
 * user and PID namespaces, and answers it with an acknowledgement; from another namespace it
 * ignores it without a word (events carry initial-namespace pids).  So the events are used
 * only once that acknowledgement has come back with no error: until then, and if it never
 * comes (LINUX_PROCCONN_ACK_DRAINS), the caller lists /proc as it would without them.  Events
 * lost in the kernel (the socket's buffer overran: ENOBUFS) mark the delta full, and the next
 * scan lists /proc once.
 *
 * Owner: the caller of linux_procconn_open (the Linux host of this machine keeps one).
 */
#ifndef VNUMAD_HOST_LINUX_PROCCONN_H
#define VNUMAD_HOST_LINUX_PROCCONN_H

#include <stdbool.h>
#include <stddef.h>

#include "host/linux/discover_cache.h"

/*
 * The receive buffer asked for, bytes.  Default 4 MiB: each event takes about 1 KiB of it in
 * the kernel (the skb around an 80-byte message), so about 4000 process events between two
 * rounds fit; a host forking faster than that loses events and pays a listing of /proc
 * instead, which is what it would pay without events.  SO_RCVBUFFORCE (root) is tried first,
 * then SO_RCVBUF (capped by net.core.rmem_max).
 */
#define LINUX_PROCCONN_RCVBUF_BYTES (4 << 20)
/*
 * Drains without the subscription's acknowledgement after which the socket is closed: the
 * kernel ignored it (vnumad is not in the initial PID namespace) and the events another
 * subscriber may cause to arrive would carry pids of another namespace.  Default 3: the
 * acknowledgement is sent while the subscription is made, so it is there at the first drain.
 */
#define LINUX_PROCCONN_ACK_DRAINS 3

struct linux_procconn;

/*
 * Open the socket and subscribe.  0, or -errno: -EPROTONOSUPPORT (a kernel without the
 * connector), -EPERM / -EACCES, or that of socket, bind or send.
 */
int linux_procconn_open(struct linux_procconn **out);
/* Unsubscribe and close; NULL-safe. */
void linux_procconn_close(struct linux_procconn *pc);
/*
 * Read every message waiting into delta (events appended; full set on ENOBUFS).  0; when no
 * acknowledgement with no error came within LINUX_PROCCONN_ACK_DRAINS drains, the error of
 * the last refusal seen (-EPERM) or -ETIMEDOUT; or -errno of recv: then the caller closes pc
 * and lists /proc.
 */
int linux_procconn_drain(struct linux_procconn *pc, struct linux_proc_delta *delta);
/* The subscription was acknowledged: delta can stand for a listing of /proc. */
bool linux_procconn_live(const struct linux_procconn *pc);
/* Events and overruns read so far. */
unsigned long linux_procconn_events(const struct linux_procconn *pc);
unsigned long linux_procconn_overruns(const struct linux_procconn *pc);

/*
 * Parse one datagram of len bytes (netlink messages each carrying a cn_msg and a proc_event):
 * process events into delta, and an acknowledgement (a PROC_EVENT_NONE answering a request
 * sent with ack 0; the kernel numbers it itself, and every subscriber's comes to every
 * socket of the group) into *ack_err (0 or a positive errno; left alone when there is none).
 * Threads' forks and exits are left out (only a thread group's own pid counts), so are the events
 * vnumad does not use (uid, gid, sid, ptrace, coredump).  Returns the events added, or -EBADMSG for
 * a truncated or malformed message (what came before it is kept).
 */
int linux_procconn_parse(const void *buf, size_t len, struct linux_proc_delta *delta, int *ack_err);

#endif
