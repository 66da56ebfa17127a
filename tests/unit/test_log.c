/*
 * test_log.c - the logger: stderr and journal line formats, target auto-detection through
 * $JOURNAL_STREAM, errno kept and appended, level filtering, one line per message, fatal's exit
 * status, and the per-VM rate limiter (suppressed counts, bounded table).
 *
 * Output is captured by pointing file descriptor 2 at a temporary file with dup2().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/config.h"
#include "agent/log.h"

/* Size of the capture buffer: enough for the eviction test's ~260 lines. */
#define CAPTURE_MAX (64 * 1024)

static char tmpdir[64];
static char out_path[128];
static int saved_stderr = -1;
static int out_fd = -1;
static char captured[CAPTURE_MAX];

static int
group_setup(void **state)
{
	const char *base = getenv("TMPDIR");

	snprintf(tmpdir, sizeof(tmpdir), "%s/vnumad-log-XXXXXX", base && *base ? base : "/tmp");
	if (mkdtemp(tmpdir) == NULL)
		return -1;
	snprintf(out_path, sizeof(out_path), "%s/stderr", tmpdir);
	unsetenv("JOURNAL_STREAM");
	return 0;
}

static int
group_teardown(void **state)
{
	unlink(out_path);
	return rmdir(tmpdir);
}

/* Send fd 2 to a fresh temporary file. */
static void
capture_begin(void)
{
	fflush(stderr);
	out_fd = open(out_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(out_fd >= 0);
	saved_stderr = dup(STDERR_FILENO);
	assert_true(saved_stderr >= 0);
	assert_int_equal(dup2(out_fd, STDERR_FILENO), STDERR_FILENO);
}

/* Put fd 2 back and return what was written to it. */
static const char *
capture_end(void)
{
	ssize_t n;

	assert_int_equal(dup2(saved_stderr, STDERR_FILENO), STDERR_FILENO);
	close(saved_stderr);
	n = pread(out_fd, captured, sizeof(captured) - 1, 0);
	assert_true(n >= 0);
	captured[n] = '\0';
	close(out_fd);
	return captured;
}

static int
count_lines(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += *s == '\n';
	return n;
}

static void
test_level_parse(void **state)
{
	assert_int_equal(log_level_parse("error"), LOG_LEVEL_ERR);
	assert_int_equal(log_level_parse("warning"), LOG_LEVEL_WARN);
	assert_int_equal(log_level_parse("info"), LOG_LEVEL_INFO);
	assert_int_equal(log_level_parse("debug"), LOG_LEVEL_DEBUG);
	assert_int_equal(log_level_parse("warn"), -1);
	assert_int_equal(log_level_parse(""), -1);
	assert_int_equal(log_level_parse(NULL), -1);
}

static void
test_stderr_format(void **state)
{
	log_init("vnumad", LOG_LEVEL_DEBUG, LOG_TARGET_STDERR);
	capture_begin();
	log_warnx("node %d is full", 2);
	log_info("started, %d VMs", 3);
	log_debug("round %d", 7);
	assert_string_equal(capture_end(), "vnumad: warning: node 2 is full\n"
	                                   "vnumad: started, 3 VMs\n"
	                                   "vnumad: debug: round 7\n");
}

/* journald reads "<N>" at the start of a stderr line as the syslog priority. */
static void
test_journal_format(void **state)
{
	log_init("vnumad", LOG_LEVEL_DEBUG, LOG_TARGET_JOURNAL);
	capture_begin();
	log_warnx("node %d is full", 2);
	log_info("started");
	log_debug("round %d", 7);
	assert_string_equal(capture_end(), "<4>node 2 is full\n<6>started\n<7>round 7\n");
}

static void
test_warn_keeps_errno(void **state)
{
	char want[256];

	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_STDERR);
	capture_begin();
	errno = ENOENT;
	log_warn("cannot open %s", "/proc/42/numa_maps");
	assert_int_equal(errno, ENOENT);
	errno = EACCES;
	log_info("unrelated");
	log_warnx("no errno here");
	assert_int_equal(errno, EACCES);
	snprintf(want, sizeof(want),
	         "vnumad: warning: cannot open /proc/42/numa_maps: %s\n"
	         "vnumad: unrelated\n"
	         "vnumad: warning: no errno here\n",
	         strerror(ENOENT));
	assert_string_equal(capture_end(), want);
}

static void
test_level_filter(void **state)
{
	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_JOURNAL);
	capture_begin();
	log_debug("hidden");
	log_info("shown");
	log_set_level(LOG_LEVEL_ERR);
	log_warnx("hidden too");
	log_vm_warnx(1, 0, "hidden as well");
	log_set_level(LOG_LEVEL_DEBUG);
	log_debug("now shown");
	assert_string_equal(capture_end(), "<6>shown\n<7>now shown\n");
}

/*
 * Each line of a message is a prefixed line (so the journal gives each its priority); other
 * control characters are replaced; an over-long line is cut.
 */
static void
test_lines_of_a_message(void **state)
{
	char big[5000];
	const char *out;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_JOURNAL);
	capture_begin();
	log_warnx("vm \"%s\" misbehaves", "tab\there\r");
	log_warnx("%s", "/etc/x:1: bad\n/etc/x:3: worse\n");
	errno = EPERM;
	log_warn("first\n\nsecond");
	log_info("%s", "");
	log_warnx("%s", big);
	out = capture_end();
	assert_true(strncmp(out,
	                    "<4>vm \"tab?here?\" misbehaves\n"
	                    "<4>/etc/x:1: bad\n<4>/etc/x:3: worse\n"
	                    "<4>first\n<4>second: Operation not permitted\n"
	                    "<6>\n",
	                    strlen(out) - 2048) == 0);
	out += strlen(out) - 2048; /* the cut line: exactly LOG_LINE_MAX bytes */
	assert_memory_equal(out, "<4>xxx", 6);
	assert_string_equal(out + 2048 - 4, "...\n");
	assert_int_equal(count_lines(out), 1);
}

/* A message longer than the logger holds (16 KiB) is cut, and says so. */
static void
test_huge_message(void **state)
{
	static char huge[20000];
	const char *out;

	for (size_t i = 0; i < sizeof(huge) - 1; i++)
		huge[i] = i % 1001 == 1000 ? '\n' : 'y';
	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_JOURNAL);
	capture_begin();
	log_warnx("%s", huge);
	out = capture_end();
	assert_int_equal(count_lines(out), 17);
	assert_string_equal(out + strlen(out) - 4, "...\n");
}

/* auto: journal format only when $JOURNAL_STREAM names the file stderr is open on. */
static void
test_auto_target(void **state)
{
	struct stat st;
	char env[64];

	capture_begin();
	assert_int_equal(fstat(STDERR_FILENO, &st), 0);
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
	         (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", env, 1);
	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_AUTO);
	log_info("to the journal");
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
	         (unsigned long long)st.st_ino + 1);
	setenv("JOURNAL_STREAM", env, 1);
	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_AUTO);
	log_info("stderr was redirected");
	setenv("JOURNAL_STREAM", "garbage", 1);
	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_AUTO);
	log_info("malformed");
	unsetenv("JOURNAL_STREAM");
	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_AUTO);
	log_info("a terminal");
	assert_string_equal(capture_end(), "<6>to the journal\n"
	                                   "vnumad: stderr was redirected\n"
	                                   "vnumad: malformed\n"
	                                   "vnumad: a terminal\n");
}

static void
test_fatal_exits(void **state)
{
	char want[256];
	int status;
	pid_t pid;

	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_STDERR);
	capture_begin();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		errno = EACCES;
		fatal("cannot bind %s", "/run/vnumad/vnumad.sock");
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	snprintf(want, sizeof(want), "vnumad: error: cannot bind /run/vnumad/vnumad.sock: %s\n",
	         strerror(EACCES));
	assert_string_equal(capture_end(), want);
}

static void
test_vm_rate_limit(void **state)
{
	char want[1024];

	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_JOURNAL);
	capture_begin();
	log_vm_warnx(7, 0.0, "vm 7: move failed (%d)", 0);
	for (int i = 1; i <= 5; i++)
		log_vm_warnx(7, (double)i, "vm 7: move failed (%d)", i);
	log_vm_warnx(8, 2.0, "vm 8: move failed");  /* another VM is not held back */
	log_vm_warnx(7, 59.9, "vm 7: move failed"); /* 6th suppressed */
	log_vm_warnx(7, 60.0, "vm 7: interval over");
	log_vm_warnx(7, 61.0, "vm 7: suppressed again");
	log_vm_warnx(7, 120.0, "vm 7: once more");
	log_vm_warnx(8, 130.0, "vm 8: nothing was suppressed");
	log_vm_warnx(7, 100.0, "vm 7: the clock went back"); /* counts as time passed */
	snprintf(want, sizeof(want),
	         "<4>vm 7: move failed (0)\n"
	         "<4>vm 8: move failed\n"
	         "<4>vm 7: interval over (6 similar messages suppressed)\n"
	         "<4>vm 7: once more (1 similar message suppressed)\n"
	         "<4>vm 8: nothing was suppressed\n"
	         "<4>vm 7: the clock went back\n");
	assert_string_equal(capture_end(), want);
	assert_int_equal(LOG_VM_INTERVAL_S, 60);
}

/*
 * The table is bounded: with every slot taken, a new VM takes the slot of the VM that logged
 * longest ago, which is then forgotten (its next warning is printed at once).
 */
static void
test_vm_table_eviction(void **state)
{
	const char *out;

	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_JOURNAL);
	capture_begin();
	for (int vm = 0; vm < 256; vm++)
		log_vm_warnx(vm, vm * 0.1, "vm %d", vm);
	log_vm_warnx(1000, 30.0, "vm 1000 evicts vm 0");
	log_vm_warnx(2, 31.0, "vm 2 is still remembered");
	log_vm_warnx(0, 31.0, "vm 0 was forgotten, evicts vm 1");
	log_vm_warnx(1, 32.0, "vm 1 was forgotten, evicts vm 2");
	log_vm_warnx(3, 33.0, "vm 3 is still remembered");
	out = capture_end();
	assert_int_equal(count_lines(out), 256 + 3);
	assert_non_null(strstr(out, "<4>vm 255\n<4>vm 1000 evicts vm 0\n"
	                            "<4>vm 0 was forgotten, evicts vm 1\n"
	                            "<4>vm 1 was forgotten, evicts vm 2\n"));
	assert_null(strstr(out, "still remembered"));
}

/*
 * Actions: at most LOG_ACTION_BURST lines per VM in LOG_VM_INTERVAL_S, the next line after
 * says how many were left out; the daemon's own (vm_id < 0) are never held back; an action
 * does not mute the VM's first warning.
 */
static void
test_vm_actions(void **state)
{
	const char *out;

	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_STDERR);
	capture_begin();
	for (int i = 0; i < LOG_ACTION_BURST + 3; i++)
		log_vm_action(5, "web1", "pin", 1.0 + i * 0.1, "pin: web1 vCPU %d", i);
	log_vm_warnx(5, 3.0, "web1: a warning is not muted by actions");
	for (int i = 0; i < 30; i++)
		log_vm_action(-1, NULL, "pause", 4.0, "pause %d", i);
	log_vm_action(5, "web1", "move", 1.0 + LOG_VM_INTERVAL_S, "move: web1 1024 MiB");
	out = capture_end();
	assert_int_equal(count_lines(out), LOG_ACTION_BURST + 1 + 30 + 1);
	assert_non_null(strstr(out, "vnumad: pin: web1 vCPU 9\n"));
	assert_null(strstr(out, "vCPU 10\n"));
	assert_non_null(strstr(out, "vnumad: warning: web1: a warning is not muted by actions\n"));
	assert_non_null(strstr(out, "vnumad: pause 29\n"));
	assert_non_null(strstr(out, "vnumad: move: web1 1024 MiB (3 earlier actions of this VM not "
	                            "logged: see vnumactl events)\n"));
	assert_int_equal(LOG_ACTION_BURST, 10);
}

/* Under journald an action goes as a native datagram with its fields; else as a line. */
static void
test_vm_action_journal_fields(void **state)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char got[1024];
	ssize_t n;
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/journal", tmpdir);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	log_journal_socket_set(sa.sun_path);
	log_init("vnumad", LOG_LEVEL_INFO, LOG_TARGET_JOURNAL);
	capture_begin();
	log_vm_action(3, "db\n1", "move", 1.0, "move: db1: 1024 MiB to node %d", 2);
	log_vm_action(-1, NULL, "pause", 1.0, "pause: paused");
	assert_string_equal(capture_end(), "");
	n = recv(fd, got, sizeof(got) - 1, MSG_DONTWAIT);
	assert_true(n > 0);
	got[n] = '\0';
	assert_string_equal(got, "MESSAGE=move: db1: 1024 MiB to node 2\nPRIORITY=6\n"
	                         "SYSLOG_IDENTIFIER=vnumad\nVM=db?1\nVNUMAD_ACTION=move\n");
	n = recv(fd, got, sizeof(got) - 1, MSG_DONTWAIT);
	assert_true(n > 0);
	got[n] = '\0';
	assert_string_equal(got, "MESSAGE=pause: paused\nPRIORITY=6\nSYSLOG_IDENTIFIER=vnumad\n"
	                         "VNUMAD_ACTION=pause\n");
	close(fd);
	unlink(sa.sun_path);
	/* no journald there: the line goes to stderr with its priority */
	capture_begin();
	log_vm_action(3, "db1", "move", 2.0, "move: db1 again");
	assert_string_equal(capture_end(), "<6>move: db1 again\n");
	log_journal_socket_set(NULL);
}

int
main(void)
{
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_level_parse),
		cmocka_unit_test(test_stderr_format),
		cmocka_unit_test(test_journal_format),
		cmocka_unit_test(test_warn_keeps_errno),
		cmocka_unit_test(test_level_filter),
		cmocka_unit_test(test_lines_of_a_message),
		cmocka_unit_test(test_huge_message),
		cmocka_unit_test(test_auto_target),
		cmocka_unit_test(test_fatal_exits),
		cmocka_unit_test(test_vm_rate_limit),
		cmocka_unit_test(test_vm_table_eviction),
		cmocka_unit_test(test_vm_actions),
		cmocka_unit_test(test_vm_action_journal_fields),
	};
	/* clang-format on */

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
