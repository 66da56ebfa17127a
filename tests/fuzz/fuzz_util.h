/*
 * fuzz_util.h - what the fuzz targets of tests/fuzz/ share (docs/fuzzing.md):
 *
 * - One input as several named files, for readers that take a file or a root directory (the
 *   config, the state file, policy files, /proc and /sys trees).  A line "%% PATH" starts a
 *   file; its content is every byte after that line up to the next such line (the newline
 *   before it included) or the end of the input.  "%%0 PATH" is the same with each newline
 *   written as a NUL, so that a NUL-separated file such as /proc/PID/cmdline is one argument
 *   per line; "%%- PATH" leaves out the content's last newline (a file cut short, followed by
 *   more files).  Bytes before the first header line form a file with the empty path.
 * - A private temporary directory per process, made on first use under $TMPDIR (default
 *   /tmp) and removed at exit, emptied by each input that writes files into it.
 * - A command line as one argument per line.
 *
 * Functions, not a library: each target and replay test (tests/unit/test_fuzz_replay_*.c)
 * includes this header, which is why everything here is static and may go unused.
 */
#ifndef VNUMAD_TESTS_FUZZ_UTIL_H
#define VNUMAD_TESTS_FUZZ_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/util.h"

#define FUZZ_UNUSED __attribute__((unused))

/* Most files one input makes (a 16-CPU tree for hwloc makes 100), and the longest path of
 * one (bytes, with the NUL). */
#define FUZZ_FILES_MAX    128
#define FUZZ_PATH_MAX     256
#define FUZZ_HEADER       "%% "
#define FUZZ_HEADER_LINES "%%0 "
#define FUZZ_HEADER_CUT   "%%- "

struct fuzz_file {
	char path[FUZZ_PATH_MAX]; /* "" for the bytes before the first header */
	const uint8_t *data;      /* into the input */
	size_t len;
	bool nul_lines; /* "%%0": newlines are written as NULs */
};

/* Length of the header at p (a line start), or 0; sets *lines for "%%0", *cut for "%%-". */
static FUZZ_UNUSED size_t
fuzz_header_len(const uint8_t *p, size_t left, bool *lines, bool *cut)
{
	static const char *const headers[] = {FUZZ_HEADER, FUZZ_HEADER_LINES, FUZZ_HEADER_CUT};

	for (int i = 0; i < 3; i++) {
		size_t n = strlen(headers[i]);

		if (left >= n && memcmp(p, headers[i], n) == 0) {
			*lines = i == 1;
			*cut = i == 2;
			return n;
		}
	}
	return 0;
}

/*
 * Split data into files (at most max: the last one then takes the rest, headers and all).
 * Returns how many.  A path too long for FUZZ_PATH_MAX is kept cut; a NUL in it ends it.
 */
static FUZZ_UNUSED int
fuzz_files_split(const uint8_t *data, size_t size, struct fuzz_file *files, int max)
{
	size_t i = 0;
	int nr = 0;

	while (nr < max) {
		struct fuzz_file *f = &files[nr];
		bool lines = false, cut = false, next_lines, next_cut;
		size_t hdr = fuzz_header_len(data + i, size - i, &lines, &cut), start;

		memset(f, 0, sizeof(*f));
		if (hdr > 0) {
			const uint8_t *nl = memchr(data + i + hdr, '\n', size - i - hdr);
			size_t end = nl != NULL ? (size_t)(nl - data) : size;
			size_t plen = strnlen((const char *)data + i + hdr, end - i - hdr);

			if (plen >= sizeof(f->path))
				plen = sizeof(f->path) - 1;
			memcpy(f->path, data + i + hdr, plen);
			f->nul_lines = lines;
			i = nl != NULL ? end + 1 : size;
		}
		/* The content: whole lines up to the next one that starts with a header. */
		start = i;
		while (i < size &&
		       (nr + 1 == max ||
		        fuzz_header_len(data + i, size - i, &next_lines, &next_cut) == 0)) {
			const uint8_t *nl = memchr(data + i, '\n', size - i);

			i = nl != NULL ? (size_t)(nl - data) + 1 : size;
		}
		f->data = data + start;
		f->len = i - start;
		if (cut && f->len > 0 && f->data[f->len - 1] == '\n')
			f->len--;
		if (hdr > 0 || f->len > 0)
			nr++;
		if (i >= size)
			break;
	}
	return nr;
}

/* A NUL-terminated copy of data; the caller frees it. */
static FUZZ_UNUSED char *
fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = xmalloc(size + 1);

	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* ---- the private directory ------------------------------------------------------------------ */

static char fuzz_dir_path[FUZZ_PATH_MAX];

/* Remove everything under the directory fd (closed here); 0 or -errno. */
static FUZZ_UNUSED int
fuzz_dir_empty_fd(int fd)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int ret = 0;

	if (d == NULL) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)) != NULL) {
		int sub;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			continue;
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 || fuzz_dir_empty_fd(sub) < 0 ||
		    unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0)
			ret = -EIO;
	}
	closedir(d);
	return ret;
}

static FUZZ_UNUSED void
fuzz_dir_remove(void)
{
	int fd = open(fuzz_dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0 && fuzz_dir_empty_fd(fd) == 0)
		rmdir(fuzz_dir_path);
}

/* The process's private directory (made on the first call), emptied. */
static FUZZ_UNUSED const char *
fuzz_dir_reset(void)
{
	int fd;

	if (fuzz_dir_path[0] == '\0') {
		const char *tmp = getenv("TMPDIR");

		snprintf(fuzz_dir_path, sizeof(fuzz_dir_path), "%s/vnumad-fuzz.XXXXXX",
		         tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
		if (mkdtemp(fuzz_dir_path) == NULL) {
			perror("fuzz: mkdtemp");
			abort();
		}
		atexit(fuzz_dir_remove);
		return fuzz_dir_path;
	}
	fd = open(fuzz_dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fuzz_dir_empty_fd(fd) < 0) {
		perror("fuzz: emptying the private directory");
		abort();
	}
	return fuzz_dir_path;
}

/* A relative path of plain components: no "", "." or ".." among them. */
static FUZZ_UNUSED bool
fuzz_path_ok(const char *path)
{
	const char *p = path;

	if (*p == '\0' || *p == '/')
		return false;
	while (*p != '\0') {
		size_t n = strcspn(p, "/");

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (*p == '/' && *++p == '\0')
			return false;
	}
	return true;
}

/* Write len bytes of data (newlines as NULs when nul_lines) to dir/path, making its
 * directories.  0, or -errno (-EINVAL for a path fuzz_path_ok refuses). */
static FUZZ_UNUSED int
fuzz_file_write(const char *dir, const char *path, const uint8_t *data, size_t len, bool nul_lines)
{
	struct util_buf full = {0};
	char *buf;
	int fd, ret = 0;

	if (!fuzz_path_ok(path))
		return -EINVAL;
	util_buf_printf(&full, "%s/%s", dir, path);
	for (char *s = full.data + strlen(dir) + 1; ret == 0 && (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		if (mkdir(full.data, 0755) < 0 && errno != EEXIST)
			ret = -errno;
		*s = '/';
	}
	fd = ret < 0 ? -1
	             : open(full.data, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	free(full.data);
	if (fd < 0)
		return ret < 0 ? ret : -errno;
	buf = xmalloc(len + 1);
	if (len > 0)
		memcpy(buf, data, len);
	for (size_t i = 0; nul_lines && i < len; i++)
		if (buf[i] == '\n')
			buf[i] = '\0';
	if (write(fd, buf, len) != (ssize_t)len)
		ret = errno != 0 ? -errno : -EIO;
	free(buf);
	close(fd);
	return ret;
}

/* Every file of data with a path, written under the emptied private directory; returns it. */
static FUZZ_UNUSED const char *
fuzz_tree_write(const uint8_t *data, size_t size)
{
	struct fuzz_file files[FUZZ_FILES_MAX];
	const char *dir = fuzz_dir_reset();
	int nr = fuzz_files_split(data, size, files, FUZZ_FILES_MAX);

	for (int i = 0; i < nr; i++)
		if (files[i].path[0] != '\0')
			fuzz_file_write(dir, files[i].path, files[i].data, files[i].len,
			                files[i].nul_lines);
	return dir;
}

/* ---- command lines ------------------------------------------------------------------------- */

/* Arguments split from one buffer: argv[argc] is NULL; free with fuzz_argv_free. */
struct fuzz_argv {
	int argc;
	char **argv;
	char *buf;
};

/*
 * data as arguments separated by sep, after first (when not NULL) as argv[0]; a final sep
 * ends the last argument rather than starting an empty one.  At most max arguments.
 */
static FUZZ_UNUSED void
fuzz_argv_split(const uint8_t *data, size_t size, char sep, const char *first, int max,
                struct fuzz_argv *out)
{
	size_t start = 0;

	out->buf = fuzz_strndup(data, size);
	out->argv = xcalloc((size_t)max + 2, sizeof(*out->argv));
	out->argc = 0;
	if (first != NULL)
		out->argv[out->argc++] = (char *)first;
	for (size_t i = 0; i <= size && out->argc < max + (first != NULL); i++) {
		if (i < size && out->buf[i] != sep)
			continue;
		if (i == size && start == size)
			break;
		out->buf[i] = '\0';
		out->argv[out->argc++] = out->buf + start;
		start = i + 1;
	}
	out->argv[out->argc] = NULL;
}

static FUZZ_UNUSED void
fuzz_argv_free(struct fuzz_argv *a)
{
	free(a->argv);
	free(a->buf);
	memset(a, 0, sizeof(*a));
}

/* ---- checks -------------------------------------------------------------------------------- */

/* Whether s (len bytes) is valid UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF). */
static FUZZ_UNUSED bool
fuzz_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = p[i] < 0x80                    ? 1
		           : p[i] >= 0xc2 && p[i] <= 0xdf ? 2
		           : p[i] >= 0xe0 && p[i] <= 0xef ? 3
		           : p[i] >= 0xf0 && p[i] <= 0xf4 ? 4
		                                          : 0;
		uint32_t cp = n == 1   ? p[i]
		              : n == 2 ? p[i] & 0x1fu
		              : n == 3 ? p[i] & 0x0fu
		                       : p[i] & 7u;

		if (n == 0 || n > len - i)
			return false;
		for (size_t k = 1; k < n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3fu);
		}
		if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n;
	}
	return true;
}

/* A message buffer of errlen bytes holds a NUL-terminated string (what every parser must
 * leave in its err argument). */
static FUZZ_UNUSED bool
fuzz_msg_ok(const char *err, size_t errlen)
{
	return memchr(err, '\0', errlen) != NULL;
}

#endif
