/*
 * vnumad_raw - a test tool: send raw bytes to a Unix stream socket and print what comes back.
 *
 *   vnumad_raw SOCKET [--hold S] [--wait S] < bytes
 *
 * Copies stdin to the socket as is (no newline added), then prints every reply line until the
 * peer has been quiet for --wait seconds (default 2).  --hold S connects, sends nothing and
 * just sits there for S seconds (a stuck client).  Exit status 0 when it could connect.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/tools/tool_connect.h"

static void
raw_send_stdin(int fd)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(STDIN_FILENO, buf, sizeof(buf))) > 0)
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(fd, buf + off, (size_t)(n - off));

			if (w <= 0)
				return;
			off += w;
		}
}

static void
raw_print_replies(int fd, int wait_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char buf[65536];

	while (poll(&p, 1, wait_ms) > 0) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0)
			break;
		fwrite(buf, 1, (size_t)n, stdout);
	}
}

int
main(int argc, char **argv)
{
	double hold = 0, wait = 2;
	int fd;

	if (argc < 2) {
		fprintf(stderr, "usage: vnumad_raw SOCKET [--hold S] [--wait S] < bytes\n");
		return 2;
	}
	for (int i = 2; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--hold") == 0)
			hold = atof(argv[i + 1]);
		else if (strcmp(argv[i], "--wait") == 0)
			wait = atof(argv[i + 1]);
	}
	fd = tool_connect(argv[1]);
	if (fd < 0) {
		fprintf(stderr, "vnumad_raw: cannot connect to %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (hold > 0) {
		usleep((useconds_t)(hold * 1e6));
		close(fd);
		return 0;
	}
	raw_send_stdin(fd);
	raw_print_replies(fd, (int)(wait * 1000));
	close(fd);
	return 0;
}
