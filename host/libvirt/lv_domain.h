/*
 * lv_domain.h - what vnumad needs from a libvirt domain XML, as a plain struct.
 *
 * lv_domain_parse() reads the name, uuid, id, memory sizes, vCPU count, guest vNUMA cells,
 * <cputune> pins, <numatune> and the text of vnumad's policy element in <metadata>.  It checks
 * what it reads (bad cpusets, unknown memory units, cells that do not cover the vCPUs, pins of
 * vCPUs that do not exist) and reports the first problem by element and attribute; everything
 * optional may be absent.  It never judges the policy element itself: that is
 * vm_policy_parse_xml()'s job (a bad policy must not hide the VM).
 *
 * Pure parsing: no libvirt calls, so it runs on fixture files.  Thread-safe (libxml2 keeps its
 * error handler per thread; the one installed here is restored before returning).
 */
#ifndef VNUMAD_HOST_LIBVIRT_LV_DOMAIN_H
#define VNUMAD_HOST_LIBVIRT_LV_DOMAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Exclusive upper bounds on ids a domain XML may name.  They bound allocation on corrupt
 * input and are far above anything real: Linux's largest NR_CPUS is 8192 and MAX_NUMNODES
 * 1024; QEMU's x86 machines stop at a few thousand vCPUs.
 */
#define LV_MAX_CPUS  16384 /* host CPU ids in a cpuset */
#define LV_MAX_NODES 1024  /* host node ids in a nodeset */
#define LV_MAX_VCPUS 16384 /* guest vCPUs (and guest cell ids) */

/* Largest domain XML accepted, bytes: real ones are a few KiB; this bounds work on garbage. */
#define LV_DOMAIN_XML_MAX_BYTES (16 * 1024 * 1024)

/* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" plus NUL (libvirt's VIR_UUID_STRING_BUFLEN). */
#define LV_UUID_STRING_LEN 37

/* A set of ids (host CPUs, host nodes or guest vCPUs), ascending, no duplicates.  Owns ids. */
struct lv_idset {
	int nr;   /* 0: empty (ids NULL) */
	int *ids; /* ascending */
};

/* One guest vNUMA cell (<cpu><numa><cell>). */
struct lv_cell {
	int id;                /* guest cell id; cells[] is indexed by it */
	struct lv_idset vcpus; /* guest vCPUs of this cell; empty for a memory-only cell */
	uint64_t memory_kib;   /* as the XML gives it, rounded up to KiB */
	uint64_t memory_mib;   /* memory_kib rounded up to MiB (libvirt aligns x86 cells so) */
	/*
	 * Where the cell's RAM starts within guest RAM: the sum of memory_mib of the cells with
	 * lower ids (QEMU lays cells out in id order).  An offset into guest RAM, not a guest
	 * physical address: x86 machines put a hole below 4 GiB.
	 */
	uint64_t start_mib;
};

/* <numatune> memory modes (libvirt's names; strict is libvirt's default). */
enum lv_mem_mode {
	LV_MEM_MODE_STRICT = 0, /* allocate only from nodeset; fail (OOM) otherwise */
	LV_MEM_MODE_PREFERRED,  /* prefer nodeset, fall back elsewhere */
	LV_MEM_MODE_INTERLEAVE, /* round-robin over nodeset */
	LV_MEM_MODE_RESTRICTIVE /* cgroup cpuset.mems only, no mbind (libvirt >= 7.3) */
};

/* <numatune><memnode cellid mode nodeset>: one guest cell's memory binding. */
struct lv_memnode {
	int cellid;
	enum lv_mem_mode mode;
	struct lv_idset nodes; /* host node ids, never empty */
};

/* One domain.  Owns everything it points to; free with lv_domain_free(). */
struct lv_domain {
	char *name;
	char uuid[LV_UUID_STRING_LEN]; /* lowercase with hyphens; "" when the XML has none */
	int id;                        /* libvirt's domain id; -1 when not running */
	uint64_t memory_mib;           /* <memory>, or the sum of the cells when absent */
	uint64_t current_memory_mib;   /* <currentMemory> (clamped to memory_mib), else memory */
	int nr_vcpus;                  /* <vcpu current=...>, else <vcpu> (default 1) */
	int max_vcpus;                 /* <vcpu> */
	bool hugepages; /* <memoryBacking><hugepages>: kernel NUMA balancing skips it */

	struct lv_idset vcpu_cpuset; /* <vcpu cpuset=...>: vCPUs without a vcpupin; empty: none */

	int nr_cells;          /* 0: no guest NUMA */
	struct lv_cell *cells; /* indexed by cell id */

	/* <cputune><vcpupin>: the explicit pins, indexed by vCPU (max_vcpus entries). */
	int nr_vcpupins;             /* how many vCPUs have one */
	struct lv_idset *vcpupins;   /* [vcpu]; empty set = no <vcpupin> for that vCPU */
	struct lv_idset emulatorpin; /* <cputune><emulatorpin>; empty: none */

	/* <numatune><memory>. */
	bool numatune;                  /* the element is present */
	enum lv_mem_mode numatune_mode; /* meaningful when numatune */
	bool numatune_auto;             /* placement='auto': nodeset chosen at start (numad) */
	struct lv_idset numatune_nodes; /* host node ids; empty when numatune_auto */
	int nr_memnodes;
	struct lv_memnode *memnodes; /* ascending cellid */

	/*
	 * The child of <metadata> in VM_POLICY_NS, serialised as a standalone element that
	 * declares the namespace (vm_policy_parse_xml() reads it as is); NULL when absent.
	 * When several are present (libvirt never writes that) the first is taken.
	 */
	char *metadata_xml;
};

/*
 * Parse a domain XML (len bytes, need not be NUL-terminated) into *out.  0, or -EINVAL with a
 * message naming the element/attribute in err; *out is zeroed (and id -1) on error and owns
 * nothing then.
 */
int lv_domain_parse(const char *xml, size_t len, struct lv_domain *out, char *err, size_t errlen);
/* Free what dom owns (not dom itself); safe on a zeroed struct.  Leaves it empty, id -1. */
void lv_domain_free(struct lv_domain *dom);

/*
 * A libvirt cpuset or nodeset ("0-7,^3", "1, 3-4"): policy/idlist.h's grammar with
 * IDLIST_LIBVIRT ('^N' removes N, items apply left to right, one trailing ',' allowed); flags
 * may add IDLIST_CPUS (messages name CPUs).  Every id must be below limit, and the set must not
 * be empty.  On success *set owns the ascending ids.  -EINVAL with the reason in why, e.g.
 * "range 5-2 runs backwards".
 */
int lv_cpuset_parse(const char *text, int limit, unsigned flags, struct lv_idset *set, char *why,
                    size_t whylen);
void lv_idset_free(struct lv_idset *set);
bool lv_idset_has(const struct lv_idset *set, int id);

const char *lv_mem_mode_name(enum lv_mem_mode mode);

/*
 * The QEMU pid of a running domain, from <root>/run/libvirt/qemu/<name>.pid (root NULL or "/"
 * is this machine).  0, -ENOENT when there is no such file (not a QEMU domain, not running,
 * the test driver), -EINVAL for a malformed file or a name that is not a plain file name.
 */
int lv_domain_pid_read(const char *root, const char *name, int *pid);

/*
 * The policy element in the two spellings libvirt's metadata API needs (both return a
 * malloc'd string, or NULL with a message in err when xml is not one well-formed element):
 *
 * lv_metadata_unqualify(): for virDomainSetMetadata, which puts the element into the
 *   namespace itself and fails ("failed to create a new XML namespace") when the element
 *   already declares the prefix: the element and its descendants in VM_POLICY_NS lose their
 *   namespace; elements in other namespaces are kept as they are.
 * lv_metadata_qualify(): for what virDomainGetMetadata returns (the element with its
 *   namespace stripped): elements without a namespace, or in VM_POLICY_NS, are put into
 *   VM_POLICY_NS with the prefix "vnuma", so vm_policy_parse_xml() accepts the result.
 */
char *lv_metadata_unqualify(const char *xml, char *err, size_t errlen);
char *lv_metadata_qualify(const char *xml, char *err, size_t errlen);

#endif
