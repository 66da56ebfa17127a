/*
 * scan.h - bounded text scanning shared by the procfs and sysfs readers (host/linux/).
 *
 * Every parser in host/linux/ reads a (buffer, length) pair, never a NUL-terminated string:
 * procfs files may be cut short, and fuzzers hand us arbitrary bytes, embedded NULs
 * included.  A struct linux_scan is a window [p, end) into such a buffer; each helper either
 * consumes what it recognises and advances p, or leaves p alone and reports failure.
 *
 * Error convention of every parser built on these helpers:
 *   -EINVAL  malformed text (bad syntax, a number that overflows 64 bits, a missing key)
 *   -EFBIG   well-formed but beyond our bounds (too many ids, an id past LINUX_MAX_*)
 * and of every reader: those, plus -ENOENT when the file or the process has gone away, or
 * another -errno from open/read.
 */
#ifndef VNUMAD_HOST_LINUX_SCAN_H
#define VNUMAD_HOST_LINUX_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Bounds on what we accept from the kernel.  Linux's largest MAX_NUMNODES is 1024
 * (CONFIG_NODES_SHIFT=10) and its largest NR_CPUS is 8192; 65536 CPUs leaves room for the
 * future while keeping a corrupt "0-4000000000" from allocating gigabytes.  Ids are
 * exclusive bounds: a node id must be < LINUX_MAX_NODES.
 */
#define LINUX_MAX_NODES 1024
#define LINUX_MAX_CPUS  65536

/* A window [p, end) into a text buffer. */
struct linux_scan {
	const char *p;
	const char *end;
};

static inline void
linux_scan_init(struct linux_scan *s, const char *buf, size_t len)
{
	s->p = buf;
	s->end = buf + len;
}

static inline bool
linux_scan_empty(const struct linux_scan *s)
{
	return s->p >= s->end;
}

static inline size_t
linux_scan_len(const struct linux_scan *s)
{
	return (size_t)(s->end - s->p);
}

/* Split off the next line (without its '\n') into *line; false when s is used up. */
bool linux_scan_line(struct linux_scan *s, struct linux_scan *line);
/* Skip blanks (spaces and tabs). */
void linux_scan_blanks(struct linux_scan *s);
/* Consume c if it comes next. */
bool linux_scan_char(struct linux_scan *s, char c);
/* Consume the literal lit if it comes next. */
bool linux_scan_literal(struct linux_scan *s, const char *lit);
/* Split off the next run of non-blank characters; false (nothing consumed) if none. */
bool linux_scan_token(struct linux_scan *s, struct linux_scan *tok);
/* True if the window holds exactly the text lit. */
bool linux_scan_equals(const struct linux_scan *s, const char *lit);
/* Drop trailing blanks and one trailing '\n' (and blanks before it) from the window. */
void linux_scan_trim(struct linux_scan *s);

/* Unsigned decimal; -EINVAL if no digit comes next or the value overflows 64 bits. */
int linux_scan_u64(struct linux_scan *s, uint64_t *v);
/* Hexadecimal without "0x"; -EINVAL as for linux_scan_u64. */
int linux_scan_x64(struct linux_scan *s, uint64_t *v);
/* Optionally signed decimal; -EINVAL on no digit or overflow. */
int linux_scan_s64(struct linux_scan *s, int64_t *v);
/* Non-negative decimal id below limit: -EINVAL on bad syntax, -EFBIG if >= limit. */
int linux_scan_id(struct linux_scan *s, int limit, int *v);
/* Signed decimal that fits an int: -EINVAL otherwise. */
int linux_scan_int(struct linux_scan *s, int *v);

/*
 * An id list as the kernel prints cpumasks and nodemasks with %*pbl ("0-3,8,10-11"), filling
 * the whole window, in the grammar of policy/idlist.h (blanks and one trailing newline
 * allowed; items in any order, as the kernel's own bitmap_parselist takes them).  Ids must be
 * below limit (-EFBIG otherwise, however many digits).  An empty list is valid: *nr = 0,
 * *ids = NULL.  On success *ids holds the ids ascending, each once, malloc'd (owned by the
 * caller); on error it is NULL.
 */
int linux_scan_idlist(struct linux_scan *s, int limit, int **ids, int *nr);

/*
 * Read <root><path> (root NULL or "/" means the real root; path is built from fmt and must
 * start with '/') into a malloc'd, NUL-terminated buffer of at most max_bytes (-EFBIG
 * beyond).  -ESRCH (a task that died while we read) becomes -ENOENT, so callers see one
 * "vanished" code; -ENAMETOOLONG when the path does not fit PATH_MAX.  *data is NULL on error.
 */
int linux_file_read(const char *root, size_t max_bytes, char **data, size_t *len, const char *fmt,
                    ...) __attribute__((format(printf, 5, 6)));

#endif
