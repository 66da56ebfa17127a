/*
 * unprotect.c - make pages that automatic NUMA balancing has made inaccessible movable again
 * (actuate.h, linux_pages_unprotect).
 *
 * With kernel.numa_balancing=1 the kernel's scanner turns a process's PTEs (and huge-page
 * PMDs) PROT_NONE so that its next access takes a hinting fault.  On Debian's 6.1 such a page
 * is invisible to move_pages(2): it reads as -ENOENT (-EFAULT when THP-mapped), both when we
 * ask where it is and when we ask to move it, until the process touches it again.  An idle
 * guest never does, so its RAM could never be moved (the kernel's own migrate-on-fault never
 * sees it either).  Seen on the emulated 2-node host: 64 MiB of a halted guest, 0 pages moved
 * in 90 s; migrate_pages(2) moved them, but it moves the whole process at once, unpaced.
 *
 * Here each such page that /proc/PID/pagemap says is present is read, one byte, with
 * process_vm_readv(2).  The read goes through get_user_pages, which takes the hinting fault
 * as the process would, so the kernel restores the mapping; the byte is thrown away.  Pages
 * that are not present (never touched, swapped out, userfaultfd-missing) are never touched, so
 * no page is allocated or swapped in.  Needs the same right as move_pages: ptrace read access
 * (root, or CAP_SYS_PTRACE).
 *
 * That fault is the daemon's, and the kernel would treat it as the daemon's access: with the
 * default memory policy, a page never faulted before (a cold one) migrates at once to the node
 * the daemon runs on (mm/mempolicy.c mpol_misplaced; task_numa_fault's first-fault rule), which
 * is seldom the move's target.  Seen on the emulated 4-node host: pages of a VM moving from
 * node 0 to 3 left behind on nodes 1 and 2, and on 2 nodes most cold pages moved by those
 * faults rather than by move_pages.  So the calling thread first takes an explicit MPOL_LOCAL
 * policy: it allocates as before (on its own node), but a policy set with set_mempolicy(2)
 * lacks the kernel's migrate-on-fault flag, so the fault only restores the mapping and the
 * page stays where it is until move_pages moves it, from the nodes the request names and
 * counted as moved.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "host/linux/actuate.h"
#include "policy/util.h"

/* pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst): present, swapped. */
#define UNP_PM_PRESENT (1ull << 63)
/* Remote pieces per process_vm_readv call: the kernel's UIO_MAXIOV. */
#define UNP_IOV_MAX 1024
/* Most pagemap entries read at once (8 bytes each): one 2 MiB huge page's worth of 4 KiB. */
#define UNP_RUN_MAX 512
/* MPOL_LOCAL from <linux/mempolicy.h> (Linux 3.8): allocate on the faulting CPU's node. */
#define UNP_MPOL_LOCAL 4

/*
 * The calling thread's memory policy becomes MPOL_LOCAL (see above), once per thread.  A
 * kernel or sandbox that refuses it leaves the default: pages may then move on the fault.
 */
static void
unp_policy_local(void)
{
	static __thread bool done;

	if (done)
		return;
	done = true;
	(void)syscall(SYS_set_mempolicy, UNP_MPOL_LOCAL, NULL, 0UL);
}

/*
 * Present bits of the run of pages at addrs[0..n) that are one page apart (at most
 * UNP_RUN_MAX), from an open pagemap, into present[]; returns the run's length or -errno.
 */
static int
unp_run_read(int fd, void *const *addrs, size_t n, uint64_t page_bytes, bool *present)
{
	uint64_t entries[UNP_RUN_MAX], first = (uint64_t)(uintptr_t)addrs[0] / page_bytes;
	size_t run = 1;
	ssize_t r;

	while (run < n && run < UNP_RUN_MAX &&
	       (uint64_t)(uintptr_t)addrs[run] / page_bytes == first + run)
		run++;
	r = pread(fd, entries, run * sizeof(entries[0]), (off_t)(first * sizeof(entries[0])));
	if (r < 0)
		return -errno;
	for (size_t i = 0; i < run; i++) /* past the end of the address space: not mapped */
		present[i] = i < (size_t)r / sizeof(entries[0]) && (entries[i] & UNP_PM_PRESENT);
	return (int)run;
}

/* Read one byte of each of the n remote pages; returns how many were read, or -errno. */
static long
unp_touch(pid_t pid, const struct iovec *remote, int n)
{
	char sink[UNP_IOV_MAX];
	struct iovec local = {sink, (size_t)n};
	long done = 0;

	while (done < n) {
		ssize_t r;

		local.iov_len = (size_t)(n - done);
		r = process_vm_readv(pid, &local, 1, remote + done, (unsigned long)(n - done), 0);
		if (r < 0 && errno != EFAULT)
			return done > 0 ? done : -errno;
		if (r <= 0)
			done++; /* this page went away meanwhile: skip it */
		else
			done += r; /* one byte per page; a short read stops at a failing page */
	}
	return done;
}

/* Touch the nr gathered pages; adds the count to *touched.  0 or -errno. */
static int
unp_flush(pid_t pid, const struct iovec *remote, int *nr, int *touched)
{
	long r = *nr > 0 ? unp_touch(pid, remote, *nr) : 0;

	*nr = 0;
	if (r < 0)
		return (int)r;
	*touched += (int)r;
	return 0;
}

int
linux_pages_unprotect(pid_t pid, void *const *addrs, size_t n, uint64_t page_bytes)
{
	char path[64];
	struct iovec *remote = NULL;
	bool present[UNP_RUN_MAX];
	int fd, nr = 0, touched = 0, ret = 0;

	unp_policy_local();
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	remote = xcalloc(UNP_IOV_MAX, sizeof(*remote));
	for (size_t i = 0; i < n;) {
		int run = unp_run_read(fd, addrs + i, n - i, page_bytes, present);

		if (run < 0) {
			ret = run;
			goto out;
		}
		for (int j = 0; j < run; j++) {
			if (!present[j])
				continue;
			if (nr == UNP_IOV_MAX && (ret = unp_flush(pid, remote, &nr, &touched)) < 0)
				goto out;
			remote[nr++] = (struct iovec){addrs[i + (size_t)j], 1};
		}
		i += (size_t)run;
	}
	ret = unp_flush(pid, remote, &nr, &touched);
out:
	free(remote);
	close(fd);
	return ret < 0 && touched == 0 ? ret : touched;
}
