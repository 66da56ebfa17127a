/*
 * numa_maps.c - /proc/<pid>/numa_maps: per mapping, its memory policy and where its pages sit.
 *
 * A line (fs/proc/task_mmu.c, show_numa_map; the policy from mm/mempolicy.c, mpol_to_str):
 *
 *   <hex start> <mode>[=<flags>][:<nodelist>][ file=<path>| heap| stack][ huge]
 *       [ anon=N][ dirty=N][ mapped=N][ mapmax=N][ swapcache=N][ active=N][ writeback=N]
 *       [ N<node>=<pages>]...[ kernelpagesize_kB=N]
 *
 * Two mode names hold a blank ("prefer (many)", "weighted interleave"); the path escapes
 * blanks, tabs, newlines and '=' as \ooo.  Unknown tokens are skipped (newer kernels add
 * fields); a known one with a bad value, an N<node> list out of order, or pages without a page
 * size make the whole file -EINVAL.
 */
#include "host/linux/procfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/util.h"

/* Mode names, longest first where one is a prefix of another ("prefer (many)", "prefer"). */
static const struct {
	const char *name;
	enum linux_mpol_mode mode;
} numa_maps_modes[] = {
    {"weighted interleave", LINUX_MPOL_WEIGHTED_INTERLEAVE},
    {"prefer (many)", LINUX_MPOL_PREFERRED_MANY},
    {"interleave", LINUX_MPOL_INTERLEAVE},
    {"default", LINUX_MPOL_DEFAULT},
    {"prefer", LINUX_MPOL_PREFERRED},
    {"bind", LINUX_MPOL_BIND},
    {"local", LINUX_MPOL_LOCAL},
};

static const struct {
	const char *name;
	unsigned int flag;
} numa_maps_flags[] = {
    {"static", LINUX_MPOL_F_STATIC},
    {"relative", LINUX_MPOL_F_RELATIVE},
    {"balancing", LINUX_MPOL_F_BALANCING},
};

/* The "key=<u64>" counters. */
static const struct {
	const char *key;
	size_t offset;
} numa_maps_counters[] = {
    {"anon=", offsetof(struct linux_numa_map, anon)},
    {"dirty=", offsetof(struct linux_numa_map, dirty)},
    {"mapped=", offsetof(struct linux_numa_map, mapped)},
    {"mapmax=", offsetof(struct linux_numa_map, mapmax)},
    {"swapcache=", offsetof(struct linux_numa_map, swapcache)},
    {"active=", offsetof(struct linux_numa_map, active)},
    {"writeback=", offsetof(struct linux_numa_map, writeback)},
    {"kernelpagesize_kB=", offsetof(struct linux_numa_map, kernelpagesize_kib)},
};

#define NUMA_MAPS_NITEMS(a) (sizeof(a) / sizeof((a)[0]))

/* Growth state of the arrays being filled. */
struct numa_maps_build {
	struct linux_numa_maps *out;
	size_t cap_maps;
	size_t cap_node_pages;
	size_t cap_policy;
};

static bool
numa_maps_mode_ends(const struct linux_scan *s)
{
	return linux_scan_empty(s) || *s->p == '=' || *s->p == ':' || *s->p == ' ';
}

/* The mode name; an unknown one is the (non-empty) text up to the first '=', ':' or blank. */
static int
numa_maps_mode_parse(struct linux_scan *line, struct linux_numa_map *map)
{
	struct linux_scan save = *line;

	for (size_t i = 0; i < NUMA_MAPS_NITEMS(numa_maps_modes); i++) {
		if (linux_scan_literal(line, numa_maps_modes[i].name) &&
		    numa_maps_mode_ends(line)) {
			map->mode = numa_maps_modes[i].mode;
			return 0;
		}
		*line = save;
	}
	map->mode = LINUX_MPOL_UNKNOWN;
	while (!numa_maps_mode_ends(line))
		line->p++;
	return line->p == save.p ? -EINVAL : 0;
}

/* "=static", "=relative|balancing", "=static,balancing"; unknown flag words are skipped. */
static void
numa_maps_flags_parse(struct linux_scan *line, struct linux_numa_map *map)
{
	struct linux_scan word;

	if (!linux_scan_char(line, '='))
		return;
	do {
		word.p = line->p;
		while (!linux_scan_empty(line) && memchr("|,: ", *line->p, 4) == NULL)
			line->p++;
		word.end = line->p;
		for (size_t i = 0; i < NUMA_MAPS_NITEMS(numa_maps_flags); i++)
			if (linux_scan_equals(&word, numa_maps_flags[i].name))
				map->mode_flags |= numa_maps_flags[i].flag;
	} while (linux_scan_char(line, '|') || linux_scan_char(line, ','));
}

/* ":<nodelist>", appended to the shared policy_nodes array. */
static int
numa_maps_policy_nodes_parse(struct linux_scan *line, struct numa_maps_build *b,
                             struct linux_numa_map *map)
{
	struct linux_numa_maps *out = b->out;
	struct linux_scan list;
	int *ids, nr, ret;

	map->policy_first = out->nr_policy_nodes;
	if (!linux_scan_char(line, ':'))
		return 0;
	if (!linux_scan_token(line, &list))
		return -EINVAL;
	if ((ret = linux_scan_idlist(&list, LINUX_MAX_NODES, &ids, &nr)) < 0)
		return ret;
	util_array_reserve((void **)&out->policy_nodes, &b->cap_policy,
	                   out->nr_policy_nodes + (size_t)nr, sizeof(*out->policy_nodes));
	if (nr > 0)
		memcpy(out->policy_nodes + out->nr_policy_nodes, ids, (size_t)nr * sizeof(*ids));
	out->nr_policy_nodes += (size_t)nr;
	map->nr_policy_nodes = nr;
	free(ids);
	return 0;
}

static int
numa_maps_octal(char c)
{
	return c >= '0' && c <= '7' ? c - '0' : -1;
}

/* Decode mangle_path()'s \ooo escapes; a NUL byte (escaped or raw) is -EINVAL. */
static int
numa_maps_file_decode(const struct linux_scan *tok, char **file)
{
	size_t n = linux_scan_len(tok), j = 0;
	const char *p = tok->p;
	char *s = xmalloc(n + 1);

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)p[i];

		if (c == '\\' && i + 3 < n && numa_maps_octal(p[i + 1]) >= 0 &&
		    numa_maps_octal(p[i + 2]) >= 0 && numa_maps_octal(p[i + 3]) >= 0) {
			c = numa_maps_octal(p[i + 1]) * 64 + numa_maps_octal(p[i + 2]) * 8 +
			    numa_maps_octal(p[i + 3]);
			i += 3;
		}
		if (c == 0 || c > 255) {
			free(s);
			return -EINVAL;
		}
		s[j++] = (char)c;
	}
	s[j] = '\0';
	*file = s;
	return 0;
}

/* "N<node>=<pages>": nodes must ascend within a line. */
static int
numa_maps_node_parse(struct linux_scan *tok, struct numa_maps_build *b, struct linux_numa_map *map)
{
	struct linux_numa_maps *out = b->out;
	struct linux_map_node e;
	int ret;

	tok->p++; /* the 'N' */
	if ((ret = linux_scan_id(tok, LINUX_MAX_NODES, &e.node)) < 0)
		return ret;
	if (!linux_scan_char(tok, '=') || linux_scan_u64(tok, &e.pages) < 0 ||
	    !linux_scan_empty(tok))
		return -EINVAL;
	if (map->nr_nodes > 0 && out->node_pages[out->nr_node_pages - 1].node >= e.node)
		return -EINVAL;
	if (__builtin_add_overflow(map->pages, e.pages, &map->pages))
		return -EINVAL;
	util_array_reserve((void **)&out->node_pages, &b->cap_node_pages, out->nr_node_pages + 1,
	                   sizeof(*out->node_pages));
	out->node_pages[out->nr_node_pages++] = e;
	map->nr_nodes++;
	return 0;
}

/* One blank-separated token after the policy. */
static int
numa_maps_token_parse(struct linux_scan *tok, struct numa_maps_build *b, struct linux_numa_map *map)
{
	if (linux_scan_literal(tok, "file=")) {
		if (map->kind != LINUX_MAP_ANON)
			return -EINVAL;
		map->kind = LINUX_MAP_FILE;
		return numa_maps_file_decode(tok, &map->file);
	}
	if (linux_scan_equals(tok, "heap") || linux_scan_equals(tok, "stack")) {
		if (map->kind != LINUX_MAP_ANON)
			return -EINVAL;
		map->kind = *tok->p == 'h' ? LINUX_MAP_HEAP : LINUX_MAP_STACK;
		return 0;
	}
	if (linux_scan_equals(tok, "huge")) {
		map->huge = true;
		return 0;
	}
	if (linux_scan_len(tok) >= 2 && tok->p[0] == 'N' && tok->p[1] >= '0' && tok->p[1] <= '9')
		return numa_maps_node_parse(tok, b, map);
	for (size_t i = 0; i < NUMA_MAPS_NITEMS(numa_maps_counters); i++) {
		if (!linux_scan_literal(tok, numa_maps_counters[i].key))
			continue;
		if (linux_scan_u64(tok, (uint64_t *)((char *)map + numa_maps_counters[i].offset)) <
		        0 ||
		    !linux_scan_empty(tok))
			return -EINVAL;
		return 0;
	}
	return 0; /* a field newer than this code */
}

/* Add map's pages to the per-node byte totals. */
static int
numa_maps_totals_add(struct linux_numa_maps *out, const struct linux_numa_map *map)
{
	uint64_t page_bytes, bytes;

	if (map->nr_nodes > 0 && map->kernelpagesize_kib == 0)
		return -EINVAL;
	if (__builtin_mul_overflow(map->kernelpagesize_kib, (uint64_t)1024, &page_bytes))
		return -EINVAL;
	for (int i = 0; i < map->nr_nodes; i++) {
		const struct linux_map_node *e = &out->node_pages[map->node_first + (size_t)i];

		if (e->node >= out->nr_node_bytes) {
			out->node_bytes = xreallocarray(out->node_bytes, (size_t)e->node + 1,
			                                sizeof(*out->node_bytes));
			memset(out->node_bytes + out->nr_node_bytes, 0,
			       (size_t)(e->node + 1 - out->nr_node_bytes) *
			           sizeof(*out->node_bytes));
			out->nr_node_bytes = e->node + 1;
		}
		if (__builtin_mul_overflow(e->pages, page_bytes, &bytes) ||
		    __builtin_add_overflow(out->node_bytes[e->node], bytes,
		                           &out->node_bytes[e->node]) ||
		    __builtin_add_overflow(out->total_bytes, bytes, &out->total_bytes))
			return -EINVAL;
	}
	return 0;
}

static int
numa_maps_line_parse(struct linux_scan *line, struct numa_maps_build *b, struct linux_numa_map *map)
{
	struct linux_scan tok;
	int ret;

	map->node_first = b->out->nr_node_pages;
	if (linux_scan_x64(line, &map->start) < 0 || !linux_scan_char(line, ' '))
		return -EINVAL;
	if ((ret = numa_maps_mode_parse(line, map)) < 0)
		return ret;
	numa_maps_flags_parse(line, map);
	if ((ret = numa_maps_policy_nodes_parse(line, b, map)) < 0)
		return ret;
	if (!linux_scan_empty(line) && *line->p != ' ')
		return -EINVAL;
	for (linux_scan_blanks(line); linux_scan_token(line, &tok); linux_scan_blanks(line)) {
		if ((ret = numa_maps_token_parse(&tok, b, map)) < 0)
			return ret;
	}
	return numa_maps_totals_add(b->out, map);
}

void
linux_numa_maps_free(struct linux_numa_maps *maps)
{
	if (maps == NULL)
		return;
	for (size_t i = 0; i < maps->nr_maps; i++)
		free(maps->maps[i].file);
	free(maps->maps);
	free(maps->node_pages);
	free(maps->policy_nodes);
	free(maps->node_bytes);
	memset(maps, 0, sizeof(*maps));
}

int
linux_numa_maps_parse(const char *buf, size_t len, struct linux_numa_maps *out)
{
	struct numa_maps_build b = {.out = out};
	struct linux_scan s, line;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (len > 0 && buf[len - 1] != '\n')
		return -EINVAL;
	linux_scan_init(&s, buf, len);
	while (linux_scan_line(&s, &line)) {
		struct linux_numa_map *map;

		if (out->nr_maps == LINUX_NUMA_MAPS_MAX_MAPS) {
			ret = -EFBIG;
			break;
		}
		util_array_reserve((void **)&out->maps, &b.cap_maps, out->nr_maps + 1,
		                   sizeof(*out->maps));
		map = &out->maps[out->nr_maps++];
		memset(map, 0, sizeof(*map));
		if ((ret = numa_maps_line_parse(&line, &b, map)) < 0)
			break;
	}
	if (ret < 0)
		linux_numa_maps_free(out);
	return ret;
}

int
linux_numa_maps_read(const char *root, int pid, struct linux_numa_maps *out)
{
	char *data;
	size_t len;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = linux_file_read(root, LINUX_NUMA_MAPS_MAX_BYTES, &data, &len, "/proc/%d/numa_maps",
	                      pid);
	if (ret < 0)
		return ret;
	ret = linux_numa_maps_parse(data, len, out);
	free(data);
	return ret;
}
