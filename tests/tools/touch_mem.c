/*
 * touch_mem - a test tool: keep writing to a block of anonymous memory.
 *
 *   touch_mem [-m MIB] [-s SECONDS]
 *
 * Maps MIB MiB of private anonymous memory (default 64), then writes one byte in every page,
 * pass after pass, for SECONDS seconds (default 10; 0 runs until killed).  A thread that keeps
 * touching its pages is what the kernel's NUMA balancing samples with hinting faults, so the
 * system tests run it under numactl and watch /proc/PID/task/TID/sched.  Prints "ready" once
 * every page has been touched (all of it is then resident), and the number of passes at the
 * end.  Exit status 0, 1 when the memory cannot be had, 2 on a usage error.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Default size of the block, MiB: big enough to span many NUMA scan chunks, small enough
 * for a 512 MiB emulated node. */
#define TOUCH_MEM_MIB_DEFAULT 64
/* Default run time, seconds: a few kernel NUMA scan periods (1 s minimum each). */
#define TOUCH_MEM_SECONDS_DEFAULT 10
/* Largest block accepted, MiB: a typo should not try to map a terabyte. */
#define TOUCH_MEM_MIB_MAX (1u << 20)

/* Parse a whole decimal number in [0, max] into *out; 0 or -EINVAL. */
static int
touch_mem_parse(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static double
touch_mem_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Write one byte in each page of the block; the value changes every pass. */
static void
touch_mem_pass(volatile uint8_t *block, size_t size_b, size_t page_b, uint8_t value)
{
	for (size_t off = 0; off < size_b; off += page_b)
		block[off] = value;
}

static int
touch_mem_usage(void)
{
	fprintf(stderr, "usage: touch_mem [-m MIB] [-s SECONDS]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	unsigned long size_mib = TOUCH_MEM_MIB_DEFAULT, run_s = TOUCH_MEM_SECONDS_DEFAULT;
	unsigned long passes = 0;
	size_t size_b, page_b = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *block;
	double end_s;
	int c;

	while ((c = getopt(argc, argv, "m:s:")) != -1) {
		if (c == 'm' && touch_mem_parse(optarg, TOUCH_MEM_MIB_MAX, &size_mib) == 0 &&
		    size_mib > 0)
			continue;
		if (c == 's' && touch_mem_parse(optarg, UINT32_MAX, &run_s) == 0)
			continue;
		return touch_mem_usage();
	}
	if (optind != argc)
		return touch_mem_usage();

	size_b = (size_t)size_mib << 20;
	block = mmap(NULL, size_b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (block == MAP_FAILED) {
		fprintf(stderr, "touch_mem: cannot map %lu MiB: %s\n", size_mib, strerror(errno));
		return 1;
	}
	end_s = touch_mem_now_s() + (double)run_s;
	touch_mem_pass(block, size_b, page_b, 1);
	printf("ready\n");
	fflush(stdout);
	while (run_s == 0 || touch_mem_now_s() < end_s) {
		passes++;
		touch_mem_pass(block, size_b, page_b, (uint8_t)passes);
	}
	printf("passes %lu\n", passes);
	munmap(block, size_b);
	return 0;
}
