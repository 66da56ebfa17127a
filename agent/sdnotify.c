/*
 * sdnotify.c - systemd's notify protocol (sd_notify(3)) without libsystemd.
 *
 * A message is one datagram of "VARIABLE=value" lines sent to the AF_UNIX socket named by
 * $NOTIFY_SOCKET: a path ("/run/systemd/notify"), or an abstract address written with a leading
 * '@'.  Other forms (systemd's "vsock:") are not supported and give -EAFNOSUPPORT.  The
 * variables are left in the environment: the daemon's children (it has none) would inherit them,
 * and the daemon itself sends READY=1, STATUS= and WATCHDOG=1 many times.
 */
#include "agent/sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Build the socket address from $NOTIFY_SOCKET; 0, or -errno for an unusable value. */
static int
sdnotify_addr(const char *name, struct sockaddr_un *sun, socklen_t *len)
{
	size_t n = strlen(name);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (name[0] != '/' && name[0] != '@')
		return -EAFNOSUPPORT;
	if (n < 2 && name[0] == '@')
		return -EINVAL;
	if (n >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	memcpy(sun->sun_path, name, n);
	if (name[0] == '@') {
		/* Abstract: a leading NUL, and the length says where the name ends. */
		sun->sun_path[0] = '\0';
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else {
		*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	}
	return 0;
}

int
sdnotify(const char *msg)
{
	const char *name = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sun;
	socklen_t len = 0;
	size_t msg_len = strlen(msg);
	ssize_t sent;
	int fd, rc;

	if (name == NULL || name[0] == '\0')
		return 0; /* not started by systemd with Type=notify */
	rc = sdnotify_addr(name, &sun, &len);
	if (rc < 0)
		return rc;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	do {
		sent = sendto(fd, msg, msg_len, MSG_NOSIGNAL, (struct sockaddr *)&sun, len);
	} while (sent < 0 && errno == EINTR);
	if (sent < 0)
		rc = -errno;
	else if ((size_t)sent != msg_len)
		rc = -EMSGSIZE;
	close(fd);
	return rc;
}

/* Parse a decimal without sign into *out; -EINVAL on anything else or overflow. */
static int
sdnotify_u64_parse(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (s == NULL || *s == '\0')
		return -EINVAL;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

uint64_t
sdnotify_watchdog_usec(void)
{
	const char *pid_s = getenv("WATCHDOG_PID");
	uint64_t usec = 0, pid = 0;

	if (sdnotify_u64_parse(getenv("WATCHDOG_USEC"), &usec) < 0 || usec == 0)
		return 0;
	/* Without WATCHDOG_PID the watchdog is for us; with it, only if it names us. */
	if (pid_s != NULL && (sdnotify_u64_parse(pid_s, &pid) < 0 || pid != (uint64_t)getpid()))
		return 0;
	return usec;
}
