/*
 * fuzz_lv_domain.c - libFuzzer target for the libvirt domain XML parser
 * (host/libvirt/lv_domain.c: cells, pins, numatune, our metadata) and, on the same input, the
 * /proc/<pid>/maps reader (host/linux/maps.c).
 *
 * Built and run by `make fuzz` (docs/fuzzing.md; `make fuzz FUZZ_TARGETS=lv_domain`).
 *
 * Add what it finds to tests/fuzz/corpus/lv_domain/ ("ok-*" must parse, "einval-*" must be
 * refused with -EINVAL); the gcc build replays that directory in every ctest run
 * (tests/unit/test_fuzz_replay_libvirt.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/libvirt/lv_domain.h"
#include "host/linux/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every parsed set ascends strictly and every cell's RAM starts where the previous ended. */
static void
fuzz_lv_domain_check(const struct lv_domain *d)
{
	uint64_t start = 0;

	for (int c = 0; c < d->nr_cells; c++) {
		if (d->cells[c].start_mib != start)
			abort();
		start += d->cells[c].memory_mib;
		for (int i = 1; i < d->cells[c].vcpus.nr; i++)
			if (d->cells[c].vcpus.ids[i] <= d->cells[c].vcpus.ids[i - 1])
				abort();
	}
	if (d->name == NULL || d->nr_vcpupins < 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct lv_domain d;
	char err[256];
	uint64_t starts[2] = {0x1000, 0x7f0000000000}, ends[2];
	int ret;

	memset(&d, 0, sizeof(d));
	ret = lv_domain_parse(text, size, &d, err, sizeof(err));
	if (ret != 0 && ret != -EINVAL)
		abort();
	if (ret == 0)
		fuzz_lv_domain_check(&d);
	else if (err[0] == '\0')
		abort(); /* every refusal says why */
	lv_domain_free(&d);
	ret = linux_maps_ends_parse(text, size, starts, 2, ends);
	if (ret != 0 && ret != -EINVAL)
		abort();
	return 0;
}
