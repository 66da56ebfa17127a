/*
 * maps.c - the address ranges of a process's mappings, from /proc/<pid>/maps (procfs.h).
 *
 * numa_maps names a mapping by its start address only; moving its pages needs its end, which
 * only maps gives.  Lines look like "7f3a00000000-7f3a40000000 rw-p 00000000 00:00 0   path".
 */
#include <errno.h>
#include <stdlib.h>

#include "host/linux/procfs.h"

/* One line's start and end; -EINVAL unless it begins "start-end " with start < end. */
static int
maps_line_parse(struct linux_scan *line, uint64_t *start, uint64_t *end)
{
	if (linux_scan_x64(line, start) < 0 || !linux_scan_char(line, '-') ||
	    linux_scan_x64(line, end) < 0 || *end <= *start)
		return -EINVAL;
	if (!linux_scan_empty(line) && !linux_scan_char(line, ' '))
		return -EINVAL;
	return 0;
}

int
linux_maps_ends_parse(const char *buf, size_t len, const uint64_t *starts, int n, uint64_t *ends)
{
	struct linux_scan s, line;

	for (int i = 0; i < n; i++)
		ends[i] = 0;
	if (len > 0 && buf[len - 1] != '\n')
		return -EINVAL; /* cut short */
	linux_scan_init(&s, buf, len);
	while (linux_scan_line(&s, &line)) {
		uint64_t start, end;

		if (maps_line_parse(&line, &start, &end) < 0)
			return -EINVAL;
		for (int i = 0; i < n; i++)
			if (starts[i] == start)
				ends[i] = end;
	}
	return 0;
}

int
linux_maps_ends_read(const char *root, int pid, const uint64_t *starts, int n, uint64_t *ends)
{
	char *data;
	size_t len;
	int ret =
	    linux_file_read(root, LINUX_NUMA_MAPS_MAX_BYTES, &data, &len, "/proc/%d/maps", pid);

	if (ret < 0) {
		for (int i = 0; i < n; i++)
			ends[i] = 0;
		return ret;
	}
	ret = linux_maps_ends_parse(data, len, starts, n, ends);
	free(data);
	return ret;
}
