/*
 * affinity.c - vCPU thread affinity within the thread's cpuset: the cpuset reader (cgroup v1
 * and v2) and sched_setaffinity/getaffinity.  See actuate.h.
 */
#define _GNU_SOURCE
#include "host/linux/actuate.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/linux/scan.h"
#include "host/linux/sysfs.h"
#include "policy/util.h"

/* Largest cgroup file we read (/proc/<tid>/cgroup lists one line per hierarchy). */
#define ACT_CGROUP_MAX_BYTES ((size_t)64 * 1024)

/* ---- cpuset ----------------------------------------------------------------------------- */

static int
act_idlist_file(const char *root, const char *dir, const char *rel, const char *file, int **cpus,
                int *nr)
{
	char *data;
	size_t len;
	int ret;

	ret = linux_file_read(root, ACT_CGROUP_MAX_BYTES, &data, &len, "%s%s/%s", dir, rel, file);
	if (ret < 0)
		return ret;
	ret = linux_idlist_parse(data, len, LINUX_MAX_CPUS, cpus, nr);
	free(data);
	if (ret == 0 && *nr == 0) /* an unconfigured v1 cpuset: look further */
		ret = -ENOENT;
	return ret;
}

/*
 * From /proc/<tid>/cgroup, the path of tid's v1 cpuset cgroup (*v1 true) or else of its v2
 * cgroup, into path.  -ENOENT when neither appears.
 */
static int
act_cgroup_path(const char *data, char *path, size_t pathlen, bool *v1)
{
	char *copy = xstrdup(data), *save = NULL, *line;
	int ret = -ENOENT;

	for (line = strtok_r(copy, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char *ctl = strchr(line, ':'), *p, *tok, *save2 = NULL;

		if (ctl == NULL || (p = strchr(ctl + 1, ':')) == NULL)
			continue;
		*p++ = '\0';
		if (p[0] != '/' || strstr(p, "/..") != NULL || strlen(p) >= pathlen)
			continue;
		if (strcmp(line, "0:") == 0 && ctl[1] == '\0' && ret == -ENOENT) {
			snprintf(path, pathlen, "%s", p);
			*v1 = false;
			ret = 0;
			continue;
		}
		for (tok = strtok_r(ctl + 1, ",", &save2); tok; tok = strtok_r(NULL, ",", &save2)) {
			if (strcmp(tok, "cpuset") == 0) {
				snprintf(path, pathlen, "%s", p);
				*v1 = true;
				free(copy);
				return 0;
			}
		}
	}
	free(copy);
	return ret;
}

/* Cut the last component off an absolute cgroup path; false once at "/". */
static bool
act_path_up(char *path)
{
	char *slash = strrchr(path, '/');

	if (slash == NULL || strcmp(path, "/") == 0)
		return false;
	if (slash == path)
		slash[1] = '\0';
	else
		*slash = '\0';
	return true;
}

static int
act_cgroup_cpus(const char *root, const char *cg, bool v1, int **cpus, int *nr)
{
	char cur[PATH_MAX];
	int ret;

	snprintf(cur, sizeof(cur), "%s", cg);
	do {
		const char *rel = strcmp(cur, "/") == 0 ? "" : cur;

		if (v1) {
			ret = act_idlist_file(root, "/sys/fs/cgroup/cpuset", rel,
			                      "cpuset.effective_cpus", cpus, nr);
			if (ret != -ENOENT)
				return ret;
			ret = act_idlist_file(root, "/sys/fs/cgroup/cpuset", rel, "cpuset.cpus",
			                      cpus, nr);
		} else {
			ret = act_idlist_file(root, "/sys/fs/cgroup", rel, "cpuset.cpus.effective",
			                      cpus, nr);
		}
		if (ret != -ENOENT)
			return ret;
	} while (act_path_up(cur));
	return -ENOENT;
}

int
linux_cpuset_cpus_read(const char *root, pid_t tid, int **cpus, int *nr)
{
	char cg[PATH_MAX];
	char *data = NULL;
	size_t len;
	bool v1 = false;
	int ret;

	*cpus = NULL;
	*nr = 0;
	ret = linux_file_read(root, ACT_CGROUP_MAX_BYTES, &data, &len, "/proc/%d/cgroup", (int)tid);
	if (ret == -ENOENT)
		return -ESRCH;
	if (ret == 0 && act_cgroup_path(data, cg, sizeof(cg), &v1) == 0) {
		ret = act_cgroup_cpus(root, cg, v1, cpus, nr);
		if (ret == 0)
			goto out;
	}
	ret = act_idlist_file(root, "/sys/devices/system/cpu", "", "online", cpus, nr);
out:
	free(data);
	return ret;
}

/* ---- affinity --------------------------------------------------------------------------- */

static bool
act_ids_has(const int *ids, int nr, int id)
{
	int lo = 0, hi = nr;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (ids[mid] == id)
			return true;
		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

int
linux_affinity_set(pid_t tid, const int *cpus, int nr, char *err, size_t errlen)
{
	size_t setsize = CPU_ALLOC_SIZE(LINUX_MAX_CPUS);
	cpu_set_t *set = NULL;
	int *allowed = NULL, nr_allowed = 0, kept = 0, ret, i;

	if (cpus == NULL || nr <= 0) {
		util_errf(err, errlen, "thread %d: no CPUs given", (int)tid);
		return -EINVAL;
	}
	ret = linux_cpuset_cpus_read(NULL, tid, &allowed, &nr_allowed);
	if (ret == -ESRCH)
		goto out;
	if ((set = CPU_ALLOC(LINUX_MAX_CPUS)) == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	CPU_ZERO_S(setsize, set);
	for (i = 0; i < nr; i++) {
		if (cpus[i] < 0 || cpus[i] >= LINUX_MAX_CPUS) {
			util_errf(err, errlen, "thread %d: CPU %d out of range", (int)tid, cpus[i]);
			ret = -EINVAL;
			goto out;
		}
		if (ret == 0 && !act_ids_has(allowed, nr_allowed, cpus[i]))
			continue; /* outside the cpuset: the kernel would drop it anyway */
		CPU_SET_S((size_t)cpus[i], setsize, set);
		kept++;
	}
	if (kept == 0) {
		util_errf(err, errlen,
		          "thread %d: none of the %d requested CPUs (first %d) is in its "
		          "cpuset (%d CPUs, first %d)",
		          (int)tid, nr, cpus[0], nr_allowed, nr_allowed > 0 ? allowed[0] : -1);
		ret = -EINVAL;
		goto out;
	}
	ret = sched_setaffinity(tid, setsize, set) == 0 ? 0 : -errno;
	if (ret < 0 && ret != -ESRCH)
		util_errf(err, errlen, "thread %d: sched_setaffinity: %s", (int)tid,
		          strerror(-ret));
out:
	if (set != NULL)
		CPU_FREE(set);
	free(allowed);
	return ret;
}

int
linux_affinity_get(pid_t tid, int **cpus, int *nr)
{
	size_t setsize = CPU_ALLOC_SIZE(LINUX_MAX_CPUS);
	cpu_set_t *set = CPU_ALLOC(LINUX_MAX_CPUS);
	int ret = 0, n, c;

	*cpus = NULL;
	*nr = 0;
	if (set == NULL)
		return -ENOMEM;
	CPU_ZERO_S(setsize, set);
	if (sched_getaffinity(tid, setsize, set) != 0) {
		ret = -errno;
		goto out;
	}
	n = CPU_COUNT_S(setsize, set);
	*cpus = xcalloc(n > 0 ? (size_t)n : 1, sizeof(**cpus));
	for (c = 0; c < LINUX_MAX_CPUS && *nr < n; c++)
		if (CPU_ISSET_S((size_t)c, setsize, set))
			(*cpus)[(*nr)++] = c;
out:
	CPU_FREE(set);
	return ret;
}
