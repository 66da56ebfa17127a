/* fileio.h - reading a whole, size-capped file (configs, state, scenarios, procfs later). */
#ifndef VNUMAD_HOST_FILEIO_H
#define VNUMAD_HOST_FILEIO_H

#include <stddef.h>

/*
 * Read all of path into a malloc'd, NUL-terminated buffer (*len excludes the NUL).  Returns
 * 0, -EFBIG when the file holds more than max_bytes, -EISDIR for a directory, -EINVAL for
 * anything else that is not a regular file (a FIFO, a device, a socket), or -errno; on error
 * *data is NULL.
 *
 * Only regular files are read, and nothing is opened that would block or do anything on open:
 * the type is checked before opening (a FIFO's open() would wait for a writer, a device's
 * could rewind a tape), the file is opened non-blocking and checked again after (in case it
 * was swapped in between).  A symbolic link is followed: one to a regular file is read (a
 * config or policy file kept elsewhere and linked in), one to anything else is refused.
 * procfs and sysfs files are regular files.
 */
int fileio_read(const char *path, size_t max_bytes, char **data, size_t *len);

/* The reason for a fileio_read() error rc, for messages: "not a regular file" for -EINVAL. */
const char *fileio_strerror(int rc);

#endif
