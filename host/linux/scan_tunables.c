/*
 * scan_tunables.c - the kernel's NUMA scan tunables (scan_tunables.h).
 */
#include "host/linux/scan_tunables.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/fileio.h"

#define SCAN_DEBUGFS_DIR "/sys/kernel/debug/sched/numa_balancing/"
#define SCAN_PROCFS_DIR  "/proc/sys/kernel/numa_balancing_"
#define SCAN_DEBUGFS_TOP "/sys/kernel/debug"

/* Largest tunable file read, bytes: a decimal unsigned int and a newline. */
#define SCAN_FILE_MAX_BYTES 64

/* The four files, in struct scan_tunables order. */
static const char *const scan_names[] = {"scan_delay_ms", "scan_period_min_ms",
                                         "scan_period_max_ms", "scan_size_mb"};
#define SCAN_NR 4

static int *
scan_field(struct scan_tunables *t, int i)
{
	int *f[SCAN_NR] = {&t->delay_ms, &t->period_min_ms, &t->period_max_ms, &t->size_mb};

	return f[i];
}

static int
scan_path(const char *root, bool debugfs, int i, char *buf, size_t len)
{
	bool real = root == NULL || strcmp(root, "/") == 0;
	int n = snprintf(buf, len, "%s%s%s", real ? "" : root,
	                 debugfs ? SCAN_DEBUGFS_DIR : SCAN_PROCFS_DIR, scan_names[i]);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

const char *
linux_scan_lever_name(enum linux_scan_lever lever)
{
	return lever == LINUX_SCAN_WRITABLE  ? "present"
	       : lever == LINUX_SCAN_REFUSED ? "refused"
	                                     : "absent";
}

static int
scan_read_one(const char *path, int *out)
{
	char *data, *end;
	size_t len;
	long v;
	int ret = fileio_read(path, SCAN_FILE_MAX_BYTES, &data, &len);

	if (ret < 0)
		return ret;
	errno = 0;
	v = strtol(data, &end, 10);
	while (*end == '\n' || *end == ' ')
		end++;
	ret = (end == data || *end != '\0' || errno != 0 || v < 0 || v > INT_MAX) ? -EBADMSG : 0;
	if (ret == 0)
		*out = (int)v;
	free(data);
	return ret;
}

int
linux_scan_tunables_read(const char *root, bool debugfs, struct scan_tunables *out)
{
	char path[PATH_MAX];
	int ret = 0;

	for (int i = 0; i < SCAN_NR && ret == 0; i++)
		if ((ret = scan_path(root, debugfs, i, path, sizeof(path))) == 0)
			ret = scan_read_one(path, scan_field(out, i));
	return ret;
}

static int
scan_write_one(const char *path, int value)
{
	char text[32];
	int n = snprintf(text, sizeof(text), "%d\n", value), ret = 0;
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (write(fd, text, (size_t)n) != n)
		ret = errno != 0 ? -errno : -EIO;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	return ret;
}

int
linux_scan_tunables_write(const char *root, bool debugfs, const struct scan_tunables *t)
{
	struct scan_tunables copy = *t;
	char path[PATH_MAX];
	int ret = 0;

	for (int i = 0; i < SCAN_NR; i++)
		if (*scan_field(&copy, i) < 0)
			return -EINVAL;
	for (int i = 0; i < SCAN_NR && ret == 0; i++)
		if ((ret = scan_path(root, debugfs, i, path, sizeof(path))) == 0)
			ret = scan_write_one(path, *scan_field(&copy, i));
	return ret;
}

/* Whether set debugfs has all four files under root. */
static bool
scan_set_exists(const char *root, bool debugfs)
{
	char path[PATH_MAX];

	for (int i = 0; i < SCAN_NR; i++)
		if (scan_path(root, debugfs, i, path, sizeof(path)) < 0 || access(path, F_OK) < 0)
			return false;
	return true;
}

/* Whether root's /sys/kernel/debug is there and empty (debugfs not mounted on it). */
static bool
scan_debugfs_unmounted(const char *root)
{
	bool real = root == NULL || strcmp(root, "/") == 0, empty = true;
	char path[PATH_MAX];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "%s%s", real ? "" : root, SCAN_DEBUGFS_TOP);
	if ((dir = opendir(path)) == NULL)
		return false;
	while (empty && (de = readdir(dir)) != NULL)
		empty = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0;
	closedir(dir);
	return empty;
}

/* Why file i of the set cannot be used, into out->reason; 0 when it can. */
static int
scan_file_check(const char *root, int i, struct linux_scan_probe *out)
{
	char path[PATH_MAX];
	struct stat st;
	int value, fd, ret = scan_path(root, out->debugfs, i, path, sizeof(path));

	if (ret == 0 && (ret = scan_read_one(path, &value)) < 0) {
		snprintf(out->reason, sizeof(out->reason), "%s: unreadable: %s", scan_names[i],
		         ret == -EBADMSG ? "not a non-negative integer" : fileio_strerror(ret));
		return ret;
	}
	if (ret == 0 && stat(path, &st) == 0 && (st.st_mode & S_IWUSR) == 0) {
		snprintf(out->reason, sizeof(out->reason), "%s: read-only (mode %04o)",
		         scan_names[i], (unsigned)(st.st_mode & 07777));
		return -EACCES;
	}
	if (ret == 0 && (fd = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
		ret = -errno;
		snprintf(out->reason, sizeof(out->reason), "%s: cannot be opened for writing: %s%s",
		         scan_names[i], strerror(-ret),
		         ret == -EPERM && out->debugfs ? " (kernel lockdown?)" : "");
		return ret;
	}
	if (ret == 0)
		close(fd);
	return ret;
}

void
linux_scan_tunables_probe(const char *root, struct linux_scan_probe *out)
{
	memset(out, 0, sizeof(*out));
	out->debugfs = true;
	if (!scan_set_exists(root, true)) {
		out->debugfs = false;
		if (!scan_set_exists(root, false)) {
			bool unmounted = scan_debugfs_unmounted(root);

			out->debugfs = unmounted;
			out->lever = unmounted ? LINUX_SCAN_REFUSED : LINUX_SCAN_ABSENT;
			snprintf(out->reason, sizeof(out->reason), "%s",
			         unmounted ? "debugfs is not mounted on /sys/kernel/debug"
			                   : "no scan tunables in debugfs or /proc/sys/kernel "
			                     "(a kernel without NUMA balancing)");
			return;
		}
	}
	out->lever = LINUX_SCAN_WRITABLE;
	for (int i = 0; i < SCAN_NR && out->lever == LINUX_SCAN_WRITABLE; i++)
		if (scan_file_check(root, i, out) < 0)
			out->lever = LINUX_SCAN_REFUSED;
}
