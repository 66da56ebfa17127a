/* test_sdnotify.c - the notify protocol: path and abstract sockets, no socket, the watchdog. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/sdnotify.h"

/* Bind a datagram socket at name (a path, or '@' + abstract name); returns the fd. */
static int
listener(const char *name)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	socklen_t len;
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	memcpy(sun.sun_path, name, strlen(name));
	if (name[0] == '@') {
		sun.sun_path[0] = '\0';
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
	} else {
		len = (socklen_t)sizeof(sun);
	}
	assert_int_equal(bind(fd, (struct sockaddr *)&sun, len), 0);
	return fd;
}

static void
expect_datagram(int fd, const char *want)
{
	char buf[256];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, want);
}

static void
test_path_socket(void **state)
{
	char dir[] = "/tmp/vnumad-sdn-XXXXXX", path[64];
	int fd;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	fd = listener(path);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(sdnotify("READY=1\nSTATUS=balancing 3 VMs"), 0);
	expect_datagram(fd, "READY=1\nSTATUS=balancing 3 VMs");
	close(fd);
	unlink(path);
	rmdir(dir);
	/* Nobody listens any more. */
	assert_true(sdnotify("WATCHDOG=1") < 0);
}

static void
test_abstract_socket(void **state)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "@vnumad-test-%ld", (long)getpid());
	fd = listener(name);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(sdnotify("WATCHDOG=1"), 0);
	expect_datagram(fd, "WATCHDOG=1");
	close(fd);
}

static void
test_not_under_systemd(void **state)
{
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(sdnotify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(sdnotify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	assert_int_equal(sdnotify("READY=1"), -EAFNOSUPPORT);
	unsetenv("NOTIFY_SOCKET");
}

static void
test_watchdog(void **state)
{
	char pid[32];

	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	assert_int_equal(sdnotify_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "30000000", 1);
	assert_int_equal(sdnotify_watchdog_usec(), 30000000);
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	assert_int_equal(sdnotify_watchdog_usec(), 30000000);
	snprintf(pid, sizeof(pid), "%ld", (long)getpid() + 1);
	setenv("WATCHDOG_PID", pid, 1); /* meant for another process */
	assert_int_equal(sdnotify_watchdog_usec(), 0);
	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "30s", 1);
	assert_int_equal(sdnotify_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "0", 1);
	assert_int_equal(sdnotify_watchdog_usec(), 0);
	setenv("WATCHDOG_USEC", "-5", 1);
	assert_int_equal(sdnotify_watchdog_usec(), 0);
	unsetenv("WATCHDOG_USEC");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_path_socket),
	    cmocka_unit_test(test_abstract_socket),
	    cmocka_unit_test(test_not_under_systemd),
	    cmocka_unit_test(test_watchdog),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
