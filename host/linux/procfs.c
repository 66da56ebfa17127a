/*
 * procfs.c - small /proc readers: /proc/vmstat's NUMA counters, kernel.numa_balancing, and a
 * thread's stat, status and comm, and a process's cmdline (formats: mm/vmstat.c,
 * fs/proc/array.c, fs/proc/base.c).  numa_maps and sched have files of their own.
 */
#include "host/linux/procfs.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "policy/util.h"

/* Fields of /proc/<pid>/task/<tid>/stat we read (proc(5) numbering, 1-based). */
#define STAT_FIELD_STATE       3
#define STAT_FIELD_UTIME       14
#define STAT_FIELD_STIME       15
#define STAT_FIELD_NUM_THREADS 20
#define STAT_FIELD_STARTTIME   22
#define STAT_FIELD_PROCESSOR   39

/* Where each kept vmstat counter goes. */
static const struct {
	const char *name;
	size_t offset;
} vmstat_keys[LINUX_VMSTAT_NR_KEYS] = {
    [LINUX_VMSTAT_NUMA_HIT] = {"numa_hit", offsetof(struct linux_vmstat, numa_hit)},
    [LINUX_VMSTAT_NUMA_MISS] = {"numa_miss", offsetof(struct linux_vmstat, numa_miss)},
    [LINUX_VMSTAT_NUMA_FOREIGN] = {"numa_foreign", offsetof(struct linux_vmstat, numa_foreign)},
    [LINUX_VMSTAT_NUMA_INTERLEAVE] = {"numa_interleave",
                                      offsetof(struct linux_vmstat, numa_interleave)},
    [LINUX_VMSTAT_NUMA_LOCAL] = {"numa_local", offsetof(struct linux_vmstat, numa_local)},
    [LINUX_VMSTAT_NUMA_OTHER] = {"numa_other", offsetof(struct linux_vmstat, numa_other)},
    [LINUX_VMSTAT_NUMA_PTE_UPDATES] = {"numa_pte_updates",
                                       offsetof(struct linux_vmstat, numa_pte_updates)},
    [LINUX_VMSTAT_NUMA_HUGE_PTE_UPDATES] = {"numa_huge_pte_updates",
                                            offsetof(struct linux_vmstat, numa_huge_pte_updates)},
    [LINUX_VMSTAT_NUMA_HINT_FAULTS] = {"numa_hint_faults",
                                       offsetof(struct linux_vmstat, numa_hint_faults)},
    [LINUX_VMSTAT_NUMA_HINT_FAULTS_LOCAL] = {"numa_hint_faults_local",
                                             offsetof(struct linux_vmstat, numa_hint_faults_local)},
    [LINUX_VMSTAT_NUMA_PAGES_MIGRATED] = {"numa_pages_migrated",
                                          offsetof(struct linux_vmstat, numa_pages_migrated)},
    [LINUX_VMSTAT_PGMIGRATE_SUCCESS] = {"pgmigrate_success",
                                        offsetof(struct linux_vmstat, pgmigrate_success)},
    [LINUX_VMSTAT_PGMIGRATE_FAIL] = {"pgmigrate_fail",
                                     offsetof(struct linux_vmstat, pgmigrate_fail)},
};

/* Read <root>/proc/<path> with the default cap. */
#define PROCFS_READ(root, data, len, ...)                                                          \
	linux_file_read(root, LINUX_PROCFS_MAX_BYTES, data, len, __VA_ARGS__)

/* Every line is "<name> <unsigned>": a garbled or cut file is noticed. */
static int
vmstat_line_parse(struct linux_scan *line, struct linux_vmstat *out)
{
	struct linux_scan name;
	uint64_t value;

	if (!linux_scan_token(line, &name) || !linux_scan_char(line, ' ') ||
	    linux_scan_u64(line, &value) < 0 || !linux_scan_empty(line))
		return -EINVAL;
	for (int k = 0; k < LINUX_VMSTAT_NR_KEYS; k++) {
		if (linux_scan_equals(&name, vmstat_keys[k].name)) {
			*(uint64_t *)((char *)out + vmstat_keys[k].offset) = value;
			out->present |= 1u << k;
		}
	}
	return 0;
}

int
linux_vmstat_parse(const char *buf, size_t len, struct linux_vmstat *out)
{
	struct linux_scan s, line;
	int ret;

	memset(out, 0, sizeof(*out));
	if (len == 0 || buf[len - 1] != '\n')
		return -EINVAL;
	linux_scan_init(&s, buf, len);
	while (linux_scan_line(&s, &line)) {
		if ((ret = vmstat_line_parse(&line, out)) < 0) {
			memset(out, 0, sizeof(*out));
			return ret;
		}
	}
	return 0;
}

int
linux_vmstat_read(const char *root, struct linux_vmstat *out)
{
	char *data;
	size_t len;
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = PROCFS_READ(root, &data, &len, "/proc/vmstat")) < 0)
		return ret;
	ret = linux_vmstat_parse(data, len, out);
	free(data);
	return ret;
}

int
linux_numa_balancing_parse(const char *buf, size_t len, int *mode)
{
	struct linux_scan s;
	int v;

	*mode = 0;
	linux_scan_init(&s, buf, len);
	linux_scan_trim(&s);
	if (linux_scan_id(&s, 4, &v) < 0 || !linux_scan_empty(&s))
		return -EINVAL;
	*mode = v;
	return 0;
}

int
linux_numa_balancing_read(const char *root, int *mode)
{
	char *data;
	size_t len;
	int ret;

	*mode = 0;
	if ((ret = PROCFS_READ(root, &data, &len, "/proc/sys/kernel/numa_balancing")) < 0)
		return ret;
	ret = linux_numa_balancing_parse(data, len, mode);
	free(data);
	return ret;
}

/* One numeric stat field (after the state); fields we do not keep need only look numeric. */
static int
stat_field_parse(struct linux_scan *tok, int field, struct linux_task_stat *out)
{
	switch (field) {
	case STAT_FIELD_UTIME:
		return linux_scan_u64(tok, &out->utime_ticks);
	case STAT_FIELD_STIME:
		return linux_scan_u64(tok, &out->stime_ticks);
	case STAT_FIELD_STARTTIME:
		return linux_scan_u64(tok, &out->starttime_ticks);
	case STAT_FIELD_NUM_THREADS:
		return linux_scan_id(tok, INT_MAX, &out->num_threads) < 0 ? -EINVAL : 0;
	case STAT_FIELD_PROCESSOR:
		return linux_scan_id(tok, LINUX_MAX_CPUS, &out->processor);
	default:
		linux_scan_char(tok, '-');
		while (!linux_scan_empty(tok) && *tok->p >= '0' && *tok->p <= '9')
			tok->p++;
		return 0;
	}
}

/* The fields after ") ": state, then numbers separated by single blanks. */
static int
stat_fields_parse(struct linux_scan *s, struct linux_task_stat *out)
{
	struct linux_scan tok;
	int field = STAT_FIELD_STATE, ret;

	if (!linux_scan_token(s, &tok) || linux_scan_len(&tok) != 1)
		return -EINVAL;
	out->state = *tok.p;
	while (linux_scan_char(s, ' ')) {
		field++;
		if (!linux_scan_token(s, &tok))
			return -EINVAL;
		if ((ret = stat_field_parse(&tok, field, out)) < 0)
			return ret;
		if (!linux_scan_empty(&tok))
			return -EINVAL;
	}
	linux_scan_trim(s);
	if (!linux_scan_empty(s) || field < STAT_FIELD_PROCESSOR)
		return -EINVAL;
	return 0;
}

int
linux_task_stat_parse(const char *buf, size_t len, struct linux_task_stat *out)
{
	struct linux_scan s;
	const char *close = NULL;
	size_t n;

	memset(out, 0, sizeof(*out));
	linux_scan_init(&s, buf, len);
	if (linux_scan_id(&s, INT_MAX, &out->tid) < 0 || out->tid == 0 ||
	    !linux_scan_literal(&s, " ("))
		goto bad;
	for (const char *p = s.p; p < s.end; p++)
		if (*p == ')')
			close = p;
	if (close == NULL)
		goto bad;
	n = (size_t)(close - s.p);
	n = n < LINUX_COMM_MAX - 1 ? n : LINUX_COMM_MAX - 1;
	memcpy(out->comm, s.p, n);
	out->comm[n] = '\0';
	s.p = close + 1;
	if (!linux_scan_char(&s, ' ') || stat_fields_parse(&s, out) < 0)
		goto bad;
	return 0;
bad:
	memset(out, 0, sizeof(*out));
	return -EINVAL;
}

int
linux_task_stat_read(const char *root, int pid, int tid, struct linux_task_stat *out)
{
	char *data;
	size_t len;
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = PROCFS_READ(root, &data, &len, "/proc/%d/task/%d/stat", pid, tid)) < 0)
		return ret;
	ret = linux_task_stat_parse(data, len, out);
	free(data);
	return ret;
}

void
linux_task_status_free(struct linux_task_status *status)
{
	if (status == NULL)
		return;
	free(status->cpus_allowed);
	free(status->mems_allowed);
	memset(status, 0, sizeof(*status));
}

/* Status keys we keep; bit (1u << key) in the seen mask. */
enum status_key { STATUS_TGID, STATUS_PID, STATUS_CPUS, STATUS_MEMS, STATUS_VMPIN, STATUS_NR_KEYS };

static const char *const status_keys[STATUS_NR_KEYS] = {
    [STATUS_TGID] = "Tgid",
    [STATUS_PID] = "Pid",
    [STATUS_CPUS] = "Cpus_allowed_list",
    [STATUS_MEMS] = "Mems_allowed_list",
    [STATUS_VMPIN] = "VmPin",
};

static int
status_value_parse(struct linux_scan *v, enum status_key key, struct linux_task_status *out)
{
	int ret;

	switch (key) {
	case STATUS_TGID:
	case STATUS_PID:
		ret = linux_scan_id(v, INT_MAX, key == STATUS_TGID ? &out->tgid : &out->pid);
		linux_scan_trim(v);
		return ret < 0 || !linux_scan_empty(v) ? -EINVAL : 0;
	case STATUS_CPUS:
		return linux_scan_idlist(v, LINUX_MAX_CPUS, &out->cpus_allowed,
		                         &out->nr_cpus_allowed);
	case STATUS_VMPIN: /* "VmPin:\t    2048 kB" (fs/proc/task_mmu.c, task_mem) */
		if (linux_scan_u64(v, &out->vm_pin_kib) < 0 || !linux_scan_literal(v, " kB"))
			return -EINVAL;
		linux_scan_trim(v);
		return linux_scan_empty(v) ? 0 : -EINVAL;
	default:
		out->has_mems_allowed = true;
		return linux_scan_idlist(v, LINUX_MAX_NODES, &out->mems_allowed,
		                         &out->nr_mems_allowed);
	}
}

/* "Key:\tvalue"; a kept key twice is -EINVAL. */
static int
status_line_parse(struct linux_scan *line, struct linux_task_status *out, unsigned int *seen)
{
	const char *colon = memchr(line->p, ':', linux_scan_len(line));
	struct linux_scan key;

	if (colon == NULL)
		return 0;
	key.p = line->p;
	key.end = colon;
	line->p = colon + 1;
	linux_scan_blanks(line);
	for (int k = 0; k < STATUS_NR_KEYS; k++) {
		if (!linux_scan_equals(&key, status_keys[k]))
			continue;
		if (*seen & (1u << k))
			return -EINVAL;
		*seen |= 1u << k;
		return status_value_parse(line, (enum status_key)k, out);
	}
	return 0;
}

int
linux_task_status_parse(const char *buf, size_t len, struct linux_task_status *out)
{
	const unsigned int required =
	    (1u << STATUS_TGID) | (1u << STATUS_PID) | (1u << STATUS_CPUS);
	struct linux_scan s, line;
	unsigned int seen = 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (len == 0 || buf[len - 1] != '\n')
		return -EINVAL;
	linux_scan_init(&s, buf, len);
	while (ret == 0 && linux_scan_line(&s, &line))
		ret = status_line_parse(&line, out, &seen);
	if (ret == 0 && ((seen & required) != required || out->tgid == 0 || out->pid == 0))
		ret = -EINVAL;
	if (ret < 0)
		linux_task_status_free(out);
	return ret;
}

int
linux_task_status_read(const char *root, int pid, int tid, struct linux_task_status *out)
{
	char *data;
	size_t len;
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = PROCFS_READ(root, &data, &len, "/proc/%d/task/%d/status", pid, tid)) < 0)
		return ret;
	ret = linux_task_status_parse(data, len, out);
	free(data);
	return ret;
}

int
linux_comm_parse(const char *buf, size_t len, char comm[LINUX_COMM_MAX])
{
	comm[0] = '\0';
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len >= LINUX_COMM_MAX)
		return -EFBIG;
	if (memchr(buf, '\0', len) != NULL)
		return -EINVAL;
	memcpy(comm, buf, len);
	comm[len] = '\0';
	return 0;
}

int
linux_comm_read(const char *root, int pid, int tid, char comm[LINUX_COMM_MAX])
{
	char *data;
	size_t len;
	int ret;

	comm[0] = '\0';
	if ((ret = PROCFS_READ(root, &data, &len, "/proc/%d/task/%d/comm", pid, tid)) < 0)
		return ret;
	ret = linux_comm_parse(data, len, comm);
	free(data);
	return ret;
}

void
linux_cmdline_free(struct linux_cmdline *cmdline)
{
	if (cmdline == NULL)
		return;
	for (int i = 0; i < cmdline->argc; i++)
		free(cmdline->argv[i]);
	free(cmdline->argv);
	memset(cmdline, 0, sizeof(*cmdline));
}

int
linux_cmdline_parse(const char *buf, size_t len, struct linux_cmdline *out)
{
	size_t argc = 0, pos = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < len; i++)
		argc += buf[i] == '\0';
	if (len > 0 && buf[len - 1] != '\0')
		argc++; /* the last argument was overwritten without its NUL (setproctitle) */
	if (argc > LINUX_CMDLINE_MAX_ARGS)
		return -EFBIG;
	out->argv = xcalloc(argc + 1, sizeof(*out->argv));
	for (; (size_t)out->argc < argc; out->argc++) {
		const char *nul = memchr(buf + pos, '\0', len - pos);
		size_t n = nul != NULL ? (size_t)(nul - (buf + pos)) : len - pos;
		char *arg = xmalloc(n + 1);

		memcpy(arg, buf + pos, n);
		arg[n] = '\0';
		out->argv[out->argc] = arg;
		pos += n + 1;
	}
	return 0;
}

int
linux_cmdline_read(const char *root, int pid, struct linux_cmdline *out)
{
	char *data;
	size_t len;
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = PROCFS_READ(root, &data, &len, "/proc/%d/cmdline", pid)) < 0)
		return ret;
	ret = linux_cmdline_parse(data, len, out);
	free(data);
	return ret;
}
