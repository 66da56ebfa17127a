/*
 * ram_layout.c - where a QEMU process mapped each vNUMA cell's memory backend, or the one of
 * its single RAM block (ram_layout.h).
 *
 * /proc/<pid>/maps is read into mappings; a backend's candidates are spans of them (one
 * mapping, or adjacent ones of one kind, permissions and file) holding exactly its size.  The
 * file backends are located first, by path, then the others group by group (one group per
 * kind and size, largest first), by size, and by creation order when a group has several
 * backends; last, every cell must have its backend located, or none does (the RAM block:
 * located, or not).  The search is for the cells' backends or the RAM block's (rl_target);
 * the other backends only take part in the groups.
 */
#include "host/linux/ram_layout.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>

#include "host/linux/procfs.h"
#include "policy/util.h"

/* Largest sysctl or personality file read, bytes (they hold one number). */
#define RL_NUMBER_FILE_MAX 64
/* QEMU maps a backend in whole host pages (HOST_PAGE_ALIGN): 4 KiB on x86-64. */
#define RL_PAGE_BYTES 4096
/* Length of the mkstemp() suffix of the file QEMU creates in a mem-path directory. */
#define RL_MKSTEMP_CHARS 6
/* A backend's state in the search (0: located): not looked at yet, or not found. */
#define RL_UNSEEN   (-1)
#define RL_NOTFOUND (-2)

/* ---- the mapping order ---------------------------------------------------------------------- */

enum linux_mmap_order
linux_mmap_order_read(const char *root, int pid)
{
	char *data, *end;
	size_t len;
	unsigned long persona;
	bool legacy = false, ok;

	if (linux_file_read(root, RL_NUMBER_FILE_MAX, &data, &len,
	                    "/proc/sys/vm/legacy_va_layout") == 0) {
		legacy = strtol(data, NULL, 10) != 0;
		free(data);
	}
	if (legacy)
		return LINUX_MMAP_BOTTOM_UP;
	if (linux_file_read(root, RL_NUMBER_FILE_MAX, &data, &len, "/proc/%d/personality", pid) < 0)
		return LINUX_MMAP_UNKNOWN;
	persona = strtoul(data, &end, 16);
	ok = end != data && (*end == '\n' || *end == '\0');
	free(data);
	if (!ok)
		return LINUX_MMAP_UNKNOWN;
	return persona & ADDR_COMPAT_LAYOUT ? LINUX_MMAP_BOTTOM_UP : LINUX_MMAP_TOP_DOWN;
}

/* ---- spans of mappings --------------------------------------------------------------------- */

/* What a mapping is backed by. */
enum rl_kind {
	RL_ANON,  /* anonymous, private or shared ("/dev/zero (deleted)") */
	RL_MEMFD, /* "/memfd:NAME (deleted)" */
	RL_FILE,  /* any other file */
	RL_NONE,  /* not guest RAM: not read-write, executable, or [heap], [stack] and the like */
};

static const char *const rl_kind_names[] = {"anonymous", "memfd", "file", "other"};

/* Mappings first..last (indexes into the vmas), adjacent, one after the other. */
struct rl_span {
	int first, last;
};

/* What a search locates: each cell's backend, QEMU's one RAM block, or nothing. */
enum rl_target {
	RL_TARGET_NONE,
	RL_TARGET_CELLS,
	RL_TARGET_BLOCK,
};

/* One search. */
struct rl_state {
	enum rl_target target;
	char *error; /* where the first reason goes: layout_error or ram_block_error */
	struct linux_qemu_numa *numa;
	const struct linux_vmas *vmas;
	enum linux_mmap_order order;
	enum rl_kind *kind; /* per mapping */
	bool *taken;        /* per mapping: part of a located backend */
	int *state;         /* per backend: RL_UNSEEN, RL_NOTFOUND, or 0: located at span_of */
	struct rl_span *span_of;
	bool by_order; /* some backends were told apart by creation order */
};

static enum rl_kind
rl_vma_kind(const struct linux_vma *v)
{
	if (v->perms[0] != 'r' || v->perms[1] != 'w' || v->perms[2] != '-')
		return RL_NONE;
	if (v->path == NULL || strcmp(v->path, "/dev/zero (deleted)") == 0 ||
	    strcmp(v->path, "/dev/zero") == 0)
		return RL_ANON;
	if (strncmp(v->path, "/memfd:", 7) == 0)
		return RL_MEMFD;
	return v->path[0] == '[' ? RL_NONE : RL_FILE;
}

static bool
rl_same_path(const char *a, const char *b)
{
	return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

/*
 * Mapping i continues mapping i - 1 as one mapping split in parts could: adjacent, with the
 * same kind, permissions and file.  Two distinct mappings can look the same (a thread's stack
 * right below a backend, say), so spans are cut from such runs by size, never taken whole.
 */
static bool
rl_joins(const struct rl_state *st, size_t i)
{
	const struct linux_vma *a = &st->vmas->vmas[i - 1], *b = &st->vmas->vmas[i];

	return a->end == b->start && st->kind[i - 1] == st->kind[i] &&
	       strcmp(a->perms, b->perms) == 0 && rl_same_path(a->path, b->path);
}

/* An inaccessible mapping starts where the span ends: QEMU's guard page after a RAM block. */
static bool
rl_guarded(const struct rl_state *st, struct rl_span sp)
{
	const struct linux_vma *v = st->vmas->vmas;
	size_t next = (size_t)sp.last + 1;

	return next < st->vmas->nr && v[next].start == v[sp.last].end &&
	       strncmp(v[next].perms, "---", 3) == 0;
}

/* ---- locating backends ---------------------------------------------------------------------- */

static int __attribute__((format(printf, 2, 3))) rl_fail(struct rl_state *st, const char *fmt, ...)
{
	va_list ap;

	if (st->error[0] == '\0') {
		va_start(ap, fmt);
		vsnprintf(st->error, LINUX_QEMU_ERROR_MAX, fmt, ap);
		va_end(ap);
	}
	return -ENXIO;
}

static enum rl_target
rl_target_of(const struct linux_qemu_numa *numa)
{
	if (numa->nr_cells > 0 && numa->cells[0].backend >= 0)
		return RL_TARGET_CELLS;
	if (numa->ram_block >= 0 && numa->ram_block < numa->nr_backends)
		return RL_TARGET_BLOCK;
	return RL_TARGET_NONE;
}

/* Backend b is one the search is for: a cell's, or QEMU's RAM block. */
static bool
rl_wanted(const struct rl_state *st, int b)
{
	if (st->target == RL_TARGET_BLOCK)
		return b == st->numa->ram_block;
	for (int c = 0; c < st->numa->nr_cells; c++)
		if (st->numa->cells[c].backend == b)
			return true;
	return false;
}

/* What wanted backend b is, for messages: "cell 1 (memdev ram-node1)", "memdev pc.ram", "-m". */
static void
rl_who(const struct rl_state *st, int b, char *buf, size_t size)
{
	const struct linux_qemu_backend *be = &st->numa->backends[b];

	for (int c = 0; st->target == RL_TARGET_CELLS && c < st->numa->nr_cells; c++) {
		if (st->numa->cells[c].backend == b) {
			snprintf(buf, size, "cell %d (memdev %.40s)", c, be->id);
			return;
		}
	}
	if (be->id[0] != '\0')
		snprintf(buf, size, "memdev %.40s", be->id);
	else
		snprintf(buf, size, "%s",
		         be->kind == LINUX_QEMU_BACKEND_FILE ? "-m, -mem-path" : "-m");
}

/* A backend's id for messages: QEMU's own one has none. */
static const char *
rl_id(const struct linux_qemu_backend *be)
{
	return be->id[0] != '\0' ? be->id : "(QEMU's own, for -m)";
}

static enum rl_kind
rl_backend_kind(const struct linux_qemu_backend *b)
{
	switch (b->kind) {
	case LINUX_QEMU_BACKEND_RAM:
		return RL_ANON;
	case LINUX_QEMU_BACKEND_MEMFD:
		return RL_MEMFD;
	case LINUX_QEMU_BACKEND_FILE:
		return RL_FILE;
	}
	return RL_NONE;
}

/* "XXXXXX" (mkstemp's six characters), then nothing or " (deleted)". */
static bool
rl_is_mkstemp_tail(const char *s)
{
	if (strnlen(s, RL_MKSTEMP_CHARS) < RL_MKSTEMP_CHARS || strchr(s, '/') != NULL)
		return false;
	s += RL_MKSTEMP_CHARS;
	return *s == '\0' || strcmp(s, " (deleted)") == 0;
}

/*
 * "<id>.XXXXXX", then nothing or " (deleted)".  id "" (QEMU's own backend, named after the
 * machine type's RAM: "pc.ram", "mach-virt.ram"): any name.
 */
static bool
rl_is_id_file(const char *s, const char *id)
{
	size_t n = strlen(id);
	const char *dot;

	if (n == 0) {
		for (dot = strchr(s, '.'); dot != NULL; dot = strchr(dot + 1, '.'))
			if (dot > s && rl_is_mkstemp_tail(dot + 1))
				return true;
		return false;
	}
	return strncmp(s, id, n) == 0 && s[n] == '.' && rl_is_mkstemp_tail(s + n + 1);
}

/* path is the file of backend b: mem-path itself, or QEMU's file in directory mem-path. */
static bool
rl_path_is_backend(const struct linux_qemu_backend *b, const char *path)
{
	size_t n;
	const char *rest;

	if (b->mem_path == NULL || path == NULL)
		return false;
	n = strlen(b->mem_path);
	while (n > 1 && b->mem_path[n - 1] == '/')
		n--;
	if (strncmp(path, b->mem_path, n) != 0)
		return false;
	rest = path + n;
	if (*rest == '\0' || strcmp(rest, " (deleted)") == 0)
		return true;
	if (strncmp(rest, "/qemu_back_mem.", 15) != 0)
		return false;
	rest += 15;
	return rl_is_id_file(rest, b->id) ||
	       (strncmp(rest, "_objects_", 9) == 0 && rl_is_id_file(rest + 9, b->id));
}

/* Mapping i may hold backend be: free, of its kind, and of its file for a file backend. */
static bool
rl_usable(const struct rl_state *st, size_t i, const struct linux_qemu_backend *be)
{
	enum rl_kind kind = rl_backend_kind(be);

	return !st->taken[i] && st->kind[i] == kind &&
	       (kind != RL_FILE || rl_path_is_backend(be, st->vmas->vmas[i].path));
}

/* The bytes QEMU maps for backend be: its size in whole pages. */
static uint64_t
rl_mapped_bytes(const struct linux_qemu_backend *be)
{
	if (be->size_bytes > UINT64_MAX - RL_PAGE_BYTES)
		return be->size_bytes;
	return (be->size_bytes + RL_PAGE_BYTES - 1) / RL_PAGE_BYTES * RL_PAGE_BYTES;
}

/*
 * The spans of usable mappings, each continuing the one before, that hold exactly be's size,
 * by ascending first mapping, into out (room for one per mapping); returns how many.
 */
static int
rl_spans_find(const struct rl_state *st, const struct linux_qemu_backend *be, struct rl_span *out)
{
	const struct linux_vma *v = st->vmas->vmas;
	uint64_t want = rl_mapped_bytes(be);
	int n = 0;

	for (size_t a = 0; a < st->vmas->nr; a++) {
		uint64_t sum = 0;

		if (!rl_usable(st, a, be))
			continue;
		for (size_t b = a; b < st->vmas->nr && sum < want; b++) {
			if (b > a && (!rl_joins(st, b) || !rl_usable(st, b, be)))
				break;
			sum += v[b].end - v[b].start;
			if (sum == want)
				out[n++] = (struct rl_span){(int)a, (int)b};
		}
	}
	return n;
}

/* Keep the spans QEMU's guard page follows; returns how many are left. */
static int
rl_spans_guarded(const struct rl_state *st, struct rl_span *sp, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		if (rl_guarded(st, sp[i]))
			sp[k++] = sp[i];
	return k;
}

/* No two of the spans (ascending first mapping) share a mapping. */
static bool
rl_spans_disjoint(const struct rl_span *sp, int n)
{
	for (int i = 1; i < n; i++)
		if (sp[i].first <= sp[i - 1].last)
			return false;
	return true;
}

static void
rl_take(struct rl_state *st, int b, struct rl_span sp)
{
	st->state[b] = 0;
	st->span_of[b] = sp;
	for (int i = sp.first; i <= sp.last; i++)
		st->taken[i] = true;
}

/*
 * The backends not yet looked at with b's kind and size, b first, in command-line order,
 * into bs (a file backend: b alone, its file tells it apart); returns how many.  *want: the
 * first of them the search is for, or -1 when none is.
 */
static int
rl_group(const struct rl_state *st, int b, int *bs, int *want)
{
	const struct linux_qemu_backend *be = &st->numa->backends[b];
	int n = 0;

	*want = -1;
	for (int j = b; j < st->numa->nr_backends; j++) {
		const struct linux_qemu_backend *o = &st->numa->backends[j];

		if (st->state[j] != RL_UNSEEN || o->kind != be->kind ||
		    o->size_bytes != be->size_bytes ||
		    (j > b && be->kind == LINUX_QEMU_BACKEND_FILE))
			continue;
		bs[n++] = j;
		if (*want < 0 && rl_wanted(st, j))
			*want = j;
	}
	return n;
}

/*
 * Backends bs[0..nb) were not located, with nr spans (overlapping unless apart) for them;
 * want: the first of them the search is for (-1: none, so nothing is wrong).
 */
static void
rl_group_fail(struct rl_state *st, const int *bs, int nb, int want, int nr, bool apart)
{
	const struct linux_qemu_backend *be = &st->numa->backends[bs[0]];
	const char *kind = rl_kind_names[rl_backend_kind(be)];
	unsigned long long size = (unsigned long long)be->size_bytes;
	char who[80];

	for (int i = 0; i < nb; i++)
		st->state[bs[i]] = RL_NOTFOUND;
	if (want < 0)
		return; /* not one the search is for: it does not matter where it is */
	rl_who(st, want, who, sizeof(who));
	if (be->kind == LINUX_QEMU_BACKEND_FILE)
		rl_fail(st, "%s: %d mappings of %.40s of %llu bytes", who, nr,
		        be->mem_path ? be->mem_path : "(no mem-path)", size);
	else if (!apart)
		rl_fail(st, "%s: %d overlapping %s spans of mappings of %llu bytes for %d such %s",
		        who, nr, kind, size, nb, nb == 1 ? "backend" : "backends");
	else if (nr == nb)
		rl_fail(st,
		        "%s: %d backends of %llu bytes, and the order this process maps memory in "
		        "is unknown",
		        who, nb, size);
	else
		rl_fail(st, "%s: %d %s mappings of %llu bytes for %d such %s", who, nr, kind, size,
		        nb, nb == 1 ? "backend" : "backends");
}

/*
 * 1., 2. and 3.: backend b's group against the spans that fit it: one backend, one span;
 * several, by creation order.  Overlapping spans (three 32 MiB mappings in a row for two
 * 64 MiB backends) leave them all unlocated.
 */
static void
rl_locate_group(struct rl_state *st, int b)
{
	int *bs = xcalloc((size_t)st->numa->nr_backends + 1, sizeof(*bs));
	struct rl_span *sp = xcalloc(st->vmas->nr + 1, sizeof(*sp));
	int want, nb = rl_group(st, b, bs, &want);
	int nr = rl_spans_find(st, &st->numa->backends[b], sp);
	bool apart;

	if (nr > nb)
		nr = rl_spans_guarded(st, sp, nr);
	apart = rl_spans_disjoint(sp, nr);
	if (nr == nb && apart && (nb == 1 || st->order != LINUX_MMAP_UNKNOWN)) {
		for (int i = 0; i < nb; i++)
			rl_take(st, bs[i], sp[st->order == LINUX_MMAP_BOTTOM_UP ? i : nb - 1 - i]);
		st->by_order |= nb > 1;
	} else {
		rl_group_fail(st, bs, nb, want, nr, apart);
	}
	free(bs);
	free(sp);
}

/* A backend's place in the search: file backends first, then by descending size. */
struct rl_turn {
	bool file;
	uint64_t size_bytes;
	int backend;
};

static int
rl_turn_cmp(const void *a, const void *b)
{
	const struct rl_turn *x = a, *y = b;

	if (x->file != y->file)
		return x->file ? -1 : 1;
	if (x->size_bytes != y->size_bytes)
		return x->size_bytes > y->size_bytes ? -1 : 1;
	return x->backend - y->backend;
}

/*
 * Every backend's group, files first (their path tells them apart), then the largest first,
 * so that the parts of a large backend's split mapping are never taken for small backends.
 */
static void
rl_locate_all(struct rl_state *st)
{
	int nr = st->numa->nr_backends;
	struct rl_turn *turns = xcalloc((size_t)nr + 1, sizeof(*turns));

	for (int b = 0; b < nr; b++)
		turns[b] = (struct rl_turn){st->numa->backends[b].kind == LINUX_QEMU_BACKEND_FILE,
		                            st->numa->backends[b].size_bytes, b};
	qsort(turns, (size_t)nr, sizeof(*turns), rl_turn_cmp);
	for (int i = 0; i < nr; i++)
		if (st->state[turns[i].backend] == RL_UNSEEN)
			rl_locate_group(st, turns[i].backend);
	free(turns);
}

/* The address backend b was located at. */
static uint64_t
rl_start_of(const struct rl_state *st, int b)
{
	return st->vmas->vmas[st->span_of[b].first].start;
}

/*
 * 3.'s proviso: when creation order told backends apart, every located backend must lie in
 * creation order in the direction the process maps in.
 */
static void
rl_order_check(struct rl_state *st)
{
	int prev = -1;

	if (!st->by_order)
		return;
	for (int b = 0; b < st->numa->nr_backends; b++) {
		uint64_t at, before;

		if (st->state[b] != 0)
			continue;
		at = rl_start_of(st, b);
		before = prev >= 0 ? rl_start_of(st, prev) : 0;
		if (prev >= 0 && (st->order == LINUX_MMAP_BOTTOM_UP ? at < before : at > before)) {
			rl_fail(st,
			        "memory backends %.40s and %.40s are not mapped in the order QEMU "
			        "made them: equal-sized ones cannot be told apart",
			        rl_id(&st->numa->backends[prev]), rl_id(&st->numa->backends[b]));
			return;
		}
		prev = b;
	}
}

/* QEMU's RAM block's start, or none (-ENXIO) when it was not located. */
static int
rl_block_set(struct rl_state *st)
{
	struct linux_qemu_numa *numa = st->numa;

	if (st->state[numa->ram_block] != 0)
		rl_fail(st, "its memory backend was not located");
	numa->ram_block_start = st->error[0] != '\0' ? 0 : rl_start_of(st, numa->ram_block);
	return st->error[0] != '\0' ? -ENXIO : 0;
}

/* Every cell's host_start, or none (-ENXIO) when a cell's backend was not located. */
static int
rl_cells_set(struct rl_state *st)
{
	struct linux_qemu_numa *numa = st->numa;

	if (st->target == RL_TARGET_BLOCK)
		return rl_block_set(st);
	for (int c = 0; c < numa->nr_cells; c++) {
		int b = numa->cells[c].backend;

		if (b < 0 || b >= numa->nr_backends || st->state[b] != 0)
			rl_fail(st, "cell %d: its memory backend was not located", c);
	}
	for (int c = 0; c < numa->nr_cells; c++)
		numa->cells[c].host_start =
		    numa->layout_error[0] != '\0' ? 0 : rl_start_of(st, numa->cells[c].backend);
	return numa->layout_error[0] != '\0' ? -ENXIO : 0;
}

/* Forget what an earlier search found; where this one's reason goes. */
static char *
rl_reset(struct linux_qemu_numa *numa, enum rl_target target)
{
	numa->layout_error[0] = '\0';
	for (int c = 0; c < numa->nr_cells; c++)
		numa->cells[c].host_start = 0;
	numa->ram_block_start = 0;
	if (target != RL_TARGET_BLOCK)
		return numa->layout_error;
	numa->ram_block_error[0] = '\0'; /* else it says why there is no RAM block */
	return numa->ram_block_error;
}

int
linux_ram_layout_find(struct linux_qemu_numa *numa, const struct linux_vmas *vmas,
                      enum linux_mmap_order order)
{
	struct rl_state st = {.numa = numa, .vmas = vmas, .order = order};
	int ret;

	st.target = rl_target_of(numa);
	st.error = rl_reset(numa, st.target);
	if (st.target == RL_TARGET_NONE)
		return 0;
	st.kind = xcalloc(vmas->nr + 1, sizeof(*st.kind));
	st.taken = xcalloc(vmas->nr + 1, sizeof(*st.taken));
	for (size_t i = 0; i < vmas->nr; i++)
		st.kind[i] = rl_vma_kind(&vmas->vmas[i]);
	st.state = xcalloc((size_t)numa->nr_backends + 1, sizeof(*st.state));
	st.span_of = xcalloc((size_t)numa->nr_backends + 1, sizeof(*st.span_of));
	for (int b = 0; b < numa->nr_backends; b++)
		st.state[b] = RL_UNSEEN;
	rl_locate_all(&st);
	rl_order_check(&st);
	ret = rl_cells_set(&st);
	free(st.kind);
	free(st.taken);
	free(st.state);
	free(st.span_of);
	return ret;
}

int
linux_ram_layout_read(const char *root, int pid, struct linux_qemu_numa *numa)
{
	struct linux_vmas vmas;
	enum rl_target target = rl_target_of(numa);
	char *error = rl_reset(numa, target);
	int ret;

	if (target == RL_TARGET_NONE)
		return 0;
	if ((ret = linux_vmas_read(root, pid, &vmas)) < 0) {
		snprintf(error, LINUX_QEMU_ERROR_MAX, "/proc/%d/maps: %s", pid, strerror(-ret));
		return ret;
	}
	ret = linux_ram_layout_find(numa, &vmas, linux_mmap_order_read(root, pid));
	linux_vmas_free(&vmas);
	return ret;
}

/* ---- guest RAM as host ranges --------------------------------------------------------------- */

int
linux_ram_layout_ranges(const struct linux_qemu_numa *numa, struct linux_ram_range **out)
{
	enum rl_target target = rl_target_of(numa);

	*out = NULL;
	if (target == RL_TARGET_BLOCK && numa->ram_block_start != 0) {
		*out = xcalloc(1, sizeof(**out));
		(*out)[0] = (struct linux_ram_range){numa->ram_block_start,
		                                     numa->backends[numa->ram_block].size_bytes};
		return 1;
	}
	if (target != RL_TARGET_CELLS)
		return 0;
	for (int c = 0; c < numa->nr_cells; c++)
		if (numa->cells[c].host_start == 0)
			return -ENXIO;
	*out = xcalloc((size_t)numa->nr_cells, sizeof(**out));
	for (int c = 0; c < numa->nr_cells; c++)
		(*out)[c] =
		    (struct linux_ram_range){numa->cells[c].host_start, numa->cells[c].size_bytes};
	return numa->nr_cells;
}

int
linux_ram_ranges_cut(const struct linux_ram_range *ram, int nr, uint64_t off, uint64_t len,
                     struct linux_ram_range *out)
{
	uint64_t base = 0, end = len && off <= UINT64_MAX - len ? off + len : UINT64_MAX;
	int n = 0;

	for (int i = 0; i < nr; i++) {
		uint64_t a = base > off ? base : off;
		uint64_t b = base + ram[i].len < end ? base + ram[i].len : end;

		if (a < b)
			out[n++] = (struct linux_ram_range){ram[i].start + (a - base), b - a};
		base += ram[i].len;
	}
	return n;
}
