/*
 * lv_conn.h - one connection to libvirt: running domains, lifecycle and metadata events,
 * vCPU and emulator pins, vnumad's policy metadata, and reconnection with back-off.
 *
 * Threads.  libvirt delivers events only while something runs its event loop.  This module
 * registers libvirt's default event implementation once per process and runs it in one
 * background thread (started by the first lv_conn_open(), stopped when the last connection
 * closes).  That thread only ever touches each connection's event queue and its "link
 * dropped" flag, both under the connection's mutex; everything else in a struct lv_conn
 * belongs to its owner, who must not call into one connection from two threads at once.
 * Nothing here calls back into the caller.  A process that uses libvirt's event loop for
 * something else must not also call virEventRegisterDefaultImpl()/virEventRunDefaultImpl().
 *
 * Errors are 0 or -errno, with libvirt's own message in the caller's buffer:
 *   -ENOENT      no such domain (routine: it just went away)
 *   -ESRCH       the domain is not running
 *   -EINVAL      bad argument (a vCPU the domain lacks, a CPU id out of range, bad XML)
 *   -EOPNOTSUPP  the driver does not do that (e.g. flags the test driver refuses)
 *   -ENOTCONN    not connected right now (lv_conn_poll() is reconnecting)
 *   -EIO         anything else libvirt reported
 * libvirt's default handler, which prints every error on stderr, is silenced for the whole
 * process by the first lv_conn_open().
 */
#ifndef VNUMAD_HOST_LIBVIRT_LV_CONN_H
#define VNUMAD_HOST_LIBVIRT_LV_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/libvirt/lv_domain.h"

/* The URI used when none is given (the system QEMU/KVM driver). */
#define LV_CONN_DEFAULT_URI "qemu:///system"

/* Room for one libvirt error message (they are one line, rarely over 200 bytes). */
#define LV_ERR_LEN 512

struct lv_conn;

/*
 * Open uri (NULL: LV_CONN_DEFAULT_URI), read the host's CPU count (virNodeGetInfo) and
 * register for lifecycle and metadata events.  Blocks for as long as libvirt takes to connect
 * (a first qemu:///system connection takes seconds): call it at start-up.  0 and *out, or
 * -errno with libvirt's message in err.
 */
int lv_conn_open(const char *uri, struct lv_conn **out, char *err, size_t errlen);
/* Deregister, disconnect, and free conn (NULL is fine).  Joins any reconnect attempt. */
void lv_conn_close(struct lv_conn *conn);

const char *lv_conn_uri(const struct lv_conn *conn);
/* Whether conn is connected now (as of the last lv_conn_poll() or call that failed). */
bool lv_conn_is_up(const struct lv_conn *conn);
/* The host's CPU count as libvirt reports it (virNodeGetInfo().cpus); 0 while never up. */
int lv_conn_host_cpus(const struct lv_conn *conn);

/* What lv_conn_poll() found this time. */
enum lv_poll_result {
	LV_POLL_UP = 0,      /* connected, as before */
	LV_POLL_DOWN,        /* not connected; a reconnect is pending or under way */
	LV_POLL_LOST,        /* the connection dropped just now (events may have been missed) */
	LV_POLL_RECONNECTED, /* connected again just now: re-list the domains */
};

/*
 * Reconnection, called by the daemon every round with its monotonic clock now_s.  Notices a
 * dropped connection (libvirt's close callback, or virConnectIsAlive() false) and reconnects
 * after LV_CONN_BACKOFF_MIN_S, doubling each failure up to LV_CONN_BACKOFF_MAX_S.  Connecting
 * runs in a short-lived background thread, so this call never blocks on libvirt; the message
 * of the last failure is in lv_conn_last_error().
 */
enum lv_poll_result lv_conn_poll(struct lv_conn *conn, double now_s);
/* The last connection failure's message ("" if none): for logs and `vnumactl status`. */
const char *lv_conn_last_error(const struct lv_conn *conn);
/* Seconds to wait before the next reconnect attempt (back-off state; for logs and tests). */
double lv_conn_backoff_s(const struct lv_conn *conn);
/* Whether a reconnect attempt is under way (its result not yet collected by lv_conn_poll). */
bool lv_conn_connecting(const struct lv_conn *conn);

/* The running domains, by name (ascending); owns doms. */
struct lv_domain_list {
	int nr;
	struct lv_domain *doms; /* each with its libvirt id set */
	/* Running domains whose live XML did not parse (not in doms), and the first message. */
	int nr_skipped;
	char skipped_err[LV_ERR_LEN];
};

/*
 * List the running domains (virConnectListAllDomains with ACTIVE) and parse each one's live
 * XML.  A domain that stops while we look is left out silently.  0 or -errno (err).
 */
int lv_conn_list(struct lv_conn *conn, struct lv_domain_list *out, char *err, size_t errlen);
void lv_domain_list_free(struct lv_domain_list *list);

/*
 * One domain by name: its live XML (inactive false), or its persistent config (inactive true,
 * VIR_DOMAIN_XML_INACTIVE: the admin's own <vcpupin>s, untouched by live pins).
 */
int lv_conn_domain_get(struct lv_conn *conn, const char *name, bool inactive, struct lv_domain *out,
                       char *err, size_t errlen);

/*
 * Pin a running domain's vCPU (or its emulator threads) to the nr host CPUs in cpus
 * (virDomainPinVcpuFlags / virDomainPinEmulator with flags 0, VIR_DOMAIN_AFFECT_CURRENT:
 * the live domain when it runs; the test driver refuses AFFECT_LIVE).  The CPU map is sized
 * from virNodeGetInfo().cpus, grown to cover the highest CPU asked for; ids must be in
 * 0..LV_MAX_CPUS-1 and nr >= 1.
 */
int lv_conn_pin_vcpu(struct lv_conn *conn, const char *name, int vcpu, const int *cpus, int nr,
                     char *err, size_t errlen);
int lv_conn_pin_emulator(struct lv_conn *conn, const char *name, const int *cpus, int nr, char *err,
                         size_t errlen);

/*
 * The nodes a running domain's memory may be on, as libvirt's live numatune holds them
 * (virDomainGetNumaParameters, VIR_DOMAIN_NUMA_NODESET with VIR_DOMAIN_AFFECT_LIVE): a mask
 * of host node ids (bit n: node n, ids below 64), 0 when libvirt names none.
 */
int lv_conn_mem_nodes_get(struct lv_conn *conn, const char *name, uint64_t *node_ids, char *err,
                          size_t errlen);
/*
 * Change it (virDomainSetNumaParameters, AFFECT_LIVE only: the persistent definition keeps
 * what the admin wrote).  libvirt 9.0 takes it only for a domain whose mode is restrictive
 * (docs/linux-host.md, "Live memory binding"), and writes cpuset.mems of each of the domain's
 * cgroups; the kernel then migrates, unpaced, every page on a node the set leaves out.
 * -EPERM when libvirt refuses it for this domain (its mode), besides the errors above.
 */
int lv_conn_mem_nodes_set(struct lv_conn *conn, const char *name, uint64_t node_ids, char *err,
                          size_t errlen);

/*
 * Write vnumad's policy element into the domain's <metadata> (virDomainSetMetadata, type
 * ELEMENT, prefix "vnuma", namespace VM_POLICY_NS); xml NULL removes it.  xml may be in our
 * namespace (as vm_policy_format_xml() writes it) or in none.  live/config choose
 * VIR_DOMAIN_AFFECT_LIVE/CONFIG; neither means AFFECT_CURRENT.  libvirt raises a
 * METADATA_CHANGE event for it.
 */
int lv_conn_metadata_set(struct lv_conn *conn, const char *name, const char *xml, bool live,
                         bool config, char *err, size_t errlen);
/*
 * Read it back: *xml is a malloc'd element in VM_POLICY_NS (ready for vm_policy_parse_xml()),
 * or NULL when the domain has none.  config false: the current state (live when running).
 */
int lv_conn_metadata_get(struct lv_conn *conn, const char *name, bool config, char **xml, char *err,
                         size_t errlen);

/* ---- events ------------------------------------------------------------------------------- */

enum lv_event_kind {
	LV_EVENT_STARTED = 0, /* lifecycle STARTED (boot, restore, migration in) */
	LV_EVENT_STOPPED,     /* lifecycle STOPPED (shutdown, destroy, crash, migration out) */
	LV_EVENT_METADATA,    /* METADATA_CHANGE of our element (other namespaces are ignored) */
	LV_EVENT_OTHER,       /* any other lifecycle event (suspended, resumed, defined, ...) */
};

/* One event.  Owns name. */
struct lv_event {
	char *name;
	enum lv_event_kind kind;
	int lifecycle;        /* libvirt's virDomainEventType for lifecycle events, else -1 */
	int lifecycle_detail; /* its detail code, else -1 */
};

/* Events kept between two lv_conn_events_take() calls; beyond this they are dropped. */
#define LV_EVENT_QUEUE_MAX 4096

/*
 * Take every queued event, oldest first: *events (malloc'd, free with lv_events_free) and
 * *nr (0 and NULL when none).  Returns 1 if events were dropped because the queue was full
 * since the last call (re-list the domains), else 0.
 */
int lv_conn_events_take(struct lv_conn *conn, struct lv_event **events, int *nr);
void lv_events_free(struct lv_event *events, int nr);
const char *lv_event_kind_name(enum lv_event_kind kind);

#endif
