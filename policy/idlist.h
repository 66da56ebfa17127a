/*
 * idlist.h - the one parser of node and CPU lists such as "0-3,8,10-11".
 *
 * Every list of ids vnumad reads goes through idlist_parse(): sysfs files
 * (/sys/devices/system/node/online, node<N>/cpulist), cgroup cpuset.cpus and cpuset.mems,
 * /proc/<pid>/status Cpus_allowed_list, libvirt's cpuset and nodeset attributes, policy XML
 * nodes=, vnumactl's node arguments and vnuma-load's sysfs reads.
 *
 * Grammar (the kernel's cpulist format, as bitmap_parselist reads it):
 *
 *   list := item { "," item }
 *   item := N | N "-" M | "^" N        N, M: decimal digits; M >= N; "^N" only with IDLIST_LIBVIRT
 *
 * - Blanks (spaces and tabs) may stand before and after any number, '-', ',' and '^', and
 *   one newline may end the list (sysfs files end in one); any other byte is an error.
 * - Items may come in any order and overlap ("3,0-1,1" is 0,1,3): the result is a set.
 * - Items apply left to right: N and N-M add ids, ^N removes one, so "0-7,^3" is 0-2,4-7 and
 *   "^3,0-7" is 0-7 (libvirt's virBitmapParse reads them so).
 * - IDLIST_LIBVIRT also lets one ',' end the list ("2," is 2), as libvirt does; otherwise an
 *   empty item (",0", "0,,1", "0,") is an error.
 * - An empty list ("" or blanks) is refused unless IDLIST_EMPTY_OK; a list whose exclusions
 *   leave nothing ("0,^0") is refused likewise.
 * - Every id must be below the caller's limit; digits are read without overflow, so
 *   "99999999999999999999" is an id above the limit, not a wrapped number.
 *
 * Errors: -EINVAL for bad syntax or an empty list, -EFBIG for an id at or above the limit
 * (well-formed, but more than we support); with the message in err, naming the offending
 * item, e.g. "'x' is not a number", "range 5-2 runs backwards", "node 70 is above the highest
 * supported (63)".
 */
#ifndef VNUMAD_POLICY_IDLIST_H
#define VNUMAD_POLICY_IDLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* idlist_parse() flags. */
#define IDLIST_EMPTY_OK (1u << 0) /* an empty list is a valid, empty set */
#define IDLIST_LIBVIRT  (1u << 1) /* libvirt's extras: "^N" exclusions and one trailing ',' */
#define IDLIST_CPUS     (1u << 2) /* the ids are CPUs: messages say "CPU 70", not "node 70" */

/* Room for any idlist_parse() message, with the quoted item cut to fit. */
#define IDLIST_ERR_MAX 160

/* A set of ids 0 .. limit-1 as a bitmap; filled by idlist_parse(), owned by the caller. */
struct idlist {
	/*
	 * nr_words words, bit id % 64 of word id / 64: only as many as the highest id set needs
	 * (a CPU list's limit is 65536 ids, and the linux host parses one per vCPU thread each
	 * round: 8 KiB to clear and scan each time for the usual few dozen CPUs).
	 */
	uint64_t *words;
	int nr_words;
	int limit; /* ids are below this */
};

/*
 * Parse text[0..len) (no NUL needed; a NUL byte inside is an error) into *set, ids below
 * limit (1 .. INT_MAX).  0, or -EINVAL/-EFBIG with a message in err (when err is not NULL);
 * *set is empty (words NULL) on error and must be freed with idlist_free() on success.
 */
int idlist_parse(const char *text, size_t len, int limit, unsigned flags, struct idlist *set,
                 char *err, size_t errlen);
void idlist_free(struct idlist *set);

bool idlist_test(const struct idlist *set, int id);
int idlist_count(const struct idlist *set);
/* The lowest id >= from in set, or -1 when there is none. */
int idlist_next(const struct idlist *set, int from);
/* The ids in ascending order: their number, *ids malloc'd (NULL when there are none). */
int idlist_ids(const struct idlist *set, int **ids);

#endif
