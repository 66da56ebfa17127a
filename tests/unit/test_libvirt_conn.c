/*
 * test_libvirt_conn.c - host/libvirt's connection against libvirt's test driver.
 *
 * test:///default (one running domain "test", 2 vCPUs, 16 host CPUs; every connection in this
 * process shares its state, so the test also drives it through a connection of its own):
 * listing, vCPU and emulator pins read back through libvirt, policy metadata set and read
 * back, METADATA_CHANGE / STOPPED / STARTED events delivered to the queue.  A test-driver file
 * written into a temporary directory: domains with policies (one broken), guest cells, pins,
 * numatune, and a shut-off domain that is not listed.  Reconnection with back-off against a
 * private libvirtd (session mode, as nobody when run as root, in a temporary directory,
 * serving the test driver over a unix socket) that is killed and restarted; skipped when
 * libvirtd is not installed.
 *
 * Waits for events are bounded (LV_TEST_WAIT_MS); nothing depends on how fast anything is.
 * The back-off test drives lv_conn_poll() with a made-up clock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <libvirt/libvirt.h>

#include "host/libvirt/lv_conn.h"
#include "policy/util.h"
#include "policy/vm_policy.h"

#define LV_TEST_WAIT_MS  30000 /* longest wait for an event or a daemon, ms */
#define LV_TEST_POLL_MS  10    /* sleep between two looks, ms */
#define LV_TEST_URI      "test:///default"
#define LV_TEST_LIBVIRTD "/usr/sbin/libvirtd"
#define NOBODY_ID        65534

static void
sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static struct lv_conn *
open_ok(const char *uri)
{
	struct lv_conn *conn = NULL;
	char err[LV_ERR_LEN] = "";

	if (lv_conn_open(uri, &conn, err, sizeof(err)) < 0)
		fail_msg("lv_conn_open(%s): %s", uri, err);
	return conn;
}

/* Drain events until name/kind shows up (true) or the bound passes (false). */
static bool
wait_event(struct lv_conn *conn, const char *name, enum lv_event_kind kind)
{
	for (int waited = 0; waited < LV_TEST_WAIT_MS; waited += LV_TEST_POLL_MS) {
		struct lv_event *ev;
		bool seen = false;
		int nr;

		assert_int_equal(lv_conn_events_take(conn, &ev, &nr), 0);
		for (int i = 0; i < nr; i++)
			seen |= ev[i].kind == kind && strcmp(ev[i].name, name) == 0;
		lv_events_free(ev, nr);
		if (seen)
			return true;
		sleep_ms(LV_TEST_POLL_MS);
	}
	return false;
}

static void
drain_events(struct lv_conn *conn)
{
	struct lv_event *ev;
	int nr;

	lv_conn_events_take(conn, &ev, &nr);
	lv_events_free(ev, nr);
}

static const struct lv_domain *
list_find(const struct lv_domain_list *list, const char *name)
{
	for (int i = 0; i < list->nr; i++)
		if (strcmp(list->doms[i].name, name) == 0)
			return &list->doms[i];
	return NULL;
}

/* ---- test:///default ---------------------------------------------------------------------- */

static void
test_default_list(void **state)
{
	struct lv_conn *conn = open_ok(LV_TEST_URI);
	struct lv_domain_list list;
	const struct lv_domain *d;
	char err[LV_ERR_LEN];

	assert_true(lv_conn_is_up(conn));
	assert_string_equal(lv_conn_uri(conn), LV_TEST_URI);
	assert_int_equal(lv_conn_host_cpus(conn), 16);
	assert_int_equal(lv_conn_poll(conn, 0), LV_POLL_UP);
	assert_int_equal(lv_conn_list(conn, &list, err, sizeof(err)), 0);
	assert_int_equal(list.nr, 1);
	assert_int_equal(list.nr_skipped, 0);
	d = list_find(&list, "test");
	assert_non_null(d);
	assert_int_equal(d->nr_vcpus, 2);
	assert_int_equal(d->max_vcpus, 2);
	assert_true(d->id > 0);
	assert_int_equal(d->memory_mib, 8192);
	assert_int_equal(d->current_memory_mib, 2048);
	assert_int_equal(strlen(d->uuid), 36);
	lv_domain_list_free(&list);
	assert_int_equal(list.nr, 0);

	assert_int_equal(
	    lv_conn_domain_get(conn, "nosuch", false, &(struct lv_domain){0}, err, sizeof(err)),
	    -ENOENT);
	assert_non_null(strstr(err, "nosuch"));
	lv_conn_close(conn);
}

/* Which host CPUs libvirt says vCPU vcpu of dom may use (its own pin info call). */
static uint64_t
raw_vcpu_pins(virDomainPtr dom, int vcpu)
{
	unsigned char maps[2 * 8];
	uint64_t mask = 0;

	assert_int_equal(virDomainGetVcpuPinInfo(dom, 2, maps, 8, 0), 2);
	for (int cpu = 0; cpu < 64; cpu++)
		if (VIR_CPU_USABLE(maps, 8, vcpu, cpu))
			mask |= (uint64_t)1 << cpu;
	return mask;
}

static void
test_default_pin(void **state)
{
	struct lv_conn *conn = open_ok(LV_TEST_URI);
	virConnectPtr raw = virConnectOpen(LV_TEST_URI);
	virDomainPtr dom = virDomainLookupByName(raw, "test");
	static const int cpu1[] = {1}, cpus_emu[] = {2, 3}, far[] = {40};
	struct lv_domain d;
	char err[LV_ERR_LEN];

	assert_non_null(dom);
	assert_int_equal(lv_conn_pin_vcpu(conn, "test", 0, cpu1, 1, err, sizeof(err)), 0);
	assert_int_equal(raw_vcpu_pins(dom, 0), (uint64_t)1 << 1);
	assert_int_equal(lv_conn_pin_emulator(conn, "test", cpus_emu, 2, err, sizeof(err)), 0);
	/* A CPU beyond the host's 16: the map grows to hold it (the test driver keeps it). */
	assert_int_equal(lv_conn_pin_vcpu(conn, "test", 1, far, 1, err, sizeof(err)), 0);

	/* Read back from the live XML. */
	assert_int_equal(lv_conn_domain_get(conn, "test", false, &d, err, sizeof(err)), 0);
	assert_int_equal(d.nr_vcpupins, 2);
	assert_int_equal(d.vcpupins[0].nr, 1);
	assert_int_equal(d.vcpupins[0].ids[0], 1);
	assert_int_equal(d.vcpupins[1].ids[0], 40);
	assert_int_equal(d.emulatorpin.nr, 2);
	assert_int_equal(d.emulatorpin.ids[1], 3);
	lv_domain_free(&d);

	/* Refused: a vCPU the domain lacks, no CPUs, a bad id, an unknown domain. */
	assert_int_equal(lv_conn_pin_vcpu(conn, "test", 5, cpu1, 1, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "vcpu"));
	assert_int_equal(lv_conn_pin_vcpu(conn, "test", 0, cpu1, 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(lv_conn_pin_vcpu(conn, "test", 0, (const int[]){-1}, 1, err, sizeof(err)),
	                 -EINVAL);
	assert_int_equal(lv_conn_pin_vcpu(conn, "test", -1, cpu1, 1, err, sizeof(err)), -EINVAL);
	assert_int_equal(lv_conn_pin_vcpu(conn, "gone", 0, cpu1, 1, err, sizeof(err)), -ENOENT);
	assert_int_equal(lv_conn_pin_emulator(conn, "gone", cpu1, 1, err, sizeof(err)), -ENOENT);
	assert_int_equal(raw_vcpu_pins(dom, 0), (uint64_t)1 << 1); /* unchanged */

	virDomainFree(dom);
	virConnectClose(raw);
	lv_conn_close(conn);
}

static void
test_default_metadata(void **state)
{
	struct lv_conn *conn = open_ok(LV_TEST_URI);
	struct vm_policy pol, back;
	char err[LV_ERR_LEN], *xml = NULL, *formatted;
	struct lv_domain d;

	drain_events(conn);
	vm_policy_init_default(&pol);
	pol.mode = VM_POLICY_MODE_MANUAL;
	snprintf(pol.group, sizeof(pol.group), "db-tier");
	formatted = vm_policy_format_xml(&pol);

	/* Current state (live: the domain runs), from vm_policy_format_xml's own output. */
	assert_int_equal(
	    lv_conn_metadata_set(conn, "test", formatted, false, false, err, sizeof(err)), 0);
	assert_true(wait_event(conn, "test", LV_EVENT_METADATA));
	assert_int_equal(lv_conn_metadata_get(conn, "test", false, &xml, err, sizeof(err)), 0);
	assert_non_null(xml);
	assert_int_equal(vm_policy_parse_xml(xml, strlen(xml), &back, err, sizeof(err)), 0);
	assert_int_equal(back.mode, VM_POLICY_MODE_MANUAL);
	assert_string_equal(back.group, "db-tier");
	free(xml);

	/* The live XML carries it in our namespace too. */
	assert_int_equal(lv_conn_domain_get(conn, "test", false, &d, err, sizeof(err)), 0);
	assert_non_null(d.metadata_xml);
	assert_int_equal(
	    vm_policy_parse_xml(d.metadata_xml, strlen(d.metadata_xml), &back, err, sizeof(err)),
	    0);
	assert_int_equal(back.mode, VM_POLICY_MODE_MANUAL);
	lv_domain_free(&d);

	/* Config and live are separate copies. */
	assert_int_equal(lv_conn_metadata_get(conn, "test", true, &xml, err, sizeof(err)), 0);
	assert_null(xml);
	assert_int_equal(lv_conn_metadata_set(conn, "test", "<policy mode='off'/>", false, true,
	                                      err, sizeof(err)),
	                 0);
	assert_int_equal(lv_conn_metadata_get(conn, "test", true, &xml, err, sizeof(err)), 0);
	assert_non_null(strstr(xml, "mode=\"off\""));
	free(xml);
	assert_int_equal(lv_conn_metadata_get(conn, "test", false, &xml, err, sizeof(err)), 0);
	assert_non_null(strstr(xml, "mode=\"manual\""));
	free(xml);

	/* Removed: gone, and that is no error. */
	drain_events(conn);
	assert_int_equal(lv_conn_metadata_set(conn, "test", NULL, true, true, err, sizeof(err)), 0);
	assert_true(wait_event(conn, "test", LV_EVENT_METADATA));
	assert_int_equal(lv_conn_metadata_get(conn, "test", false, &xml, err, sizeof(err)), 0);
	assert_null(xml);

	/* Refused before libvirt sees it. */
	assert_int_equal(
	    lv_conn_metadata_set(conn, "test", "<policy", true, false, err, sizeof(err)), -EINVAL);
	assert_int_equal(
	    lv_conn_metadata_set(conn, "gone", formatted, true, false, err, sizeof(err)), -ENOENT);
	free(formatted);
	lv_conn_close(conn);
}

static void
test_default_lifecycle(void **state)
{
	struct lv_conn *conn = open_ok(LV_TEST_URI);
	struct lv_conn *other = open_ok(LV_TEST_URI); /* two connections share the thread */
	virConnectPtr raw = virConnectOpen(LV_TEST_URI);
	virDomainPtr dom = virDomainLookupByName(raw, "test");
	struct lv_domain_list list;
	char err[LV_ERR_LEN];

	lv_conn_close(other); /* the first one must keep receiving events */
	drain_events(conn);
	assert_int_equal(virDomainDestroy(dom), 0);
	assert_true(wait_event(conn, "test", LV_EVENT_STOPPED));
	assert_int_equal(lv_conn_list(conn, &list, err, sizeof(err)), 0);
	assert_int_equal(list.nr, 0);
	lv_domain_list_free(&list);
	/* Not running: pinning it is -ESRCH. */
	assert_int_equal(lv_conn_pin_vcpu(conn, "test", 0, (const int[]){1}, 1, err, sizeof(err)),
	                 -ESRCH);

	assert_int_equal(virDomainCreate(dom), 0);
	assert_true(wait_event(conn, "test", LV_EVENT_STARTED));
	assert_int_equal(lv_conn_list(conn, &list, err, sizeof(err)), 0);
	assert_int_equal(list.nr, 1);
	lv_domain_list_free(&list);

	virDomainFree(dom);
	virConnectClose(raw);
	lv_conn_close(conn);
}

/*
 * Every event of ours arrives once, in order, and another tool's metadata changes are not
 * reported; events still queued at close are freed with the connection.
 */
static void
test_default_queue(void **state)
{
	struct lv_conn *conn = open_ok(LV_TEST_URI);
	virConnectPtr raw = virConnectOpen(LV_TEST_URI);
	virDomainPtr dom = virDomainLookupByName(raw, "test");
	struct lv_event *ev;
	char err[LV_ERR_LEN];
	int nr, metadata = 0, other = 0;

	drain_events(conn);
	for (int i = 0; i < 5; i++) {
		char xml[64];

		snprintf(xml, sizeof(xml), "<policy priority='%d'/>", i);
		assert_int_equal(
		    lv_conn_metadata_set(conn, "test", xml, true, false, err, sizeof(err)), 0);
	}
	assert_int_equal(virDomainSetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, "<x/>", "o",
	                                      "http://example.org/other/1", 0),
	                 0);
	assert_int_equal(virDomainSuspend(dom), 0); /* the marker: a lifecycle event, last */
	for (int waited = 0; other == 0 && waited < LV_TEST_WAIT_MS; waited += LV_TEST_POLL_MS) {
		assert_int_equal(lv_conn_events_take(conn, &ev, &nr), 0);
		for (int i = 0; i < nr; i++) {
			assert_string_equal(ev[i].name, "test");
			if (ev[i].kind == LV_EVENT_METADATA) {
				assert_int_equal(other, 0); /* in order */
				assert_int_equal(ev[i].lifecycle, -1);
				metadata++;
			} else {
				assert_string_equal(lv_event_kind_name(ev[i].kind), "other");
				assert_int_equal(ev[i].lifecycle, VIR_DOMAIN_EVENT_SUSPENDED);
				other++;
			}
		}
		lv_events_free(ev, nr);
		sleep_ms(LV_TEST_POLL_MS);
	}
	assert_int_equal(other, 1);
	assert_int_equal(metadata, 5);
	assert_int_equal(lv_conn_events_take(conn, &ev, &nr), 0);
	assert_int_equal(nr, 0);
	assert_null(ev);

	assert_int_equal(virDomainResume(dom), 0);
	assert_int_equal(lv_conn_metadata_set(conn, "test", NULL, true, false, err, sizeof(err)),
	                 0);
	virDomainFree(dom);
	virConnectClose(raw);
	lv_conn_close(conn); /* with those events possibly queued: ASan checks they are freed */
}

/* ---- a test-driver file ------------------------------------------------------------------- */

#define POLICY_OPEN "<metadata><vnuma:policy xmlns:vnuma='" VM_POLICY_NS "' "

static const char node_xml[] =
    "<node xmlns:test='http://libvirt.org/schemas/domain/test/1.0'>\n"
    "<cpu><nodes>2</nodes><sockets>1</sockets><cores>4</cores><threads>1</threads>"
    "<active>8</active><mhz>2000</mhz><model>x86_64</model></cpu>\n"
    "<memory>16777216</memory>\n"
    "<domain type='test'><name>db1</name>" POLICY_OPEN "mode='auto' nodes='1'/></metadata>"
    "<memory unit='MiB'>1024</memory><vcpu>4</vcpu>"
    "<cputune><vcpupin vcpu='0' cpuset='0-3,^2'/><emulatorpin cpuset='4-5'/></cputune>"
    "<numatune><memory mode='strict' nodeset='1'/></numatune>"
    "<os><type arch='x86_64'>hvm</type></os>"
    "<cpu><numa><cell id='0' cpus='0-1' memory='512' unit='MiB'/>"
    "<cell id='1' cpus='2-3' memory='512' unit='MiB'/></numa></cpu></domain>\n"
    "<domain type='test'><name>web1</name>" POLICY_OPEN "mode='advisory' group='web'/>"
    "</metadata><memory unit='MiB'>512</memory><vcpu>2</vcpu>"
    "<os><type arch='x86_64'>hvm</type></os></domain>\n"
    "<domain type='test'><name>broken1</name>" POLICY_OPEN "mode='sometimes'/></metadata>"
    "<memory unit='MiB'>256</memory><os><type arch='x86_64'>hvm</type></os></domain>\n"
    "<domain type='test'><name>plain1</name><memory unit='MiB'>256</memory>"
    "<os><type arch='x86_64'>hvm</type></os></domain>\n"
    "<domain type='test'><name>off1</name>" POLICY_OPEN "mode='off'/></metadata>"
    "<memory unit='MiB'>256</memory><os><type arch='x86_64'>hvm</type></os>"
    "<test:runstate>5</test:runstate></domain>\n"
    "</node>\n";

struct tmp_file {
	char dir[64];
	char path[128];
	char uri[160];
};

static void
tmp_file_write(struct tmp_file *t, const char *text)
{
	FILE *f;

	snprintf(t->dir, sizeof(t->dir), "/tmp/vnumad-lvconn-XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->path, sizeof(t->path), "%s/node.xml", t->dir);
	snprintf(t->uri, sizeof(t->uri), "test://%s", t->path);
	f = fopen(t->path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void
tmp_file_remove(struct tmp_file *t)
{
	unlink(t->path);
	rmdir(t->dir);
}

static void
expect_policy(const struct lv_domain *d, int want_ret, enum vm_policy_mode mode,
              const char *err_needle)
{
	struct vm_policy pol;
	char err[256] = "";

	assert_non_null(d);
	assert_non_null(d->metadata_xml);
	assert_int_equal(
	    vm_policy_parse_xml(d->metadata_xml, strlen(d->metadata_xml), &pol, err, sizeof(err)),
	    want_ret);
	assert_int_equal(pol.mode, mode);
	if (err_needle != NULL && strstr(err, err_needle) == NULL)
		fail_msg("policy error \"%s\" lacks \"%s\"", err, err_needle);
}

static void
test_file_domains(void **state)
{
	struct tmp_file t = {0};
	struct lv_conn *conn;
	struct lv_domain_list list;
	const struct lv_domain *db1;
	struct lv_domain off;
	char err[LV_ERR_LEN], *xml;
	int pid;

	tmp_file_write(&t, node_xml);
	conn = open_ok(t.uri);
	assert_int_equal(lv_conn_host_cpus(conn), 8);
	assert_int_equal(lv_conn_list(conn, &list, err, sizeof(err)), 0);

	/* Running ones, by name; off1 is shut off. */
	assert_int_equal(list.nr, 4);
	assert_string_equal(list.doms[0].name, "broken1");
	assert_string_equal(list.doms[1].name, "db1");
	assert_string_equal(list.doms[2].name, "plain1");
	assert_string_equal(list.doms[3].name, "web1");
	assert_null(list_find(&list, "off1"));

	db1 = list_find(&list, "db1");
	assert_true(db1->id > 0);
	assert_int_equal(db1->nr_vcpus, 4);
	assert_int_equal(db1->memory_mib, 1024);
	assert_int_equal(db1->nr_cells, 2);
	assert_int_equal(db1->cells[1].start_mib, 512);
	assert_int_equal(db1->cells[1].vcpus.ids[0], 2);
	assert_int_equal(db1->vcpupins[0].nr, 3);
	assert_int_equal(db1->emulatorpin.ids[0], 4);
	assert_true(db1->numatune);
	assert_int_equal(db1->numatune_nodes.ids[0], 1);

	/* Policies: good ones parse, the broken one says what is wrong, plain1 has none. */
	expect_policy(db1, 0, VM_POLICY_MODE_AUTO, NULL);
	expect_policy(list_find(&list, "web1"), 0, VM_POLICY_MODE_ADVISORY, NULL);
	expect_policy(list_find(&list, "broken1"), -EINVAL, VM_POLICY_MODE_AUTO, "mode");
	assert_null(list_find(&list, "plain1")->metadata_xml);
	lv_domain_list_free(&list);

	/* The shut-off domain: readable, not running, not pinnable; its policy is there. */
	assert_int_equal(lv_conn_domain_get(conn, "off1", true, &off, err, sizeof(err)), 0);
	assert_int_equal(off.id, -1);
	assert_non_null(strstr(off.metadata_xml, "mode=\"off\""));
	lv_domain_free(&off);
	assert_int_equal(lv_conn_pin_vcpu(conn, "off1", 0, (const int[]){1}, 1, err, sizeof(err)),
	                 -ESRCH);
	assert_int_equal(lv_conn_metadata_get(conn, "web1", false, &xml, err, sizeof(err)), 0);
	assert_non_null(strstr(xml, "group=\"web\""));
	free(xml);

	/* The test driver runs no QEMU: no pid file. */
	assert_int_equal(lv_domain_pid_read(t.dir, "db1", &pid), -ENOENT);
	lv_conn_close(conn);
	tmp_file_remove(&t);
}

static void
test_open_errors(void **state)
{
	struct tmp_file t = {0};
	struct lv_conn *conn = (struct lv_conn *)&conn;
	char err[LV_ERR_LEN] = "";

	tmp_file_write(&t, "<node><domain type='test'><name>x</name>");
	assert_true(lv_conn_open(t.uri, &conn, err, sizeof(err)) < 0);
	assert_null(conn);
	assert_non_null(strstr(err, t.uri));
	tmp_file_remove(&t);

	assert_true(lv_conn_open("nosuchdriver:///x", &conn, err, sizeof(err)) < 0);
	assert_null(conn);
	assert_non_null(strstr(err, "nosuchdriver"));
	lv_conn_close(NULL);
}

/* ---- reconnecting to a libvirtd that restarts ------------------------------------------- */

struct daemon {
	char dir[64];  /* our temporary directory */
	char home[96]; /* the daemon's home and XDG dirs (owned by the daemon's user) */
	char uri[256];
	pid_t pid;
};

static bool
socket_listens(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	assert_true(fd >= 0);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

/*
 * Start libvirtd in session mode in d->home (as nobody when we are root) and wait until it
 * listens.  False if it exited first (e.g. no permission to change user here).
 */
static bool
daemon_start(struct daemon *d)
{
	int status;

	char run[160], sock[192];

	snprintf(run, sizeof(run), "%s/run", d->home);
	snprintf(sock, sizeof(sock), "%s/libvirt/libvirt-sock", run);
	unlink(sock);
	d->pid = fork();
	assert_true(d->pid >= 0);
	if (d->pid == 0) {
		int fd = open("/dev/null", O_RDWR);

		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (getuid() == 0 && (setgid(NOBODY_ID) < 0 || setuid(NOBODY_ID) < 0))
			_exit(126);
		clearenv();
		setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin", 1);
		setenv("HOME", d->home, 1);
		setenv("XDG_RUNTIME_DIR", run, 1);
		setenv("XDG_CONFIG_HOME", d->home, 1);
		setenv("XDG_CACHE_HOME", d->home, 1);
		setenv("XDG_DATA_HOME", d->home, 1);
		execl(LV_TEST_LIBVIRTD, "libvirtd", (char *)NULL);
		_exit(127);
	}
	/* Bounded wait until it accepts connections (the file exists before it listens). */
	for (int waited = 0; !socket_listens(sock); waited += LV_TEST_POLL_MS) {
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			print_message("libvirtd exited with status %d\n", status);
			d->pid = 0;
			return false;
		}
		if (waited >= LV_TEST_WAIT_MS)
			fail_msg("libvirtd did not listen on %s", sock);
		sleep_ms(LV_TEST_POLL_MS);
	}
	return true;
}

static void
daemon_stop(struct daemon *d)
{
	int status;

	if (d->pid <= 0)
		return;
	kill(d->pid, SIGTERM);
	for (int waited = 0; waitpid(d->pid, &status, WNOHANG) == 0; waited += LV_TEST_POLL_MS) {
		if (waited >= LV_TEST_WAIT_MS) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &status, 0);
			break;
		}
		sleep_ms(LV_TEST_POLL_MS);
	}
	d->pid = 0;
}

static int
daemon_setup(void **state)
{
	struct daemon *d;

	if (access(LV_TEST_LIBVIRTD, X_OK) != 0)
		return 0; /* the test skips */
	d = xcalloc(1, sizeof(*d));
	snprintf(d->dir, sizeof(d->dir), "/tmp/vnumad-lvd-XXXXXX");
	assert_non_null(mkdtemp(d->dir));
	chmod(d->dir, 0755);
	snprintf(d->home, sizeof(d->home), "%s/home", d->dir);
	assert_int_equal(mkdir(d->home, 0700), 0);
	if (getuid() == 0)
		assert_int_equal(chown(d->home, NOBODY_ID, NOBODY_ID), 0);
	snprintf(d->uri, sizeof(d->uri), "test+unix:///default?socket=%s/run/libvirt/libvirt-sock",
	         d->home);
	*state = d;
	return 0;
}

static int
daemon_teardown(void **state)
{
	struct daemon *d = *state;
	char cmd[128];

	if (d == NULL)
		return 0;
	daemon_stop(d);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->dir);
	if (system(cmd) != 0)
		print_message("could not remove %s\n", d->dir);
	free(d);
	return 0;
}

/* Poll at now_s: an attempt must start; poll until its result is collected. */
static enum lv_poll_result
poll_attempt(struct lv_conn *conn, double now_s)
{
	enum lv_poll_result r = lv_conn_poll(conn, now_s);

	assert_int_equal(r, LV_POLL_DOWN);
	assert_true(lv_conn_connecting(conn));
	for (int waited = 0; waited < LV_TEST_WAIT_MS; waited += LV_TEST_POLL_MS) {
		sleep_ms(LV_TEST_POLL_MS);
		r = lv_conn_poll(conn, now_s);
		if (!lv_conn_connecting(conn))
			return r;
	}
	fail_msg("no reconnect attempt finished");
	return r;
}

static void
test_reconnect_backoff(void **state)
{
	static const double backoffs[] = {4, 8, 16, 32, 60, 60};
	struct daemon *d = *state;
	struct lv_domain_list list;
	struct lv_conn *conn;
	char err[LV_ERR_LEN];
	double t;
	enum lv_poll_result r = LV_POLL_UP;

	if (d == NULL || !daemon_start(d))
		skip(); /* no libvirtd installed, or it cannot run here */
	conn = open_ok(d->uri);
	assert_int_equal(lv_conn_poll(conn, 0), LV_POLL_UP);
	assert_int_equal(lv_conn_list(conn, &list, err, sizeof(err)), 0);
	assert_non_null(list_find(&list, "test"));
	lv_domain_list_free(&list);

	/* The daemon goes away: noticed once, then down, and operations say so. */
	daemon_stop(d);
	for (int waited = 0; r == LV_POLL_UP && waited < LV_TEST_WAIT_MS;
	     waited += LV_TEST_POLL_MS) {
		r = lv_conn_poll(conn, 0);
		sleep_ms(LV_TEST_POLL_MS);
	}
	assert_int_equal(r, LV_POLL_LOST);
	assert_false(lv_conn_is_up(conn));
	assert_int_equal(lv_conn_list(conn, &list, err, sizeof(err)), -ENOTCONN);
	assert_int_equal(lv_conn_pin_vcpu(conn, "test", 0, (const int[]){0}, 1, err, sizeof(err)),
	                 -ENOTCONN);

	/* First attempt 1 s after the loss; each failure doubles the wait, up to 60 s. */
	assert_int_equal(lv_conn_poll(conn, 0.5), LV_POLL_DOWN);
	assert_false(lv_conn_connecting(conn));
	assert_true(lv_conn_backoff_s(conn) == 1.0);
	assert_int_equal(poll_attempt(conn, 1.0), LV_POLL_DOWN);
	assert_true(lv_conn_backoff_s(conn) == 2.0);
	assert_non_null(strstr(lv_conn_last_error(conn), "cannot connect"));
	assert_int_equal(lv_conn_poll(conn, 2.9), LV_POLL_DOWN); /* not yet: next at 3.0 */
	assert_false(lv_conn_connecting(conn));
	assert_true(lv_conn_backoff_s(conn) == 2.0);
	t = 3.0;
	for (size_t i = 0; i < sizeof(backoffs) / sizeof(backoffs[0]); i++) {
		assert_int_equal(poll_attempt(conn, t), LV_POLL_DOWN);
		print_message("attempt at %.0f s failed; next in %.0f s\n", t,
		              lv_conn_backoff_s(conn));
		assert_true(lv_conn_backoff_s(conn) == backoffs[i]);
		t += backoffs[i];
	}

	/* The daemon is back: the next attempt connects and events flow on the new link. */
	assert_true(daemon_start(d));
	/* An attempt may still fail while the daemon starts: each poll is at the next due time. */
	r = poll_attempt(conn, t);
	for (int tries = 1; r != LV_POLL_RECONNECTED && tries < 100; tries++) {
		t += lv_conn_backoff_s(conn);
		r = poll_attempt(conn, t);
	}
	assert_int_equal(r, LV_POLL_RECONNECTED);
	assert_true(lv_conn_is_up(conn));
	assert_true(lv_conn_backoff_s(conn) == 1.0);
	assert_int_equal(lv_conn_poll(conn, t), LV_POLL_UP);
	assert_int_equal(lv_conn_list(conn, &list, err, sizeof(err)), 0);
	assert_non_null(list_find(&list, "test"));
	lv_domain_list_free(&list);
	drain_events(conn);
	assert_int_equal(lv_conn_metadata_set(conn, "test", "<policy mode='advisory'/>", true,
	                                      false, err, sizeof(err)),
	                 0);
	assert_true(wait_event(conn, "test", LV_EVENT_METADATA));
	lv_conn_close(conn);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_list),
	    cmocka_unit_test(test_default_pin),
	    cmocka_unit_test(test_default_metadata),
	    cmocka_unit_test(test_default_lifecycle),
	    cmocka_unit_test(test_default_queue),
	    cmocka_unit_test(test_file_domains),
	    cmocka_unit_test(test_open_errors),
	    cmocka_unit_test_setup_teardown(test_reconnect_backoff, daemon_setup, daemon_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
