/*
 * tool_connect.h - the test tools' connection to a Unix stream socket (vnumad_raw,
 * vnumad_load): a blocking connected descriptor, or -1 with errno set (a path too long for
 * sun_path is ENAMETOOLONG, not a truncated name).
 */
#ifndef VNUMAD_TESTS_TOOL_CONNECT_H
#define VNUMAD_TESTS_TOOL_CONNECT_H

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static inline int
tool_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(path);
	int fd, saved;

	if (len >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, path, len + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

#endif
