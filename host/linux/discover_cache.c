/*
 * discover_cache.c - QEMU discovery kept across rounds (discover_cache.h).
 */
#include "host/linux/discover_cache.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/linux/pfile.h"
#include "host/linux/procfs.h"
#include "host/linux/ram_layout.h"
#include "policy/util.h"

/* One thread of a QEMU process. */
struct dc_thread {
	int tid;
	int index;                      /* n of "CPU n/KVM"; -1: not a vCPU (or not judged yet) */
	bool judged;                    /* false: its comm is read again next scan */
	double first_seen_s;            /* when a scan first saw it */
	struct linux_task_files *files; /* a vCPU's kept-open files; owned */
};

/* One process of <root>/proc. */
struct dc_proc {
	int pid;
	double first_seen_s; /* when a scan first listed it (kept across rescans) */
	bool judged;         /* its verdict (qemu) is known */
	bool qemu;
	bool have_start; /* start_ticks was read */
	uint64_t start_ticks;
	struct linux_pfile stat; /* /proc/<pid>/stat, QEMU only */
	char comm[LINUX_COMM_MAX];
	/* QEMU: what its command line gave (pid, name, mem_mib, numa); no vCPUs, no RAM. */
	struct linux_vm info;
	struct dc_thread *threads; /* ascending tid; owned */
	size_t nr_threads;
};

struct linux_discover_cache {
	struct dc_proc *procs; /* ascending pid; owned */
	size_t nr_procs;
	bool scanned;     /* a full scan started at scanned_s */
	double scanned_s; /* when the cache was last dropped */
	struct linux_pfile_pool pool;
	struct linux_discover_opts opts; /* which VMs to walk (zero: every one) */
	bool listed;       /* the process set has been read from a listing since the last drop */
	uint64_t listings; /* scans that read the listing */
};

void
linux_proc_delta_add(struct linux_proc_delta *d, int pid, enum linux_proc_event_kind kind)
{
	if (d->nr >= LINUX_PROC_DELTA_MAX_EVENTS) {
		d->full = true;
		return;
	}
	util_array_reserve((void **)&d->events, &d->cap, d->nr + 1, sizeof(*d->events));
	d->events[d->nr++] = (struct linux_proc_event){pid, kind};
}

void
linux_proc_delta_clear(struct linux_proc_delta *d)
{
	d->nr = 0;
	d->full = false;
}

void
linux_proc_delta_free(struct linux_proc_delta *d)
{
	free(d->events);
	memset(d, 0, sizeof(*d));
}

struct linux_discover_cache *
linux_discover_cache_new(int max_fds)
{
	struct linux_discover_cache *c = xcalloc(1, sizeof(*c));

	linux_pfile_pool_init(&c->pool, max_fds);
	return c;
}

void
linux_discover_cache_opts_set(struct linux_discover_cache *cache,
                              const struct linux_discover_opts *opts)
{
	cache->opts = opts != NULL ? *opts : (struct linux_discover_opts){0};
}

static void
dc_threads_free(struct dc_thread *threads, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		linux_task_files_free(threads[i].files);
	free(threads);
}

/* Forget what is known of p but its pid and when it was first seen. */
static void
dc_proc_reset(struct linux_discover_cache *c, struct dc_proc *p)
{
	int pid = p->pid;
	double first_seen_s = p->first_seen_s;

	linux_pfile_close(&p->stat, &c->pool);
	dc_threads_free(p->threads, p->nr_threads);
	linux_vm_clear(&p->info);
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->first_seen_s = first_seen_s;
	linux_pfile_init(&p->stat);
}

static void
dc_procs_drop(struct linux_discover_cache *c)
{
	for (size_t i = 0; i < c->nr_procs; i++)
		dc_proc_reset(c, &c->procs[i]);
	free(c->procs);
	c->procs = NULL;
	c->nr_procs = 0;
}

void
linux_discover_cache_free(struct linux_discover_cache *cache)
{
	if (cache == NULL)
		return;
	dc_procs_drop(cache);
	free(cache);
}

int
linux_discover_cache_fds(const struct linux_discover_cache *cache)
{
	return cache->pool.nr_open;
}

static int
dc_int_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

/* The numeric entries of <root><sub>, ascending, malloc'd.  0 or -errno of opendir. */
static int
dc_ids_read(const char *root, const char *sub, int **ids, size_t *nr)
{
	DIR *dir = linux_proc_dir_open(root, sub);
	struct dirent *de;
	size_t cap = 0;

	*ids = NULL;
	*nr = 0;
	if (dir == NULL)
		return -errno;
	while ((de = readdir(dir)) != NULL) {
		int id = linux_dirent_pid(de->d_name);

		if (id < 0)
			continue;
		util_array_reserve((void **)ids, &cap, *nr + 1, sizeof(**ids));
		(*ids)[(*nr)++] = id;
	}
	closedir(dir);
	if (*nr > 1)
		qsort(*ids, *nr, sizeof(**ids), dc_int_cmp);
	return 0;
}

/* The processes of pids[0..nr) (ascending): known ones kept, new ones unjudged, gone ones
 * forgotten. */
static void
dc_procs_merge(struct linux_discover_cache *c, const int *pids, size_t nr, double now_s)
{
	struct dc_proc *next = xcalloc(nr + 1, sizeof(*next));
	size_t o = 0;

	for (size_t i = 0; i < nr; i++) {
		while (o < c->nr_procs && c->procs[o].pid < pids[i])
			dc_proc_reset(c, &c->procs[o++]); /* gone */
		if (o < c->nr_procs && c->procs[o].pid == pids[i]) {
			next[i] = c->procs[o++];
			continue;
		}
		next[i].pid = pids[i];
		next[i].first_seen_s = now_s;
		linux_pfile_init(&next[i].stat);
	}
	while (o < c->nr_procs)
		dc_proc_reset(c, &c->procs[o++]);
	free(c->procs);
	c->procs = next;
	c->nr_procs = nr;
}

/* Events of one pid, in the order they came (for dc_delta_pids). */
struct dc_pid_event {
	int pid;
	size_t order;
	enum linux_proc_event_kind kind;
};

static int
dc_pid_event_cmp(const void *a, const void *b)
{
	const struct dc_pid_event *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * The pids the cache knows with delta applied, ascending, malloc'd into *pids; *changed
 * (malloc'd, ascending) the pids to judge again: any that was forked, exec()ed or renamed in
 * delta (a pid forked anew was reused).  A pid's last event says whether it is there.
 */
static void
dc_delta_pids(const struct linux_discover_cache *c, const struct linux_proc_delta *delta,
              int **pids, size_t *nr, int **changed, size_t *nr_changed)
{
	struct dc_pid_event *ev = xcalloc(delta->nr + 1, sizeof(*ev));
	size_t o = 0, e = 0;

	for (size_t i = 0; i < delta->nr; i++)
		ev[i] = (struct dc_pid_event){delta->events[i].pid, i, delta->events[i].kind};
	if (delta->nr > 1)
		qsort(ev, delta->nr, sizeof(*ev), dc_pid_event_cmp);
	*pids = xcalloc(c->nr_procs + delta->nr + 1, sizeof(**pids));
	*changed = xcalloc(delta->nr + 1, sizeof(**changed));
	*nr = 0;
	*nr_changed = 0;
	while (o < c->nr_procs || e < delta->nr) {
		int pid = e >= delta->nr || (o < c->nr_procs && c->procs[o].pid < ev[e].pid)
		              ? c->procs[o].pid
		              : ev[e].pid;
		bool there = o < c->nr_procs && c->procs[o].pid == pid, judge = false;

		if (there)
			o++;
		for (; e < delta->nr && ev[e].pid == pid; e++) {
			there = ev[e].kind != LINUX_PROC_EVENT_EXIT;
			judge = judge || ev[e].kind != LINUX_PROC_EVENT_EXIT;
		}
		if (!there)
			continue;
		(*pids)[(*nr)++] = pid;
		if (judge)
			(*changed)[(*nr_changed)++] = pid;
	}
	free(ev);
}

/* Field 22 of /proc/<pid>/stat through p's kept fd.  0 or -errno (-ENOENT: gone). */
static int
dc_start_read(struct linux_discover_cache *c, const char *root, struct dc_proc *p, uint64_t *ticks)
{
	struct linux_task_stat st;
	char *data;
	size_t len;
	int ret = linux_pfile_read(&p->stat, &c->pool, root, LINUX_PROCFS_MAX_BYTES, &data, &len,
	                           "/proc/%d/stat", p->pid);

	if (ret < 0)
		return ret;
	ret = linux_task_stat_parse(data, len, &st);
	free(data);
	if (ret == 0)
		*ticks = st.starttime_ticks;
	return ret;
}

/*
 * Judge a new (or reset) process.  1: QEMU, its command line applied; 0: not QEMU; -1: gone
 * or malformed (counted into skips), left unjudged for the next scan.
 */
static int
dc_proc_judge(struct linux_discover_cache *c, const char *root, struct dc_proc *p,
              struct linux_discover_skips *skips)
{
	struct linux_cmdline cmd;
	const char *what;
	int ret = linux_vm_identify(root, p->pid, p->comm, &cmd, &what);

	if (ret < 0) {
		if (ret != -ENOENT)
			linux_discover_skip_note(skips, p->pid, what, ret);
		linux_cmdline_free(&cmd);
		return -1;
	}
	p->judged = true;
	p->qemu = ret > 0;
	if (p->qemu) {
		p->info.pid = p->pid;
		linux_vm_cmdline_apply(&p->info, &cmd);
		/* fixture trees may have no /proc/<pid>/stat: then reuse is not told apart */
		p->have_start = dc_start_read(c, root, p, &p->start_ticks) == 0;
	}
	linux_cmdline_free(&cmd);
	return p->qemu;
}

/*
 * A known QEMU process: the same one as before, or has its pid been reused (a new start
 * time, or its kept stat fd answering that its task has gone)?  Then read it afresh.
 */
static void
dc_proc_recheck(struct linux_discover_cache *c, const char *root, struct dc_proc *p)
{
	uint64_t ticks = 0;
	int ret = dc_start_read(c, root, p, &ticks);

	if (ret == 0 && !p->have_start) {
		p->have_start = true;
		p->start_ticks = ticks;
		return;
	}
	if ((ret == 0 && ticks != p->start_ticks) || (ret == -ENOENT && p->have_start))
		dc_proc_reset(c, p);
}

/*
 * A young process judged not QEMU: has it exec()ed since (its comm changed)?  Then judge it
 * again.  See LINUX_DISCOVER_YOUNG_S.
 */
static void
dc_proc_young_recheck(struct linux_discover_cache *c, const char *root, struct dc_proc *p,
                      double now_s)
{
	char comm[LINUX_COMM_MAX];

	if (now_s - p->first_seen_s >= LINUX_DISCOVER_YOUNG_S || now_s < p->first_seen_s)
		return;
	if (linux_comm_read(root, p->pid, p->pid, comm) == 0 && strcmp(comm, p->comm) != 0)
		dc_proc_reset(c, p);
}

/* Judge thread t of p by its comm (see LINUX_DISCOVER_NAME_WAIT_S).  -ENOENT: gone. */
static int
dc_thread_judge(struct linux_discover_cache *c, const char *root, const struct dc_proc *p,
                struct dc_thread *t, double now_s)
{
	char comm[LINUX_COMM_MAX];
	int ret;

	if (t->tid == p->pid) { /* QEMU's main thread never runs a vCPU */
		t->judged = true;
		return 0;
	}
	ret = linux_comm_read(root, p->pid, t->tid, comm);
	if (ret == -ENOENT)
		return ret;
	t->index = ret < 0 ? -1 : linux_vcpu_comm_index(comm); /* malformed: not a vCPU */
	t->judged = t->index >= 0 || ret < 0 || strcmp(comm, p->comm) != 0 ||
	            now_s - t->first_seen_s >= LINUX_DISCOVER_NAME_WAIT_S;
	if (t->index >= 0)
		t->files = linux_task_files_new(&c->pool);
	return 0;
}

/* The threads of p now: known ones kept, new ones judged, gone ones forgotten. */
static int
dc_threads_update(struct linux_discover_cache *c, const char *root, struct dc_proc *p, double now_s)
{
	struct dc_thread *next;
	char sub[64];
	int *tids;
	size_t nr, o = 0, n = 0;

	snprintf(sub, sizeof(sub), "/proc/%d/task", p->pid);
	if (dc_ids_read(root, sub, &tids, &nr) < 0)
		return -ENOENT;
	next = xcalloc(nr + 1, sizeof(*next));
	for (size_t i = 0; i < nr; i++) {
		struct dc_thread *t = &next[n];

		while (o < p->nr_threads && p->threads[o].tid < tids[i])
			linux_task_files_free(p->threads[o++].files); /* gone */
		if (o < p->nr_threads && p->threads[o].tid == tids[i])
			*t = p->threads[o++];
		else
			*t = (struct dc_thread){.tid = tids[i], .index = -1, .first_seen_s = now_s};
		if (!t->judged && dc_thread_judge(c, root, p, t, now_s) < 0) {
			linux_task_files_free(t->files);
			continue; /* vanished: forgotten */
		}
		n++;
	}
	while (o < p->nr_threads)
		linux_task_files_free(p->threads[o++].files);
	free(p->threads);
	free(tids);
	p->threads = next;
	p->nr_threads = n;
	return 0;
}

/* A malloc'd copy of n elements of size bytes (at least one byte allocated). */
static void *
dc_memdup(const void *src, size_t n, size_t size)
{
	void *dst = xcalloc(n + 1, size);

	if (n > 0)
		memcpy(dst, src, n * size);
	return dst;
}

/* A deep copy of src's parsed command line into dst (zeroed). */
static void
dc_numa_copy(struct linux_qemu_numa *dst, const struct linux_qemu_numa *src)
{
	*dst = *src;
	dst->cells = dc_memdup(src->cells, (size_t)src->nr_cells, sizeof(*src->cells));
	dst->ranges = dc_memdup(src->ranges, (size_t)src->nr_ranges, sizeof(*src->ranges));
	dst->backends = dc_memdup(src->backends, (size_t)src->nr_backends, sizeof(*src->backends));
	for (int i = 0; i < src->nr_backends; i++)
		if (src->backends[i].mem_path != NULL)
			dst->backends[i].mem_path = xstrdup(src->backends[i].mem_path);
}

/* The VM of QEMU process p as of now.  1: filled in; 0: gone; -errno: malformed (*what). */
static int
dc_vm_build(struct linux_discover_cache *c, const char *root, struct dc_proc *p, double now_s,
            struct linux_vm *vm, const char **what)
{
	int ret;

	memset(vm, 0, sizeof(*vm));
	*what = "task";
	vm->carried = p->nr_threads > 0 && c->opts.observe_want != NULL &&
	              !c->opts.observe_want(c->opts.ctx, p->pid);
	if (!vm->carried && dc_threads_update(c, root, p, now_s) < 0)
		return 0;
	vm->pid = p->pid;
	memcpy(vm->name, p->info.name, sizeof(vm->name));
	vm->mem_mib = p->info.mem_mib;
	vm->mem_from_cmdline = p->info.mem_from_cmdline;
	dc_numa_copy(&vm->numa, &p->info.numa);
	vm->vcpus = xcalloc(p->nr_threads + 1, sizeof(*vm->vcpus));
	for (size_t i = 0; i < p->nr_threads; i++)
		if (p->threads[i].index >= 0)
			vm->vcpus[vm->nr_vcpus++] = (struct linux_vm_vcpu){
			    p->threads[i].index, p->threads[i].tid, p->threads[i].files};
	if (vm->nr_vcpus > 1)
		qsort(vm->vcpus, (size_t)vm->nr_vcpus, sizeof(*vm->vcpus), linux_vm_vcpu_cmp);
	linux_vm_cells_check(vm);
	if (vm->carried)
		return 1;
	linux_ram_layout_read(root, vm->pid, &vm->numa);
	*what = "numa_maps";
	if ((c->opts.walk_want == NULL || c->opts.walk_want(c->opts.ctx, vm)) &&
	    (ret = linux_vm_ram_walk(root, vm)) < 0) {
		linux_vm_clear(vm);
		return ret == -ENOENT ? 0 : ret;
	}
	return 1;
}

/* Drop the whole cache when the rescan period has passed (or the clock went back). */
static void
dc_rescan_check(struct linux_discover_cache *c, double now_s)
{
	if (c->scanned && now_s >= c->scanned_s && now_s - c->scanned_s < LINUX_DISCOVER_RESCAN_S)
		return;
	for (size_t i = 0; i < c->nr_procs; i++)
		dc_proc_reset(c, &c->procs[i]); /* every verdict goes; when each was seen stays */
	c->scanned = true;
	c->scanned_s = now_s;
	c->listed = false;
}

/* The process set from delta: merged as a listing would be, changed pids judged again. */
static void
dc_procs_apply(struct linux_discover_cache *c, const struct linux_proc_delta *delta, double now_s)
{
	int *pids, *changed;
	size_t nr, nr_changed, p = 0;

	dc_delta_pids(c, delta, &pids, &nr, &changed, &nr_changed);
	dc_procs_merge(c, pids, nr, now_s);
	for (size_t i = 0; i < nr_changed; i++) {
		while (p < c->nr_procs && c->procs[p].pid < changed[i])
			p++;
		if (p < c->nr_procs && c->procs[p].pid == changed[i] && c->procs[p].judged)
			dc_proc_reset(c, &c->procs[p]);
	}
	free(pids);
	free(changed);
}

uint64_t
linux_discover_cache_listings(const struct linux_discover_cache *cache)
{
	return cache->listings;
}

int
linux_discover_cache_scan(struct linux_discover_cache *cache, const char *root, double now_s,
                          struct linux_vm **out, size_t *nr, struct linux_discover_skips *skips)
{
	return linux_discover_cache_scan_delta(cache, root, now_s, NULL, out, nr, skips);
}

int
linux_discover_cache_scan_delta(struct linux_discover_cache *cache, const char *root, double now_s,
                                const struct linux_proc_delta *delta, struct linux_vm **out,
                                size_t *nr, struct linux_discover_skips *skips)
{
	bool events;
	int *pids;
	size_t nr_pids, cap = 0;
	int ret;

	*out = NULL;
	*nr = 0;
	if (skips)
		memset(skips, 0, sizeof(*skips));
	dc_rescan_check(cache, now_s);
	events = delta != NULL && !delta->full && cache->listed;
	if (events) {
		if (delta->nr > 0) /* nothing forked, exec()ed or ended: the set stands */
			dc_procs_apply(cache, delta, now_s);
	} else {
		if ((ret = dc_ids_read(root, "/proc", &pids, &nr_pids)) < 0)
			return ret;
		dc_procs_merge(cache, pids, nr_pids, now_s);
		free(pids);
		cache->listed = true;
		cache->listings++;
	}
	for (size_t i = 0; i < cache->nr_procs; i++) {
		struct dc_proc *p = &cache->procs[i];
		const char *what;

		/* with events, an exit or a reuse (exit, then fork) was reported: nothing to read
		 */
		if (p->judged && p->qemu && !events)
			dc_proc_recheck(cache, root, p);
		else if (p->judged && !events)
			dc_proc_young_recheck(cache, root, p, now_s);
		if ((!p->judged && dc_proc_judge(cache, root, p, skips) <= 0) || !p->qemu)
			continue;
		util_array_reserve((void **)out, &cap, *nr + 1, sizeof(**out));
		ret = dc_vm_build(cache, root, p, now_s, &(*out)[*nr], &what);
		if (ret < 0)
			linux_discover_skip_note(skips, p->pid, what, ret);
		else if (ret > 0)
			(*nr)++;
	}
	if (*nr == 0) {
		free(*out);
		*out = NULL;
	}
	return 0;
}

int
linux_vms_discover_opts(const char *root, struct linux_vm **out, size_t *nr,
                        struct linux_discover_skips *skips, const struct linux_discover_opts *opts)
{
	struct linux_discover_cache *cache = linux_discover_cache_new(0);
	int ret;

	linux_discover_cache_opts_set(cache, opts);
	ret = linux_discover_cache_scan(cache, root, 0, out, nr, skips);

	for (size_t i = 0; i < *nr; i++) /* the cache goes now, and with it their files */
		for (int v = 0; v < (*out)[i].nr_vcpus; v++)
			(*out)[i].vcpus[v].files = NULL;
	linux_discover_cache_free(cache);
	return ret;
}

int
linux_vms_discover_skips(const char *root, struct linux_vm **out, size_t *nr,
                         struct linux_discover_skips *skips)
{
	return linux_vms_discover_opts(root, out, nr, skips, NULL);
}

int
linux_vms_discover(const char *root, struct linux_vm **out, size_t *nr)
{
	return linux_vms_discover_skips(root, out, nr, NULL);
}
