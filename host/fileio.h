/* fileio.h - reading a whole, size-capped file (configs, state, scenarios, procfs later). */
#ifndef VNUMAD_HOST_FILEIO_H
#define VNUMAD_HOST_FILEIO_H

#include <stddef.h>

/*
 * Read all of path into a malloc'd, NUL-terminated buffer (*len excludes the NUL).  Returns
 * 0, -EFBIG when the file holds more than max_bytes, or -errno; on error *data is NULL.
 */
int fileio_read(const char *path, size_t max_bytes, char **data, size_t *len);

#endif
