/*
 * vm_policy.h - the per-VM policy object (BRIEF section 4.4) and its XML form.
 *
 * One element, <vnuma:policy xmlns:vnuma="http://vnumad.org/schemas/policy/1.0" .../>, with
 * settings as attributes.  The parser reports the first bad attribute by name; the caller keeps
 * the default policy for that VM and shows the error.
 */
#ifndef VNUMAD_POLICY_VM_POLICY_H
#define VNUMAD_POLICY_VM_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VM_POLICY_NS           "http://vnumad.org/schemas/policy/1.0"
#define VM_POLICY_GROUP_MAX    64
#define VM_POLICY_PRIORITY_DEF 50
#define VM_POLICY_PRIORITY_MAX 100
/*
 * Least migration rate a policy may give, per VM (rate) or host-wide (vnumad.conf's
 * migrate_rate), in KiB/s: 2 MiB/s.  Memory moves in 2 MiB huge pages, at most one round's
 * share of the rate per round, so at the default 1 s sample period a lower rate never moves
 * anything; it would be migrate="no" in disguise.
 */
#define VM_POLICY_RATE_MIN_KIB_S 2048

enum vm_policy_mode {
	VM_POLICY_MODE_AUTO = 0, /* vnumad places vCPUs and moves memory (default) */
	VM_POLICY_MODE_ADVISORY, /* computes and reports, never acts */
	VM_POLICY_MODE_MANUAL,   /* hands off: the admin's own pins stand */
	VM_POLICY_MODE_OFF,      /* ignored entirely */
};

enum vm_policy_placement {
	VM_POLICY_PLACEMENT_COMPACT = 0, /* the whole VM on as few nodes as fit (default) */
	VM_POLICY_PLACEMENT_CELLS,       /* one host node per guest vNUMA cell */
};

struct vm_policy {
	enum vm_policy_mode mode;
	uint64_t nodes; /* allowed host node indexes; NODEMASK_ALL by default */
	enum vm_policy_placement placement;
	bool migrate;                    /* may guest memory be moved (default yes) */
	uint64_t rate_kib_s;             /* per-VM migration cap; 0 = no per-VM cap (default) */
	int priority;                    /* 0..100, default 50 */
	char group[VM_POLICY_GROUP_MAX]; /* cross-VM buddy group; "" = none */
};

void vm_policy_init_default(struct vm_policy *pol);

/*
 * Parse one policy element from xml (len bytes, need not be NUL-terminated).  On error return
 * -EINVAL, leave *pol at the defaults and write a message naming the attribute to err.
 */
int vm_policy_parse_xml(const char *xml, size_t len, struct vm_policy *pol, char *err,
                        size_t errlen);

/*
 * Check pol's nodes against a host of nr_nodes nodes (indexes 0..nr_nodes-1), which the parser
 * cannot know: 0, or -EINVAL with a message naming the nodes outside the host and the host's
 * nodes, such as: nodes="7": node 7 is not one of this host's nodes (0-3).  NODEMASK_ALL (the
 * default, no nodes attribute) is always fine.
 */
int vm_policy_check_nodes(const struct vm_policy *pol, int nr_nodes, char *err, size_t errlen);

/* Serialise pol as a policy element (only non-default attributes).  Returns a malloc'd string. */
char *vm_policy_format_xml(const struct vm_policy *pol);

const char *vm_policy_mode_name(enum vm_policy_mode mode);
const char *vm_policy_placement_name(enum vm_policy_placement placement);

#endif
