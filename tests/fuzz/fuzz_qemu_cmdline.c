/*
 * fuzz_qemu_cmdline.c - libFuzzer target for what vnumad reads from a QEMU command line: the
 * vNUMA cells of -numa, -object and -m (host/linux/qemu_numa.c), the -name and -m values and
 * vCPU thread names (host/linux/discover.c), and, given a /proc/PID/maps too, where QEMU
 * mapped each cell's memory backend (host/linux/maps.c, ram_layout.c).
 *
 * Input: the command line one argument per line (as the .args files of
 * tests/fixtures/qemu-numa/), or
 * files in the form of tests/fuzz/fuzz_util.h: "%%0 cmdline" (one argument per line) and
 * "%% maps".  Built by `make fuzz` (docs/fuzzing.md); the gcc build replays
 * tests/fuzz/corpus/qemu_cmdline/ (tests/unit/test_fuzz_replay_host.c).  Returns what
 * linux_qemu_numa_parse() returned.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/linux/discover.h"
#include "host/linux/procfs.h"
#include "host/linux/qemu_numa.h"
#include "host/linux/ram_layout.h"
#include "tests/fuzz/fuzz_qemu_check.h"
#include "tests/fuzz/fuzz_util.h"

#define FUZZ_QEMU_ARGS_MAX 4096 /* arguments read from one input */

int fuzz_qemu_cmdline_run(const uint8_t *data, size_t size);

/* The per-value parsers, on every argument. */
static void
fuzz_qemu_cmdline_values(const struct fuzz_argv *args)
{
	for (int i = 0; i < args->argc; i++) {
		const char *a = args->argv[i];
		char name[LINUX_VM_NAME_MAX];
		uint64_t v = 0;
		int ret;

		memset(name, 'x', sizeof(name));
		if (linux_qemu_name_parse(a, name) != (name[0] != '\0') ||
		    memchr(name, '\0', sizeof(name)) == NULL)
			abort();
		if ((ret = linux_qemu_mem_parse(a, &v)) != 0 && ret != -EINVAL)
			abort();
		if ((ret = linux_qemu_size_parse(a, 1, &v)) != 0 && ret != -EINVAL)
			abort();
		if ((ret = linux_qemu_size_parse(a, (uint64_t)1 << 20, &v)) != 0 && ret != -EINVAL)
			abort();
		if (linux_vcpu_comm_index(a) < -1)
			abort();
	}
}

/* The mappings, and where each cell's backend is among them for every mapping order. */
static void
fuzz_qemu_cmdline_maps(struct linux_qemu_numa *numa, const struct fuzz_file *maps)
{
	static const enum linux_mmap_order orders[] = {LINUX_MMAP_TOP_DOWN, LINUX_MMAP_BOTTOM_UP,
	                                               LINUX_MMAP_UNKNOWN};
	const char *text = (const char *)maps->data;
	struct linux_vmas vmas;
	uint64_t starts[8], ends[8];
	int ret = linux_vmas_parse(text, maps->len, &vmas), n = 0;

	if (ret != 0 && ret != -EINVAL && ret != -EFBIG)
		abort();
	for (size_t i = 0; i < vmas.nr; i++)
		if (vmas.vmas[i].start >= vmas.vmas[i].end ||
		    (i > 0 && vmas.vmas[i].start < vmas.vmas[i - 1].end))
			abort(); /* ascending, apart */
	for (size_t i = 0; i < vmas.nr && n < 8; i += 1 + vmas.nr / 8)
		starts[n++] = vmas.vmas[i].start;
	/* The other reader of the same file agrees on every end. */
	if (linux_maps_ends_parse(text, maps->len, starts, n, ends) != ret)
		abort();
	for (int i = 0; ret == 0 && i < n; i++)
		if (ends[i] == 0 || ends[i] <= starts[i])
			abort();
	for (size_t o = 0; ret == 0 && o < sizeof(orders) / sizeof(orders[0]); o++)
		fuzz_qemu_layout_check(numa, &vmas, linux_ram_layout_find(numa, &vmas, orders[o]));
	linux_vmas_free(&vmas);
}

int
fuzz_qemu_cmdline_run(const uint8_t *data, size_t size)
{
	struct fuzz_file files[FUZZ_FILES_MAX];
	const struct fuzz_file *cmdline = NULL, *maps = NULL;
	int nr = fuzz_files_split(data, size, files, FUZZ_FILES_MAX), ret;
	struct linux_qemu_numa numa;
	struct fuzz_argv args;

	for (int i = 0; i < nr; i++) {
		if (strcmp(files[i].path, "cmdline") == 0 || (i == 0 && nr == 1))
			cmdline = &files[i];
		else if (strcmp(files[i].path, "maps") == 0)
			maps = &files[i];
	}
	/* One argument per line, but a "%% cmdline" file is NUL-separated as /proc has it. */
	if (cmdline != NULL)
		fuzz_argv_split(cmdline->data, cmdline->len,
		                cmdline->path[0] != '\0' && !cmdline->nul_lines ? '\0' : '\n', NULL,
		                FUZZ_QEMU_ARGS_MAX, &args);
	else
		fuzz_argv_split((const uint8_t *)"", 0, '\n', NULL, 0, &args);
	ret = linux_qemu_numa_parse(args.argc, args.argv, &numa);
	if ((ret != 0 && ret != -EINVAL) || (ret < 0 && numa.error[0] == '\0'))
		abort(); /* no cells, and why */
	fuzz_qemu_numa_check(&numa);
	fuzz_qemu_cmdline_values(&args);
	if (maps != NULL)
		fuzz_qemu_cmdline_maps(&numa, maps);
	linux_qemu_numa_free(&numa);
	fuzz_argv_free(&args);
	return ret;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_qemu_cmdline_run(data, size);
	return 0;
}
#endif
