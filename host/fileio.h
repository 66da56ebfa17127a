/* fileio.h - reading a whole, size-capped file (configs, state, scenarios, procfs later). */
#ifndef VNUMAD_HOST_FILEIO_H
#define VNUMAD_HOST_FILEIO_H

#include <stddef.h>
#include <stdint.h>

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

/*
 * fileio_read's checks, then the open fd (O_RDONLY, O_CLOEXEC, O_NONBLOCK), or -errno as
 * fileio_read: for a file the caller keeps open and re-reads with fileio_pread.
 */
int fileio_open(const char *path);
/*
 * Read fd from offset 0 into a malloc'd, NUL-terminated buffer of at most max_bytes (-EFBIG
 * beyond), with pread: the fd's offset is left alone and a /proc file is generated afresh.
 * A read shorter than asked ends the file (true of regular files and of the single-record
 * /proc files vnumad keeps open: stat, status, sched).  -errno of pread on error (-ESRCH from
 * a /proc file whose task has gone); *data is NULL on error.
 */
int fileio_pread(int fd, size_t max_bytes, char **data, size_t *len);

/*
 * What this thread has asked of the kernel through fileio since it started: files opened
 * (fileio_read, fileio_open, and directories a caller counts with fileio_count_open) and read
 * calls (read and pread).  Per thread, so that a caller can take the difference around its
 * own work (the Linux host around a snapshot) whatever other threads do meanwhile.
 */
struct fileio_counts {
	uint64_t opens;
	uint64_t reads;
};

void fileio_counts_get(struct fileio_counts *out);
/* Count one open made elsewhere (an opendir of /proc, say). */
void fileio_count_open(void);

/* The reason for a fileio_read() error rc, for messages: "not a regular file" for -EINVAL. */
const char *fileio_strerror(int rc);

#endif
