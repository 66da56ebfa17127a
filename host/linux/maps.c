/*
 * maps.c - a process's mappings, from /proc/<pid>/maps (procfs.h): each one's address range,
 * permissions and file.
 *
 * numa_maps names a mapping by its start address only; moving its pages needs its end, which
 * only maps gives, and locating a vNUMA cell's memory backend (ram_layout.h) needs the files
 * and permissions.  Lines look like "7f3a00000000-7f3a40000000 rw-p 00000000 00:00 0   path".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/linux/procfs.h"
#include "policy/util.h"

/* The path field: the rest of the line after the blanks, NULL when empty. */
static char *
vma_path_dup(const struct linux_scan *line)
{
	size_t n = linux_scan_len(line);
	char *path;

	if (n == 0)
		return NULL;
	path = xmalloc(n + 1);
	memcpy(path, line->p, n);
	path[n] = '\0';
	return path;
}

/* "start-end perms offset dev inode [path]"; -EINVAL when it is not that. */
static int
vma_line_parse(struct linux_scan *line, struct linux_vma *v)
{
	struct linux_scan tok;
	uint64_t inode;

	memset(v, 0, sizeof(*v));
	if (linux_scan_x64(line, &v->start) < 0 || !linux_scan_char(line, '-') ||
	    linux_scan_x64(line, &v->end) < 0 || v->end <= v->start || !linux_scan_char(line, ' '))
		return -EINVAL;
	if (!linux_scan_token(line, &tok) || linux_scan_len(&tok) != 4)
		return -EINVAL;
	memcpy(v->perms, tok.p, 4);
	for (int field = 0; field < 2; field++) { /* offset and device: not used */
		linux_scan_blanks(line);
		if (!linux_scan_token(line, &tok))
			return -EINVAL;
	}
	linux_scan_blanks(line);
	if (linux_scan_u64(line, &inode) < 0)
		return -EINVAL;
	linux_scan_blanks(line);
	v->path = vma_path_dup(line);
	return 0;
}

int
linux_vmas_parse(const char *buf, size_t len, struct linux_vmas *out)
{
	struct linux_scan s, line;
	size_t cap = 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (len > 0 && buf[len - 1] != '\n')
		return -EINVAL; /* cut short */
	linux_scan_init(&s, buf, len);
	while (ret == 0 && linux_scan_line(&s, &line)) {
		struct linux_vma v;

		if (out->nr >= LINUX_NUMA_MAPS_MAX_MAPS) {
			ret = -EFBIG;
		} else if ((ret = vma_line_parse(&line, &v)) == 0) {
			if (out->nr > 0 && v.start < out->vmas[out->nr - 1].end) {
				free(v.path);
				ret = -EINVAL; /* overlapping, or out of order */
				break;
			}
			util_array_reserve((void **)&out->vmas, &cap, out->nr + 1,
			                   sizeof(*out->vmas));
			out->vmas[out->nr++] = v;
		}
	}
	if (ret < 0)
		linux_vmas_free(out);
	return ret;
}

int
linux_vmas_read(const char *root, int pid, struct linux_vmas *out)
{
	char *data;
	size_t len;
	int ret =
	    linux_file_read(root, LINUX_NUMA_MAPS_MAX_BYTES, &data, &len, "/proc/%d/maps", pid);

	memset(out, 0, sizeof(*out));
	if (ret < 0)
		return ret;
	ret = linux_vmas_parse(data, len, out);
	free(data);
	return ret;
}

void
linux_vmas_free(struct linux_vmas *vmas)
{
	for (size_t i = 0; i < vmas->nr; i++)
		free(vmas->vmas[i].path);
	free(vmas->vmas);
	memset(vmas, 0, sizeof(*vmas));
}

int
linux_maps_ends_parse(const char *buf, size_t len, const uint64_t *starts, int n, uint64_t *ends)
{
	struct linux_vmas vmas;
	int ret;

	for (int i = 0; i < n; i++)
		ends[i] = 0;
	if ((ret = linux_vmas_parse(buf, len, &vmas)) < 0)
		return ret;
	for (size_t v = 0; v < vmas.nr; v++)
		for (int i = 0; i < n; i++)
			if (starts[i] == vmas.vmas[v].start)
				ends[i] = vmas.vmas[v].end;
	linux_vmas_free(&vmas);
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
