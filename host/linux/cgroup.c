/*
 * cgroup.c - cgroup v2 memory counters per node (cgroup.h).
 */
#include "host/linux/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/linux/scan.h"

/* Largest cgroup or numa_stat file we read, bytes (a numa_stat of 64 nodes is ~40 KiB). */
#define CG_FILE_MAX_BYTES (256 * 1024)

/* Where the unified hierarchy may be mounted, most usual first. */
static const char *const cg_mounts[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};

/* <root><fmt...> into buf; false when it does not fit. */
static bool __attribute__((format(printf, 4, 5)))
cg_path(const char *root, char *buf, size_t len, const char *fmt, ...)
{
	bool real = root == NULL || strcmp(root, "/") == 0;
	int n = snprintf(buf, len, "%s", real ? "" : root), m;
	va_list ap;

	if (n < 0 || (size_t)n >= len)
		return false;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return m >= 0 && (size_t)m < len - (size_t)n;
}

static bool
cg_exists(const char *root, const char *dir, const char *file)
{
	char path[PATH_MAX];

	return cg_path(root, path, sizeof(path), "%s/%s", dir, file) && access(path, F_OK) == 0;
}

/* The "0::" line's path of a /proc/PID/cgroup text into out; -ENOENT without one. */
static int
cg_v2_line(const char *text, char *out, size_t len)
{
	const char *p = text;

	while (p != NULL && *p != '\0') {
		const char *end = strchr(p, '\n');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n >= 4 && strncmp(p, "0::/", 4) == 0) {
			if (n - 3 >= len)
				return -ENAMETOOLONG;
			memcpy(out, p + 3, n - 3);
			out[n - 3] = '\0';
			return 0;
		}
		p = end ? end + 1 : NULL;
	}
	return -ENOENT;
}

int
linux_cgroup_memory_dir(const char *root, int pid, char *dir, size_t len)
{
	char rel[LINUX_CGROUP_PATH_MAX], *text = NULL;
	const char *mount = NULL;
	size_t text_len;
	int ret;

	if ((ret = linux_file_read(root, CG_FILE_MAX_BYTES, &text, &text_len, "/proc/%d/cgroup",
	                           pid)) < 0)
		goto out;
	if ((ret = cg_v2_line(text, rel, sizeof(rel))) < 0)
		goto out;
	for (size_t i = 0; i < sizeof(cg_mounts) / sizeof(cg_mounts[0]) && mount == NULL; i++)
		if (cg_exists(root, cg_mounts[i], "cgroup.controllers"))
			mount = cg_mounts[i];
	ret = -ENOENT;
	if (mount == NULL)
		goto out;
	/* From the process's own cgroup up to (not into) the root cgroup. */
	while (strcmp(rel, "/") != 0 && rel[0] == '/') {
		char *slash;

		if (snprintf(dir, len, "%s%s", mount, rel) >= (int)len) {
			ret = -ENAMETOOLONG;
			goto out;
		}
		if (cg_exists(root, dir, "memory.numa_stat")) {
			ret = 0;
			goto out;
		}
		slash = strrchr(rel, '/');
		if (slash == rel)
			break;
		*slash = '\0';
	}
out:
	free(text);
	if (ret < 0 && len > 0)
		dir[0] = '\0';
	return ret;
}

/* One "N<id>=<bytes> ..." list (the rest of a line) into bytes[]; raises *nr_nodes. */
static int
cg_node_list(struct linux_scan *line, uint64_t *bytes, int *nr_nodes)
{
	struct linux_scan tok;

	while (linux_scan_blanks(line), linux_scan_token(line, &tok)) {
		uint64_t v;
		int id;

		if (!linux_scan_char(&tok, 'N') ||
		    linux_scan_id(&tok, LINUX_CGROUP_MAX_NODES, &id) < 0 ||
		    !linux_scan_char(&tok, '=') || linux_scan_u64(&tok, &v) < 0 ||
		    !linux_scan_empty(&tok))
			return -EINVAL;
		bytes[id] = v;
		if (id + 1 > *nr_nodes)
			*nr_nodes = id + 1;
	}
	return 0;
}

int
linux_cgroup_numa_stat_parse(const char *text, size_t len, struct linux_cgroup_numa *out)
{
	struct linux_scan s, line;

	memset(out, 0, sizeof(*out));
	linux_scan_init(&s, text, len);
	while (linux_scan_line(&s, &line)) {
		uint64_t *bytes = NULL;

		if (linux_scan_literal(&line, "anon "))
			bytes = out->anon_bytes;
		else if (linux_scan_literal(&line, "shmem "))
			bytes = out->shmem_bytes;
		else if (linux_scan_literal(&line, "anon_thp "))
			bytes = out->anon_thp_bytes;
		if (bytes != NULL && cg_node_list(&line, bytes, &out->nr_nodes) < 0)
			return -EINVAL;
	}
	return 0;
}

int
linux_cgroup_numa_stat_read(const char *root, const char *dir, struct linux_cgroup_numa *out)
{
	char *text;
	size_t len;
	int ret;

	if ((ret = linux_file_read(root, CG_FILE_MAX_BYTES, &text, &len, "%s/memory.numa_stat",
	                           dir)) < 0)
		return ret;
	ret = linux_cgroup_numa_stat_parse(text, len, out);
	free(text);
	return ret;
}

/* 1: only pid (or nobody) in dir's cgroup.procs; 0: someone else; -errno: unreadable. */
static int
cg_procs_only(const char *root, const char *dir, int pid)
{
	char *text, *p, *end;
	size_t len;
	int ret;

	if ((ret = linux_file_read(root, CG_FILE_MAX_BYTES, &text, &len, "%s/cgroup.procs", dir)) <
	    0)
		return ret;
	ret = 1;
	for (p = text; *p != '\0' && ret == 1; p = end) {
		long v = strtol(p, &end, 10);

		if (end == p) {
			end = p + 1; /* a blank or newline */
			continue;
		}
		if (v != pid)
			ret = 0;
	}
	free(text);
	return ret;
}

static int
cg_alone_at(const char *root, const char *dir, int pid, int depth)
{
	char path[PATH_MAX], sub[LINUX_CGROUP_PATH_MAX];
	struct dirent *de;
	DIR *d;
	int ret = cg_procs_only(root, dir, pid);

	if (ret <= 0 || !cg_path(root, path, sizeof(path), "%s", dir) ||
	    (d = opendir(path)) == NULL)
		return ret;
	while (ret == 1 && (de = readdir(d)) != NULL) {
		int sub_ret;

		if (de->d_name[0] == '.' || !cg_exists(root, dir, de->d_name) ||
		    snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= (int)sizeof(sub) ||
		    !cg_exists(root, sub, "cgroup.procs"))
			continue; /* a file, or a name too long to be ours */
		if (depth >= LINUX_CGROUP_DEPTH_MAX)
			ret = 0; /* deeper than libvirt goes: not known to be alone */
		else if ((sub_ret = cg_alone_at(root, sub, pid, depth + 1)) == 0)
			ret = 0;
		/* a threaded child's cgroup.procs may refuse reads: pass over it */
	}
	closedir(d);
	return ret;
}

int
linux_cgroup_alone(const char *root, const char *dir, int pid)
{
	return cg_alone_at(root, dir, pid, 0);
}
