/*
 * pfile.h - /proc files kept open between rounds and re-read with pread(2), so that a file
 * read every round (a vCPU thread's stat, status and sched, a QEMU process's stat) costs one
 * read call instead of a path lookup, an open, two reads and a close.
 *
 * A kept fd refers to the task it was opened on, not to its number: once that task has gone,
 * pread answers -ESRCH (even if the pid was reused meanwhile), which reads here as -ENOENT,
 * "gone", and closes the fd.  Fds are kept only while a pool has room (struct
 * linux_pfile_pool, bounded by the caller); beyond it a file is opened, read and closed each
 * time, as before.  Under a fixture root the files are regular files and are kept open the
 * same way (a test that rewrites one in place sees the new text).
 */
#ifndef VNUMAD_HOST_LINUX_PFILE_H
#define VNUMAD_HOST_LINUX_PFILE_H

#include <stddef.h>

/*
 * Most fds one pool keeps open, whatever RLIMIT_NOFILE allows.  Default 4096: three per vCPU
 * thread and one per VM cover about 1300 vCPUs, more than a host runs; a pool also keeps no
 * more than half the soft RLIMIT_NOFILE (linux_pfile_pool_init), so the daemon's sockets and
 * its other files always have room.
 */
#define LINUX_PFILE_POOL_MAX 4096

/* Room for kept fds; one per host. */
struct linux_pfile_pool {
	int nr_open;
	int max_open;
};

/* One file, kept open or not; fd -1 when closed.  Zero it with linux_pfile_init. */
struct linux_pfile {
	int fd;
};

/* The files of a vCPU thread read every round (snapshot.c), kept open together. */
enum linux_task_file {
	LINUX_TASK_FILE_STAT,
	LINUX_TASK_FILE_STATUS,
	LINUX_TASK_FILE_SCHED,
	LINUX_TASK_NR_FILES
};

struct linux_task_files {
	struct linux_pfile_pool *pool; /* not owned */
	struct linux_pfile files[LINUX_TASK_NR_FILES];
};

/* max_open < 0: LINUX_PFILE_POOL_MAX, capped at half the soft RLIMIT_NOFILE; 0 keeps none. */
void linux_pfile_pool_init(struct linux_pfile_pool *pool, int max_open);
void linux_pfile_init(struct linux_pfile *f);
/*
 * Read <root><path> (as linux_file_read, scan.h) through f: pread on its kept fd, else open,
 * read, and keep the fd if pool (may be NULL: keep none) has room.  -ENOENT when the file or
 * its task has gone (the fd is closed then); -errno otherwise.
 */
int linux_pfile_read(struct linux_pfile *f, struct linux_pfile_pool *pool, const char *root,
                     size_t max_bytes, char **data, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
void linux_pfile_close(struct linux_pfile *f, struct linux_pfile_pool *pool);

/* A new set of closed files drawing on pool; free with linux_task_files_free (NULL-safe). */
struct linux_task_files *linux_task_files_new(struct linux_pfile_pool *pool);
void linux_task_files_free(struct linux_task_files *tf);
/*
 * Read /proc/<pid>/task/<tid>/<which> under root through tf (NULL: by path, as
 * linux_file_read), at most LINUX_PROCFS_MAX_BYTES; as linux_pfile_read.
 */
int linux_task_file_read(struct linux_task_files *tf, const char *root, int pid, int tid,
                         enum linux_task_file which, char **data, size_t *len);

#endif
