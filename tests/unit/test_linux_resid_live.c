/*
 * test_linux_resid_live.c - the page sampler of host/linux/residency.c run on this very
 * process with real move_pages(2), its estimate and error bound checked against numa_maps
 * (issue 14: "the page-sample estimator with its error bound checked against a known layout
 * on the emulated 2-node host").
 *
 * 64 MiB of 4 KiB pages are bound block by block (mbind MPOL_BIND) to a known layout over the
 * machine's memory nodes: on one node all of it there; on two or more, blocks of 1 to 63 pages
 * drawn from a seeded PRNG, each on the second node with probability 3/8, so that the
 * sampler's strata (32 pages each) do not line up with them (with aligned blocks the
 * stratified sample is exact, and the bound is never tried).
 * The truth is /proc/self/numa_maps summed over the buffer's mappings.  For SEEDS seeds, the
 * sample's figure must lie within its stated bound of the truth on every node in all but
 * MAX_OUTSIDE_PERMILLE of the checks (z = 3 promises about 3 per thousand; everything here
 * is seeded, so a run that passes always passes), and its mean error must be well inside
 * the bound.  A never-touched buffer reads as absent.  On one node this runs in the unit
 * suite; test_numa_smoke.sh runs it again inside the emulated 2-node host, where the
 * two-node layout is what is checked (it prints "resid-live: nodes=2 ...").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/linux/residency.h"

#define MIB ((uint64_t)1024 * 1024)
/* The buffer, and the most pages of one block its layout binds. */
#define LIVE_LEN_BYTES       (64 * MIB)
#define LIVE_BLOCK_MAX_PAGES 63
/* Seeds drawn, and the share of (seed, node) checks allowed outside the bound. */
#define SEEDS                200
#define MAX_OUTSIDE_PERMILLE 20
/* MPOL_BIND (linux/mempolicy.h), for mbind(2) without libnuma. */
#define LIVE_MPOL_BIND 2

/* Memory nodes of this machine, lowest first, into nodes[]; how many. */
static int
live_mem_nodes(int *nodes, int max)
{
	int nr = 0;

	for (int n = 0; n < LINUX_RESID_MAX_NODES && nr < max; n++) {
		char path[96];
		FILE *f;
		unsigned long long kb = 0;
		char line[256];

		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", n);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL)
			if (sscanf(line, "Node %*d MemTotal: %llu kB", &kb) == 1)
				break;
		fclose(f);
		if (kb > 0)
			nodes[nr++] = n;
	}
	return nr;
}

/* A small seeded PRNG (xorshift64) for the layout. */
static uint64_t
live_rand(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* Bind [p, p + len) to node; asserts the kernel took it. */
static void
live_bind(char *p, uint64_t len, int node)
{
	unsigned long mask[LINUX_RESID_MAX_NODES / (8 * sizeof(unsigned long)) + 1] = {0};

	mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
	assert_int_equal(syscall(SYS_mbind, p, len, LIVE_MPOL_BIND, mask, 8 * sizeof(mask) + 1, 0),
	                 0);
}

/* Lay buf out as the file comment says; KiB bound to the second node. */
static uint64_t
live_layout(char *buf, uint64_t page_bytes, const int *nodes, int nr)
{
	uint64_t pages = LIVE_LEN_BYTES / page_bytes, state = 0x5eed5eedull, second_kib = 0;

	for (uint64_t at = 0; at < pages;) {
		uint64_t len = 1 + live_rand(&state) % LIVE_BLOCK_MAX_PAGES;
		int node = nr > 1 && live_rand(&state) % 8 < 3 ? nodes[1] : nodes[0];

		if (len > pages - at)
			len = pages - at;
		live_bind(buf + at * page_bytes, len * page_bytes, node);
		if (nr > 1 && node == nodes[1])
			second_kib += len * page_bytes / 1024;
		at += len;
	}
	return second_kib;
}

/* KiB of [start, start + len) per node from /proc/self/numa_maps, into kib[]; 0 or -errno. */
static int
live_numa_maps_kib(uint64_t start, uint64_t len, uint64_t *kib)
{
	FILE *f = fopen("/proc/self/numa_maps", "r");
	char line[4096];

	if (f == NULL)
		return -errno;
	memset(kib, 0, LINUX_RESID_MAX_NODES * sizeof(*kib));
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long long addr = strtoull(line, NULL, 16), page_kib = 4;
		uint64_t pages[LINUX_RESID_MAX_NODES] = {0};
		char *save = NULL;

		if (addr < start || addr >= start + len)
			continue;
		for (char *t = strtok_r(line, " \n", &save); t != NULL;
		     t = strtok_r(NULL, " \n", &save)) {
			unsigned node;
			unsigned long long v;

			if (sscanf(t, "N%u=%llu", &node, &v) == 2 && node < LINUX_RESID_MAX_NODES)
				pages[node] = v;
			else if (sscanf(t, "kernelpagesize_kB=%llu", &v) == 1)
				page_kib = v;
		}
		for (int n = 0; n < LINUX_RESID_MAX_NODES; n++)
			kib[n] += pages[n] * page_kib;
	}
	fclose(f);
	return 0;
}

static void
test_sample_against_numa_maps(void **state)
{
	uint64_t page_bytes = (uint64_t)sysconf(_SC_PAGESIZE), truth[LINUX_RESID_MAX_NODES];
	int k = LINUX_RESIDENCY_SAMPLE_PAGES, nodes[LINUX_RESID_MAX_NODES], nr;
	uint64_t *addrs = calloc((size_t)k, sizeof(uint64_t));
	int *status = calloc((size_t)k, sizeof(int));
	struct linux_ram_range ram;
	struct linux_resid_figure fig;
	int checks = 0, outside = 0;
	uint64_t second_kib;
	double err_sum = 0, bound_sum = 0, worst = 0;
	char *buf;

	(void)state;
	nr = live_mem_nodes(nodes, LINUX_RESID_MAX_NODES);
	assert_true(nr >= 1);
	buf =
	    mmap(NULL, LIVE_LEN_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(buf != MAP_FAILED);
	(void)madvise(buf, LIVE_LEN_BYTES, MADV_NOHUGEPAGE); /* 4 KiB pages, as blocks bind */
	second_kib = live_layout(buf, page_bytes, nodes, nr);
	memset(buf, 1, LIVE_LEN_BYTES);
	assert_int_equal(live_numa_maps_kib((uint64_t)(uintptr_t)buf, LIVE_LEN_BYTES, truth), 0);
	{
		uint64_t sum = 0;

		for (int n = 0; n < LINUX_RESID_MAX_NODES; n++)
			sum += truth[n];
		assert_int_equal(sum, LIVE_LEN_BYTES / 1024); /* all of it resident, counted once */
	}
	if (nr > 1) /* the layout holds (binding is strict), about 3/8 on the second node */
		assert_int_equal(truth[nodes[1]], second_kib);

	ram = (struct linux_ram_range){(uint64_t)(uintptr_t)buf, LIVE_LEN_BYTES};
	for (int seed = 1; seed <= SEEDS; seed++) {
		assert_int_equal(
		    linux_resid_sample_plan(&ram, 1, page_bytes, k, (uint64_t)seed, addrs), k);
		assert_int_equal(linux_resid_query_live(NULL, getpid(), addrs, (size_t)k, status),
		                 0);
		linux_resid_sample_estimate(status, k, false, LIVE_LEN_BYTES, nodes[nr - 1] + 1,
		                            LINUX_RESIDENCY_SAMPLE_Z, &fig);
		assert_true(fig.err_kib > 0);
		for (int i = 0; i < nr; i++) {
			int n = nodes[i];
			double err = fabs((double)fig.kib[n] - (double)truth[n]);

			checks++;
			outside += err > (double)fig.err_kib;
			err_sum += err;
			bound_sum += (double)fig.err_kib;
			if (err / (double)fig.err_kib > worst)
				worst = err / (double)fig.err_kib;
		}
	}
	printf("resid-live: nodes=%d truth", nr);
	for (int i = 0; i < nr; i++)
		printf(" N%d=%llu", nodes[i], (unsigned long long)truth[nodes[i]] / 1024);
	printf(" MiB; %d seeds x %d pages: %d of %d node checks outside the bound, mean error "
	       "%.2f MiB, mean bound %.2f MiB, worst error/bound %.2f\n",
	       SEEDS, k, outside, checks, err_sum / checks / 1024, bound_sum / checks / 1024,
	       worst);
	assert_true(outside * 1000 <= checks * MAX_OUTSIDE_PERMILLE);
	/* the bound is a bound, not a guess: the mean error well inside it */
	assert_true(err_sum < bound_sum / 2);

	/* never touched: absent, and an estimate of nothing */
	assert_int_equal(munmap(buf, LIVE_LEN_BYTES), 0);
	buf =
	    mmap(NULL, LIVE_LEN_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(buf != MAP_FAILED);
	ram = (struct linux_ram_range){(uint64_t)(uintptr_t)buf, LIVE_LEN_BYTES};
	assert_int_equal(linux_resid_sample_plan(&ram, 1, page_bytes, k, 7, addrs), k);
	assert_int_equal(linux_resid_query_live(NULL, getpid(), addrs, (size_t)k, status), 0);
	for (int i = 0; i < k; i++)
		assert_int_equal(status[i], LINUX_RESID_PAGE_ABSENT);
	linux_resid_sample_estimate(status, k, false, LIVE_LEN_BYTES, 1, LINUX_RESIDENCY_SAMPLE_Z,
	                            &fig);
	for (int n = 0; n < fig.nr_nodes; n++)
		assert_int_equal(fig.kib[n], 0);
	munmap(buf, LIVE_LEN_BYTES);
	free(addrs);
	free(status);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sample_against_numa_maps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
