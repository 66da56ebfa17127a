/*
 * http_hold - a test tool: a TCP client that sends some bytes and then stalls.
 *
 *   http_hold HOST PORT SECONDS < bytes
 *
 * Connects to HOST (a numeric IPv4 address) PORT, sends stdin as is (half a request, or
 * garbage), prints "connected" on stdout once it is sent, then holds the connection without
 * reading or sending for at most SECONDS (or until killed, or the peer closes it) and prints
 * how it ended: "closed by peer" or "held".  Exit status 0 when it could connect.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char buf[4096];
	ssize_t n;
	int fd;

	if (argc != 4 || inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "usage: http_hold HOST PORT SECONDS < bytes\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)atoi(argv[2]));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "http_hold: cannot connect to %s:%s: %s\n", argv[1], argv[2],
		        strerror(errno));
		return 1;
	}
	while ((n = read(STDIN_FILENO, buf, sizeof(buf))) > 0)
		if (write(fd, buf, (size_t)n) != n)
			break;
	printf("connected\n");
	fflush(stdout);
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};

		/* whatever the peer answers is read and dropped; its close ends the wait */
		if (poll(&p, 1, atoi(argv[3]) * 1000) <= 0) {
			printf("held\n");
			break;
		}
		if (read(fd, buf, sizeof(buf)) <= 0) {
			printf("closed by peer\n");
			break;
		}
	}
	close(fd);
	return 0;
}
