/* fileio.c - reading a whole, size-capped file. */
#include "host/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "policy/util.h"

/* First buffer size: most of what we read is small. */
#define FILEIO_FIRST_BYTES 4096

int
fileio_read(const char *path, size_t max_bytes, char **data, size_t *len)
{
	size_t cap = FILEIO_FIRST_BYTES, n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	char *buf;

	*data = NULL;
	if (fd < 0)
		return -errno;
	buf = xmalloc(cap + 1);
	for (;;) {
		ssize_t r;

		if (n == cap) {
			if (cap > max_bytes) {
				rc = -EFBIG;
				break;
			}
			cap *= 2;
			buf = xreallocarray(buf, cap + 1, 1);
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (rc == 0 && n > max_bytes)
		rc = -EFBIG;
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*data = buf;
	*len = n;
	return 0;
}
