/*
 * lv_conn.c - a libvirt connection: open, reconnect with back-off, list, pin, metadata.
 *
 * Life of a connection: up (vc set) until libvirt's close callback or virConnectIsAlive()
 * says it dropped; then down, with a reconnect attempt after the back-off.  Each attempt runs
 * in its own short-lived thread (virConnectOpen blocks, seconds for a first qemu:///system
 * connection), whose result lv_conn_poll() collects on a later call.  While an attempt runs,
 * the owner's thread sees vc NULL and every operation returns -ENOTCONN; the attempt thread
 * touches only the attempt fields, under lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "host/libvirt/lv_conn.h"
#include "host/libvirt/lv_event.h"
#include "policy/idlist.h"
#include "policy/util.h"
#include "policy/vm_policy.h"

/*
 * Reconnect back-off, seconds: the first attempt 1 s after the link drops (libvirtd restarts
 * in about that), doubling after each failure up to 60 s, so a host whose libvirtd is gone
 * for good costs one connection attempt a minute.
 */
#define LV_CONN_BACKOFF_MIN_S 1.0
#define LV_CONN_BACKOFF_MAX_S 60.0
/*
 * libvirt keepalive on remote connections: a probe every 5 s, and the link is declared dead
 * after 3 unanswered ones (about 20 s), so a hung libvirtd is noticed like a dead one.
 * Drivers in the client process (test://) have no keepalive; that is fine.
 */
#define LV_CONN_KEEPALIVE_INTERVAL_S 5
#define LV_CONN_KEEPALIVE_COUNT      3
/* The metadata prefix libvirt writes for our namespace. */
#define LV_CONN_METADATA_KEY "vnuma"

/* One established link to libvirt. */
struct lv_link {
	virConnectPtr vc;
	struct lv_watch watch;
	int host_cpus;
};

struct lv_conn {
	char *uri;
	struct lv_sink *sink;
	struct lv_link link; /* link.vc NULL: down */
	int host_cpus;       /* from the last link that came up */
	double backoff_s;
	double next_try_s;
	char last_err[LV_ERR_LEN];

	/* The reconnect attempt: fields below written by its thread under lock. */
	pthread_mutex_t lock;
	bool attempt_running; /* owner's view: a thread exists and must be joined */
	bool attempt_done;
	pthread_t attempt;
	struct lv_link attempt_link;
	int attempt_ret;
	char attempt_err[LV_ERR_LEN];
};

/* ---- errors ------------------------------------------------------------------------------- */

/* libvirt's last error on this thread as -errno, its message into err after prefix. */
static int
conn_error(struct lv_conn *conn, char *err, size_t errlen, const char *prefix)
{
	virErrorPtr e = virGetLastError();
	int code = e ? e->code : VIR_ERR_INTERNAL_ERROR;
	int ret;

	switch (code) {
	case VIR_ERR_NO_DOMAIN:
		ret = -ENOENT;
		break;
	case VIR_ERR_OPERATION_INVALID:
		ret = -ESRCH;
		break;
	case VIR_ERR_INVALID_ARG:
	case VIR_ERR_XML_ERROR:
	case VIR_ERR_XML_DETAIL:
		ret = -EINVAL;
		break;
	case VIR_ERR_NO_SUPPORT:
	case VIR_ERR_ARGUMENT_UNSUPPORTED:
	case VIR_ERR_OPERATION_UNSUPPORTED:
		ret = -EOPNOTSUPP;
		break;
	case VIR_ERR_NO_DOMAIN_METADATA:
		ret = -ENODATA;
		break;
	default:
		ret = -EIO;
		break;
	}
	if (ret == -EIO && conn != NULL && conn->link.vc != NULL &&
	    virConnectIsAlive(conn->link.vc) == 0)
		ret = -ENOTCONN;
	util_errf(err, errlen, "%s: %s", prefix, virGetLastErrorMessage());
	virResetLastError();
	return ret;
}

/* ---- links -------------------------------------------------------------------------------- */

/* Connect to uri and watch it for events into sink.  0 or -errno (err). */
static int
link_open(const char *uri, struct lv_sink *sink, struct lv_link *link, char *err, size_t errlen)
{
	virNodeInfo info;
	char what[LV_ERR_LEN];
	int ret;

	memset(link, 0, sizeof(*link));
	snprintf(what, sizeof(what), "cannot connect to %s", uri);
	if ((link->vc = virConnectOpen(uri)) == NULL)
		return conn_error(NULL, err, errlen, what);
	if (virNodeGetInfo(link->vc, &info) < 0) {
		ret = conn_error(NULL, err, errlen, what);
		goto fail;
	}
	link->host_cpus = (int)info.cpus;
	if (virConnectSetKeepAlive(link->vc, LV_CONN_KEEPALIVE_INTERVAL_S,
	                           LV_CONN_KEEPALIVE_COUNT) < 0)
		virResetLastError(); /* the driver has no keepalive */
	lv_sink_link_begin(sink);
	if ((ret = lv_watch_add(link->vc, sink, &link->watch, err, errlen)) < 0)
		goto fail;
	return 0;
fail:
	virConnectClose(link->vc);
	link->vc = NULL;
	return ret;
}

static void
link_close(struct lv_link *link)
{
	if (link->vc == NULL)
		return;
	lv_watch_remove(link->vc, &link->watch);
	virConnectClose(link->vc);
	link->vc = NULL;
}

/* ---- open, close, reconnect --------------------------------------------------------------- */

int
lv_conn_open(const char *uri, struct lv_conn **out, char *err, size_t errlen)
{
	struct lv_conn *conn;
	int ret;

	*out = NULL;
	if ((ret = lv_loop_acquire(err, errlen)) < 0)
		return ret;
	conn = xcalloc(1, sizeof(*conn));
	conn->uri = xstrdup(uri != NULL ? uri : LV_CONN_DEFAULT_URI);
	conn->sink = lv_sink_new();
	conn->backoff_s = LV_CONN_BACKOFF_MIN_S;
	pthread_mutex_init(&conn->lock, NULL);
	if ((ret = link_open(conn->uri, conn->sink, &conn->link, err, errlen)) < 0) {
		lv_conn_close(conn);
		return ret;
	}
	conn->host_cpus = conn->link.host_cpus;
	*out = conn;
	return 0;
}

void
lv_conn_close(struct lv_conn *conn)
{
	if (conn == NULL)
		return;
	if (conn->attempt_running) {
		pthread_join(conn->attempt, NULL);
		link_close(&conn->attempt_link);
	}
	link_close(&conn->link);
	lv_sink_unref(conn->sink);
	pthread_mutex_destroy(&conn->lock);
	free(conn->uri);
	free(conn);
	lv_loop_release();
}

static void *
attempt_main(void *arg)
{
	struct lv_conn *conn = arg;
	struct lv_link link;
	char err[LV_ERR_LEN] = "";
	int ret;

	ret = link_open(conn->uri, conn->sink, &link, err, sizeof(err));
	pthread_mutex_lock(&conn->lock);
	conn->attempt_link = link;
	conn->attempt_ret = ret;
	memcpy(conn->attempt_err, err, sizeof(err));
	conn->attempt_done = true;
	pthread_mutex_unlock(&conn->lock);
	return NULL;
}

/* Collect a finished attempt: LV_POLL_RECONNECTED, or LV_POLL_DOWN with the back-off grown. */
static enum lv_poll_result
attempt_collect(struct lv_conn *conn, double now_s)
{
	bool done;

	pthread_mutex_lock(&conn->lock);
	done = conn->attempt_done;
	pthread_mutex_unlock(&conn->lock);
	if (!done)
		return LV_POLL_DOWN;
	pthread_join(conn->attempt, NULL);
	conn->attempt_running = false;
	if (conn->attempt_ret == 0) {
		conn->link = conn->attempt_link;
		conn->host_cpus = conn->link.host_cpus;
		conn->backoff_s = LV_CONN_BACKOFF_MIN_S;
		return LV_POLL_RECONNECTED;
	}
	memcpy(conn->last_err, conn->attempt_err, sizeof(conn->last_err));
	conn->backoff_s *= 2;
	if (conn->backoff_s > LV_CONN_BACKOFF_MAX_S)
		conn->backoff_s = LV_CONN_BACKOFF_MAX_S;
	conn->next_try_s = now_s + conn->backoff_s;
	return LV_POLL_DOWN;
}

enum lv_poll_result
lv_conn_poll(struct lv_conn *conn, double now_s)
{
	int rc;

	if (conn->link.vc != NULL) {
		if (!lv_sink_dropped(conn->sink) && virConnectIsAlive(conn->link.vc) == 1)
			return LV_POLL_UP;
		virResetLastError();
		link_close(&conn->link);
		util_errf(conn->last_err, sizeof(conn->last_err), "connection to %s lost",
		          conn->uri);
		conn->backoff_s = LV_CONN_BACKOFF_MIN_S;
		conn->next_try_s = now_s + conn->backoff_s;
		return LV_POLL_LOST;
	}
	if (conn->attempt_running)
		return attempt_collect(conn, now_s);
	if (now_s < conn->next_try_s)
		return LV_POLL_DOWN;
	conn->attempt_done = false;
	if ((rc = pthread_create(&conn->attempt, NULL, attempt_main, conn)) != 0) {
		conn->next_try_s = now_s + conn->backoff_s;
		util_errf(conn->last_err, sizeof(conn->last_err),
		          "cannot start a reconnect thread: %s", strerror(rc));
		return LV_POLL_DOWN;
	}
	conn->attempt_running = true;
	return LV_POLL_DOWN;
}

const char *
lv_conn_uri(const struct lv_conn *conn)
{
	return conn->uri;
}

bool
lv_conn_is_up(const struct lv_conn *conn)
{
	return conn->link.vc != NULL;
}

int
lv_conn_host_cpus(const struct lv_conn *conn)
{
	return conn->host_cpus;
}

const char *
lv_conn_last_error(const struct lv_conn *conn)
{
	return conn->last_err;
}

double
lv_conn_backoff_s(const struct lv_conn *conn)
{
	return conn->backoff_s;
}

bool
lv_conn_connecting(const struct lv_conn *conn)
{
	return conn->attempt_running;
}

int
lv_conn_events_take(struct lv_conn *conn, struct lv_event **events, int *nr)
{
	return lv_sink_take(conn->sink, events, nr);
}

/* ---- domains ------------------------------------------------------------------------------ */

/* Look name up on the live link: 0 and *dom, or -ENOTCONN/-ENOENT/... (err). */
static int
conn_lookup(struct lv_conn *conn, const char *name, virDomainPtr *dom, char *err, size_t errlen)
{
	char what[LV_ERR_LEN];

	*dom = NULL;
	if (conn->link.vc == NULL) {
		util_errf(err, errlen, "not connected to %s", conn->uri);
		return -ENOTCONN;
	}
	if (name == NULL) {
		util_errf(err, errlen, "no domain name");
		return -EINVAL;
	}
	if ((*dom = virDomainLookupByName(conn->link.vc, name)) != NULL)
		return 0;
	snprintf(what, sizeof(what), "domain %s", name);
	return conn_error(conn, err, errlen, what);
}

/* Parse dom's XML (flags: 0 live, VIR_DOMAIN_XML_INACTIVE) into *out, with its id. */
static int
domain_read(struct lv_conn *conn, virDomainPtr dom, unsigned int flags, struct lv_domain *out,
            char *err, size_t errlen)
{
	const char *name = virDomainGetName(dom);
	char what[LV_ERR_LEN], perr[LV_ERR_LEN];
	char *xml = virDomainGetXMLDesc(dom, flags);
	unsigned int id;
	int ret;

	memset(out, 0, sizeof(*out));
	out->id = -1;
	snprintf(what, sizeof(what), "domain %s", name ? name : "?");
	if (xml == NULL)
		return conn_error(conn, err, errlen, what);
	ret = lv_domain_parse(xml, strlen(xml), out, perr, sizeof(perr));
	free(xml);
	if (ret < 0) {
		util_errf(err, errlen, "%s: %s", what, perr);
		return ret;
	}
	id = virDomainGetID(dom);
	out->id = flags == 0 && id != (unsigned int)-1 ? (int)id : -1;
	virResetLastError();
	return 0;
}

static int
domain_cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct lv_domain *)a)->name, ((const struct lv_domain *)b)->name);
}

int
lv_conn_list(struct lv_conn *conn, struct lv_domain_list *out, char *err, size_t errlen)
{
	virDomainPtr *doms = NULL;
	int n, ret, lost = 0;

	memset(out, 0, sizeof(*out));
	if (conn->link.vc == NULL) {
		util_errf(err, errlen, "not connected to %s", conn->uri);
		return -ENOTCONN;
	}
	n = virConnectListAllDomains(conn->link.vc, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
	if (n < 0)
		return conn_error(conn, err, errlen, "cannot list domains");
	out->doms = xcalloc((size_t)(n > 0 ? n : 1), sizeof(*out->doms));
	for (int i = 0; i < n; i++) {
		char derr[LV_ERR_LEN];

		ret = domain_read(conn, doms[i], 0, &out->doms[out->nr], derr, sizeof(derr));
		if (ret == 0)
			out->nr++;
		else if (ret == -ENOTCONN && !lost++)
			util_errf(err, errlen, "%s", derr);
		else if (ret != -ENOENT && ret != -ESRCH && out->nr_skipped++ == 0)
			memcpy(out->skipped_err, derr, sizeof(derr));
		virDomainFree(doms[i]);
	}
	free(doms);
	if (lost) {
		lv_domain_list_free(out);
		return -ENOTCONN;
	}
	qsort(out->doms, (size_t)out->nr, sizeof(*out->doms), domain_cmp_name);
	return 0;
}

void
lv_domain_list_free(struct lv_domain_list *list)
{
	for (int i = 0; i < list->nr; i++)
		lv_domain_free(&list->doms[i]);
	free(list->doms);
	memset(list, 0, sizeof(*list));
}

int
lv_conn_domain_get(struct lv_conn *conn, const char *name, bool inactive, struct lv_domain *out,
                   char *err, size_t errlen)
{
	virDomainPtr dom;
	int ret;

	memset(out, 0, sizeof(*out));
	out->id = -1;
	if ((ret = conn_lookup(conn, name, &dom, err, errlen)) < 0)
		return ret;
	ret = domain_read(conn, dom, inactive ? VIR_DOMAIN_XML_INACTIVE : 0, out, err, errlen);
	virDomainFree(dom);
	return ret;
}

/* ---- acting ------------------------------------------------------------------------------- */

/* A libvirt CPU map of cpus: *map (malloc'd) of *maplen bytes.  -EINVAL on a bad id. */
static int
cpumap_build(const struct lv_conn *conn, const int *cpus, int nr, unsigned char **map, int *maplen,
             char *err, size_t errlen)
{
	int nbits = conn->host_cpus;

	*map = NULL;
	if (cpus == NULL || nr <= 0) {
		util_errf(err, errlen, "no CPU to pin to");
		return -EINVAL;
	}
	for (int i = 0; i < nr; i++) {
		if (cpus[i] < 0 || cpus[i] >= LV_MAX_CPUS) {
			util_errf(err, errlen, "CPU %d is out of range", cpus[i]);
			return -EINVAL;
		}
		if (cpus[i] + 1 > nbits)
			nbits = cpus[i] + 1;
	}
	*maplen = VIR_CPU_MAPLEN(nbits);
	*map = xcalloc((size_t)*maplen, 1);
	for (int i = 0; i < nr; i++)
		VIR_USE_CPU(*map, cpus[i]);
	return 0;
}

int
lv_conn_pin_vcpu(struct lv_conn *conn, const char *name, int vcpu, const int *cpus, int nr,
                 char *err, size_t errlen)
{
	virDomainPtr dom = NULL;
	unsigned char *map = NULL;
	char what[LV_ERR_LEN];
	int maplen, ret;

	if (vcpu < 0) {
		util_errf(err, errlen, "vCPU %d is out of range", vcpu);
		return -EINVAL;
	}
	if ((ret = cpumap_build(conn, cpus, nr, &map, &maplen, err, errlen)) < 0 ||
	    (ret = conn_lookup(conn, name, &dom, err, errlen)) < 0)
		goto out;
	if (virDomainPinVcpuFlags(dom, (unsigned int)vcpu, map, maplen, 0) < 0) {
		snprintf(what, sizeof(what), "cannot pin vCPU %d of %s", vcpu, name);
		ret = conn_error(conn, err, errlen, what);
	}
out:
	if (dom != NULL)
		virDomainFree(dom);
	free(map);
	return ret;
}

int
lv_conn_mem_nodes_get(struct lv_conn *conn, const char *name, uint64_t *node_ids, char *err,
                      size_t errlen)
{
	virDomainPtr dom = NULL;
	virTypedParameterPtr params = NULL;
	int nparams = 0, ret;
	char what[LV_ERR_LEN];
	const char *set = NULL;

	*node_ids = 0;
	if ((ret = conn_lookup(conn, name, &dom, err, errlen)) < 0)
		return ret;
	/* the first call counts the parameters, the second fills them */
	if (virDomainGetNumaParameters(dom, NULL, &nparams, VIR_DOMAIN_AFFECT_LIVE) < 0 ||
	    nparams <= 0)
		goto fail;
	params = xcalloc((size_t)nparams, sizeof(*params));
	if (virDomainGetNumaParameters(dom, params, &nparams, VIR_DOMAIN_AFFECT_LIVE) < 0)
		goto fail;
	if (virTypedParamsGetString(params, nparams, VIR_DOMAIN_NUMA_NODESET, &set) < 0)
		goto fail;
	ret = set == NULL || set[0] == '\0'
	          ? 0
	          : nodemask_parse(set, IDLIST_LIBVIRT, node_ids, err, errlen);
	goto out;
fail:
	snprintf(what, sizeof(what), "cannot read the memory nodes of %s", name);
	ret = conn_error(conn, err, errlen, what);
out:
	if (params != NULL)
		virTypedParamsFree(params, nparams);
	virDomainFree(dom);
	return ret;
}

int
lv_conn_mem_nodes_set(struct lv_conn *conn, const char *name, uint64_t node_ids, char *err,
                      size_t errlen)
{
	virDomainPtr dom = NULL;
	virTypedParameterPtr params = NULL;
	int nparams = 0, maxparams = 0, ret;
	char what[LV_ERR_LEN], set[NODEMASK_STR_MAX];

	if (node_ids == 0) {
		util_errf(err, errlen, "no memory nodes for %s", name);
		return -EINVAL;
	}
	if ((ret = conn_lookup(conn, name, &dom, err, errlen)) < 0)
		return ret;
	nodemask_format(node_ids, set, sizeof(set));
	if (virTypedParamsAddString(&params, &nparams, &maxparams, VIR_DOMAIN_NUMA_NODESET, set) <
	        0 ||
	    virDomainSetNumaParameters(dom, params, nparams, VIR_DOMAIN_AFFECT_LIVE) < 0) {
		snprintf(what, sizeof(what), "cannot set the memory nodes of %s to %s", name, set);
		ret = conn_error(conn, err, errlen, what);
		/* OPERATION_INVALID on a domain that runs: refused for its numatune mode */
		if (ret == -ESRCH && virDomainIsActive(dom) == 1)
			ret = -EPERM;
	}
	virTypedParamsFree(params, nparams);
	virDomainFree(dom);
	return ret;
}

int
lv_conn_pin_emulator(struct lv_conn *conn, const char *name, const int *cpus, int nr, char *err,
                     size_t errlen)
{
	virDomainPtr dom = NULL;
	unsigned char *map = NULL;
	char what[LV_ERR_LEN];
	int maplen, ret;

	if ((ret = cpumap_build(conn, cpus, nr, &map, &maplen, err, errlen)) < 0 ||
	    (ret = conn_lookup(conn, name, &dom, err, errlen)) < 0)
		goto out;
	if (virDomainPinEmulator(dom, map, maplen, 0) < 0) {
		snprintf(what, sizeof(what), "cannot pin the emulator threads of %s", name);
		ret = conn_error(conn, err, errlen, what);
	}
out:
	if (dom != NULL)
		virDomainFree(dom);
	free(map);
	return ret;
}

int
lv_conn_metadata_set(struct lv_conn *conn, const char *name, const char *xml, bool live,
                     bool config, char *err, size_t errlen)
{
	unsigned int flags =
	    (live ? VIR_DOMAIN_AFFECT_LIVE : 0) | (config ? VIR_DOMAIN_AFFECT_CONFIG : 0);
	virDomainPtr dom = NULL;
	char *plain = NULL, what[LV_ERR_LEN];
	int ret;

	/* libvirt adds the namespace itself and refuses an element that declares it. */
	if (xml != NULL && (plain = lv_metadata_unqualify(xml, err, errlen)) == NULL)
		return -EINVAL;
	if ((ret = conn_lookup(conn, name, &dom, err, errlen)) < 0)
		goto out;
	if (virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, plain,
	                         plain ? LV_CONN_METADATA_KEY : NULL, VM_POLICY_NS, flags) < 0) {
		snprintf(what, sizeof(what), "cannot set the policy of %s", name);
		ret = conn_error(conn, err, errlen, what);
	}
out:
	if (dom != NULL)
		virDomainFree(dom);
	free(plain);
	return ret;
}

int
lv_conn_metadata_get(struct lv_conn *conn, const char *name, bool config, char **xml, char *err,
                     size_t errlen)
{
	virDomainPtr dom = NULL;
	char *raw, what[LV_ERR_LEN];
	int ret;

	*xml = NULL;
	if ((ret = conn_lookup(conn, name, &dom, err, errlen)) < 0)
		return ret;
	raw = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, VM_POLICY_NS,
	                           config ? VIR_DOMAIN_AFFECT_CONFIG : 0);
	if (raw == NULL) {
		snprintf(what, sizeof(what), "cannot read the policy of %s", name);
		ret = conn_error(conn, err, errlen, what);
		if (ret == -ENODATA) {
			ret = 0; /* no policy element: not an error */
			util_errf(err, errlen, "%s", "");
		}
	} else if ((*xml = lv_metadata_qualify(raw, err, errlen)) == NULL) {
		ret = -EINVAL;
	}
	free(raw);
	virDomainFree(dom);
	return ret;
}
