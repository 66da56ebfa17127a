/* fileio.c - reading a whole, size-capped file. */
#include "host/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/util.h"

/* First buffer size: most of what we read is small. */
#define FILEIO_FIRST_BYTES 4096

/* fileio.h: per thread, so no lock and no other thread's work in a caller's difference. */
static _Thread_local struct fileio_counts fileio_counts;

/*
 * Open path for reading if it is a regular file (fileio.h): its fd, -EISDIR for a directory,
 * -EINVAL for anything else, or -errno.
 */
static int
fileio_open_regular(const char *path)
{
	struct stat st;
	int fd, rc;

	if (stat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	fileio_counts.opens++;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		rc = -errno;
	else if (!S_ISREG(st.st_mode))
		rc = -EINVAL; /* swapped for something else since the stat() */
	else
		return fd;
	close(fd);
	return rc;
}

const char *
fileio_strerror(int rc)
{
	if (rc == -EISDIR)
		return "not a regular file (a directory)";
	return rc == -EINVAL ? "not a regular file" : strerror(-rc);
}

int
fileio_read(const char *path, size_t max_bytes, char **data, size_t *len)
{
	size_t cap = FILEIO_FIRST_BYTES, n = 0;
	int fd = fileio_open_regular(path), rc = 0;
	char *buf;

	*data = NULL;
	if (fd < 0)
		return fd;
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
		fileio_counts.reads++;
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

int
fileio_open(const char *path)
{
	return fileio_open_regular(path);
}

int
fileio_pread(int fd, size_t max_bytes, char **data, size_t *len)
{
	size_t cap = FILEIO_FIRST_BYTES, n = 0;
	char *buf = xmalloc(cap + 1);
	int rc = 0;

	*data = NULL;
	*len = 0;
	for (;;) {
		ssize_t r = pread(fd, buf + n, cap - n, (off_t)n);

		fileio_counts.reads++;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			break;
		}
		n += (size_t)r;
		if (n < cap) /* short: the end (fileio.h) */
			break;
		if (cap > max_bytes) {
			rc = -EFBIG;
			break;
		}
		cap *= 2;
		buf = xreallocarray(buf, cap + 1, 1);
	}
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

void
fileio_counts_get(struct fileio_counts *out)
{
	*out = fileio_counts;
}

void
fileio_count_open(void)
{
	fileio_counts.opens++;
}
