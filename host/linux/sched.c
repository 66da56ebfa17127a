/*
 * sched.c - /proc/<pid>/task/<tid>/sched (kernel/sched/debug.c, proc_sched_show_task), the
 * first source of per-vCPU NUMA hinting faults.  On 6.1 the file reads:
 *
 *   <comm> (<tid>, #threads: <n>)
 *   -------------------------------------------------------------------
 *   se.exec_start                                :      4800307.512574
 *   se.sum_exec_runtime                          :            0.772006    (ms.ns)
 *   se.nr_migrations                             :                   1
 *   ...                                                                    (many more)
 *   mm->numa_scan_seq                            :                   0    (NUMA balancing only)
 *   numa_pages_migrated                          :                   0
 *   numa_preferred_nid                           :                  -1
 *   total_numa_faults                            :                   0
 *   current_node=0, numa_group_id=0
 *   numa_faults node=0 task_private=0 task_shared=0 group_private=0 group_shared=0
 *   numa_faults node=1 ...                                                 (one per online node)
 *
 * The header is skipped up to the dashed line, since comm may hold anything (even a newline).
 * "key : value" lines we do not know are skipped; so are lines of no known shape.
 */
#include "host/linux/procfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/util.h"

/* Shortest run of dashes we take for the header's end; a 15-byte comm cannot fake it. */
#define SCHED_DASHES_MIN 20
/* Digits after the point of a "%Ld.%06ld" nanosecond value printed in milliseconds. */
#define SCHED_NS_DIGITS 6

enum sched_key {
	SCHED_SUM_EXEC_RUNTIME,
	SCHED_NR_MIGRATIONS,
	SCHED_NUMA_SCAN_SEQ,
	SCHED_NUMA_PAGES_MIGRATED,
	SCHED_NUMA_PREFERRED_NID,
	SCHED_TOTAL_NUMA_FAULTS,
	SCHED_NR_KEYS
};

static const char *const sched_keys[SCHED_NR_KEYS] = {
    [SCHED_SUM_EXEC_RUNTIME] = "se.sum_exec_runtime",
    [SCHED_NR_MIGRATIONS] = "se.nr_migrations",
    [SCHED_NUMA_SCAN_SEQ] = "mm->numa_scan_seq",
    [SCHED_NUMA_PAGES_MIGRATED] = "numa_pages_migrated",
    [SCHED_NUMA_PREFERRED_NID] = "numa_preferred_nid",
    [SCHED_TOTAL_NUMA_FAULTS] = "total_numa_faults",
};

static bool
sched_is_dashes(const struct linux_scan *line)
{
	if (linux_scan_len(line) < SCHED_DASHES_MIN)
		return false;
	for (const char *p = line->p; p < line->end; p++)
		if (*p != '-')
			return false;
	return true;
}

/* "<ms>.<6 digits>" into nanoseconds. */
static int
sched_ms_parse(struct linux_scan *s, uint64_t *ns)
{
	uint64_t ms, frac = 0;

	if (linux_scan_u64(s, &ms) < 0 || !linux_scan_char(s, '.'))
		return -EINVAL;
	for (int i = 0; i < SCHED_NS_DIGITS; i++) {
		if (linux_scan_empty(s) || *s->p < '0' || *s->p > '9')
			return -EINVAL;
		frac = frac * 10 + (uint64_t)(*s->p++ - '0');
	}
	if (__builtin_mul_overflow(ms, (uint64_t)1000000, ns) ||
	    __builtin_add_overflow(*ns, frac, ns))
		return -EINVAL;
	return 0;
}

/* The value of a known key: the whole rest of the line. */
static int
sched_value_parse(struct linux_scan *v, enum sched_key key, struct linux_sched *out)
{
	int ret;

	switch (key) {
	case SCHED_SUM_EXEC_RUNTIME:
		ret = sched_ms_parse(v, &out->sum_exec_runtime_ns);
		break;
	case SCHED_NR_MIGRATIONS:
		ret = linux_scan_u64(v, &out->nr_migrations);
		break;
	case SCHED_NUMA_SCAN_SEQ:
		ret = linux_scan_u64(v, &out->numa_scan_seq);
		break;
	case SCHED_NUMA_PAGES_MIGRATED:
		ret = linux_scan_u64(v, &out->numa_pages_migrated);
		break;
	case SCHED_NUMA_PREFERRED_NID:
		ret = linux_scan_int(v, &out->numa_preferred_nid);
		if (ret == 0 &&
		    (out->numa_preferred_nid < -1 || out->numa_preferred_nid >= LINUX_MAX_NODES))
			ret = -EINVAL;
		break;
	default:
		ret = linux_scan_u64(v, &out->total_numa_faults);
		break;
	}
	linux_scan_blanks(v);
	if (ret == 0 && !linux_scan_empty(v))
		ret = -EINVAL;
	if (ret == 0 && key >= SCHED_NUMA_PAGES_MIGRATED)
		out->present |= LINUX_SCHED_HAS_NUMA;
	return ret;
}

/* "<key> : <value>"; *seen gets bit (1 << key) for the keys we keep. */
static int
sched_keyval_parse(struct linux_scan *line, struct linux_sched *out, unsigned int *seen)
{
	const char *colon = memchr(line->p, ':', linux_scan_len(line));
	struct linux_scan key;

	if (colon == NULL)
		return 0; /* no known shape: skip */
	key.p = line->p;
	key.end = colon;
	linux_scan_trim(&key);
	line->p = colon + 1;
	linux_scan_blanks(line);
	for (int k = 0; k < SCHED_NR_KEYS; k++) {
		if (linux_scan_equals(&key, sched_keys[k])) {
			*seen |= 1u << k;
			return sched_value_parse(line, (enum sched_key)k, out);
		}
	}
	return 0;
}

/* "current_node=X, numa_group_id=Y" (after the "current_node=" prefix). */
static int
sched_node_parse(struct linux_scan *line, struct linux_sched *out)
{
	if (linux_scan_int(line, &out->current_node) < 0 ||
	    !linux_scan_literal(line, ", numa_group_id=") ||
	    linux_scan_int(line, &out->numa_group_id) < 0)
		return -EINVAL;
	linux_scan_blanks(line);
	if (!linux_scan_empty(line) || out->current_node < -1 ||
	    out->current_node >= LINUX_MAX_NODES || out->numa_group_id < 0)
		return -EINVAL;
	out->present |= LINUX_SCHED_HAS_NODE;
	return 0;
}

/* "numa_faults node=N task_private=A ..." (after the "numa_faults node=" prefix). */
static int
sched_faults_parse(struct linux_scan *line, struct linux_sched *out, size_t *cap)
{
	struct linux_sched_faults f;
	int ret;

	if ((ret = linux_scan_id(line, LINUX_MAX_NODES, &f.node)) < 0)
		return ret;
	if (!linux_scan_literal(line, " task_private=") ||
	    linux_scan_u64(line, &f.task_private) < 0 ||
	    !linux_scan_literal(line, " task_shared=") ||
	    linux_scan_u64(line, &f.task_shared) < 0 ||
	    !linux_scan_literal(line, " group_private=") ||
	    linux_scan_u64(line, &f.group_private) < 0 ||
	    !linux_scan_literal(line, " group_shared=") ||
	    linux_scan_u64(line, &f.group_shared) < 0)
		return -EINVAL;
	linux_scan_blanks(line);
	if (!linux_scan_empty(line))
		return -EINVAL;
	if (out->nr_faults > 0 && out->faults[out->nr_faults - 1].node >= f.node)
		return -EINVAL;
	util_array_reserve((void **)&out->faults, cap, (size_t)out->nr_faults + 1,
	                   sizeof(*out->faults));
	out->faults[out->nr_faults++] = f;
	return 0;
}

void
linux_sched_free(struct linux_sched *sched)
{
	if (sched == NULL)
		return;
	free(sched->faults);
	memset(sched, 0, sizeof(*sched));
}

/* The lines after the header. */
static int
sched_body_parse(struct linux_scan *s, struct linux_sched *out)
{
	struct linux_scan line;
	unsigned int seen = 0;
	size_t cap = 0;
	int ret = 0;

	while (ret == 0 && linux_scan_line(s, &line)) {
		if (linux_scan_literal(&line, "numa_faults node="))
			ret = sched_faults_parse(&line, out, &cap);
		else if (linux_scan_literal(&line, "current_node="))
			ret = sched_node_parse(&line, out);
		else
			ret = sched_keyval_parse(&line, out, &seen);
	}
	if (ret == 0 && !(seen & (1u << SCHED_SUM_EXEC_RUNTIME)))
		ret = -EINVAL;
	return ret;
}

int
linux_sched_parse(const char *buf, size_t len, struct linux_sched *out)
{
	struct linux_scan s, line;
	bool header = false;
	int ret;

	memset(out, 0, sizeof(*out));
	out->numa_preferred_nid = -1;
	out->current_node = -1;
	if (len == 0 || buf[len - 1] != '\n')
		return -EINVAL;
	linux_scan_init(&s, buf, len);
	while (!header && linux_scan_line(&s, &line))
		header = sched_is_dashes(&line);
	if (!header)
		return -EINVAL;
	if ((ret = sched_body_parse(&s, out)) < 0) {
		linux_sched_free(out);
		out->numa_preferred_nid = -1;
		out->current_node = -1;
	}
	return ret;
}

int
linux_sched_read(const char *root, int pid, int tid, struct linux_sched *out)
{
	char *data;
	size_t len;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = linux_file_read(root, LINUX_PROCFS_MAX_BYTES, &data, &len, "/proc/%d/task/%d/sched",
	                      pid, tid);
	if (ret < 0)
		return ret;
	ret = linux_sched_parse(data, len, out);
	free(data);
	return ret;
}
