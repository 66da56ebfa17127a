/*
 * util.h - allocation that never returns NULL, a seeded PRNG, and node masks.
 *
 * The policy engine uses no globals and reads no clock; every random choice takes a
 * struct util_rng that the caller seeded, so a run replays exactly.
 */
#ifndef VNUMAD_POLICY_UTIL_H
#define VNUMAD_POLICY_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Abort with a message on out-of-memory; never return NULL. */
void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xreallocarray(void *ptr, size_t nmemb, size_t size);
char *xstrdup(const char *s);

/* Grow *arr (of *cap elements of elem_size) so that it holds at least need elements. */
void util_array_reserve(void **arr, size_t *cap, size_t need, size_t elem_size);

/* Write a message into err (when err is not NULL and errlen > 0), always NUL-terminated. */
void util_errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * s[0..n) quoted for a message into buf (len > 4): at most max_chars bytes, each byte outside
 * printable ASCII shown as '?', and "..." when cut.  Returns buf.
 */
const char *util_quote(const char *s, size_t n, size_t max_chars, char *buf, size_t len);

/* A growable, always NUL-terminated text buffer; the owner frees data. */
struct util_buf {
	char *data;
	size_t len;
	size_t cap;
};

void util_buf_printf(struct util_buf *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* PCG32 (O'Neill), small, fast and good enough for simulation noise. */
struct util_rng {
	uint64_t state;
	uint64_t inc;
};

void util_rng_seed(struct util_rng *rng, uint64_t seed, uint64_t stream);
uint32_t util_rng_u32(struct util_rng *rng);
/* Uniform in [0, 1). */
double util_rng_double(struct util_rng *rng);
/* Uniform integer in [0, n); n > 0. */
uint32_t util_rng_below(struct util_rng *rng, uint32_t n);
/* Poisson-distributed count with mean lambda (>= 0). */
uint32_t util_rng_poisson(struct util_rng *rng, double lambda);

/*
 * Node masks: bit i set = node *index* i (not OS node id).  vnumad supports hosts of up to
 * UTIL_MAX_NODES = 64 nodes, so that a node set is one uint64_t the engine tests, ands and
 * counts in an instruction; topology loading refuses more.  64 is enough for the KVM hosts
 * that exist: the largest x86 machines sold (HPE's 32-socket Superdome Flex, or 8 sockets with
 * sub-NUMA clustering SNC-4) show 32 nodes, IBM's largest Power servers 16 sockets, ARM
 * servers 2 sockets of 1-4 nodes; memory-only nodes (CXL expanders, one node each) add a few
 * per socket.  Node *ids* (the kernel's, below its
 * MAX_NUMNODES = 1024) may be sparse: host/linux reads any id below LINUX_MAX_NODES and maps
 * the ids in use to indexes.  CPU lists have no such limit (struct idlist, policy/idlist.h).
 */
#define UTIL_MAX_NODES 64
#define NODEMASK_ALL   (~(uint64_t)0)

static inline int
nodemask_test(uint64_t mask, int node_idx)
{
	return (int)((mask >> node_idx) & 1u);
}

static inline uint64_t
nodemask_of(int node_idx)
{
	return (uint64_t)1 << node_idx;
}

/* All of nr_nodes nodes (0..nr_nodes-1), safe for 64. */
static inline uint64_t
nodemask_all_of(int nr_nodes)
{
	return nr_nodes >= UTIL_MAX_NODES ? NODEMASK_ALL : nodemask_of(nr_nodes) - 1;
}

int nodemask_weight(uint64_t mask);
/* Lowest / highest set node index, or -1 for an empty mask. */
int nodemask_first(uint64_t mask);
int nodemask_last(uint64_t mask);
/*
 * A node list such as "0-1,3" (the grammar of policy/idlist.h; flags IDLIST_EMPTY_OK,
 * IDLIST_LIBVIRT) into *mask, node indexes up to UTIL_MAX_NODES - 1.  0, or -EINVAL / -EFBIG
 * with the message in err ("node 64 is above the highest supported (63)").
 */
int nodemask_parse(const char *s, unsigned flags, uint64_t *mask, char *err, size_t errlen);
/*
 * 0 when every node of mask is one of the host's nr_nodes nodes, else -EINVAL with the
 * message in err: "node 5 is not one of this host's nodes (0-3)".
 */
int nodemask_check_host(uint64_t mask, int nr_nodes, char *err, size_t errlen);
/*
 * Room for any node list nodemask_format() writes, with its NUL.  The longest list of 64 nodes
 * is 121 characters (pairs one node apart: "0-1,3-4,...,60-61,63"; every other node,
 * "0,2,...,62", is 90), so 128 never cuts one.  Every buffer that holds a node list uses this.
 */
#define NODEMASK_STR_MAX 128

/*
 * Format mask as a node list ("0-1,3") into buf; returns buf. "" for an empty mask.  A list
 * that does not fit len is cut at a whole range; with NODEMASK_STR_MAX bytes it always fits.
 */
char *nodemask_format(uint64_t mask, char *buf, size_t len);

#endif
