/*
 * pfile.c - /proc files kept open between rounds (pfile.h).
 */
#include "host/linux/pfile.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "host/fileio.h"
#include "host/linux/procfs.h"
#include "policy/util.h"

void
linux_pfile_pool_init(struct linux_pfile_pool *pool, int max_open)
{
	struct rlimit rl;

	pool->nr_open = 0;
	if (max_open >= 0) {
		pool->max_open = max_open;
		return;
	}
	pool->max_open = LINUX_PFILE_POOL_MAX;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 2 < (rlim_t)pool->max_open)
		pool->max_open = (int)(rl.rlim_cur / 2);
}

void
linux_pfile_init(struct linux_pfile *f)
{
	f->fd = -1;
}

void
linux_pfile_close(struct linux_pfile *f, struct linux_pfile_pool *pool)
{
	if (f->fd < 0)
		return;
	close(f->fd);
	f->fd = -1;
	if (pool != NULL && pool->nr_open > 0)
		pool->nr_open--;
}

/* <root><fmt...> into path; -ENAMETOOLONG when it does not fit. */
static int
pfile_path(char path[PATH_MAX], const char *root, const char *fmt, va_list ap)
{
	size_t rlen = root != NULL ? strlen(root) : 0;
	int n;

	while (rlen > 0 && root[rlen - 1] == '/') /* "/" and "" both mean the real root */
		rlen--;
	if (rlen >= PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(path, root != NULL ? root : "", rlen);
	path[rlen] = '\0';
	n = vsnprintf(path + rlen, PATH_MAX - rlen, fmt, ap);
	return n < 0 || (size_t)n >= PATH_MAX - rlen ? -ENAMETOOLONG : 0;
}

int
linux_pfile_read(struct linux_pfile *f, struct linux_pfile_pool *pool, const char *root,
                 size_t max_bytes, char **data, size_t *len, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	int ret;

	*data = NULL;
	*len = 0;
	if (f->fd >= 0) {
		ret = fileio_pread(f->fd, max_bytes, data, len);
		if (ret == 0)
			return 0;
		linux_pfile_close(f, pool); /* gone, or not to be trusted again */
		return ret == -ESRCH ? -ENOENT : ret;
	}
	va_start(ap, fmt);
	ret = pfile_path(path, root, fmt, ap);
	va_end(ap);
	if (ret < 0)
		return ret;
	if ((ret = fileio_open(path)) < 0)
		return ret == -ESRCH ? -ENOENT : ret;
	f->fd = ret;
	if (pool != NULL)
		pool->nr_open++;
	ret = fileio_pread(f->fd, max_bytes, data, len);
	if (ret < 0 || pool == NULL || pool->nr_open > pool->max_open)
		linux_pfile_close(f, pool);
	return ret == -ESRCH ? -ENOENT : ret;
}

struct linux_task_files *
linux_task_files_new(struct linux_pfile_pool *pool)
{
	struct linux_task_files *tf = xcalloc(1, sizeof(*tf));

	tf->pool = pool;
	for (int i = 0; i < LINUX_TASK_NR_FILES; i++)
		linux_pfile_init(&tf->files[i]);
	return tf;
}

void
linux_task_files_free(struct linux_task_files *tf)
{
	if (tf == NULL)
		return;
	for (int i = 0; i < LINUX_TASK_NR_FILES; i++)
		linux_pfile_close(&tf->files[i], tf->pool);
	free(tf);
}

int
linux_task_file_read(struct linux_task_files *tf, const char *root, int pid, int tid,
                     enum linux_task_file which, char **data, size_t *len)
{
	static const char *const names[LINUX_TASK_NR_FILES] = {
	    [LINUX_TASK_FILE_STAT] = "stat",
	    [LINUX_TASK_FILE_STATUS] = "status",
	    [LINUX_TASK_FILE_SCHED] = "sched",
	};

	if (tf == NULL)
		return linux_file_read(root, LINUX_PROCFS_MAX_BYTES, data, len,
		                       "/proc/%d/task/%d/%s", pid, tid, names[which]);
	return linux_pfile_read(&tf->files[which], tf->pool, root, LINUX_PROCFS_MAX_BYTES, data,
	                        len, "/proc/%d/task/%d/%s", pid, tid, names[which]);
}
