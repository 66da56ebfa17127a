/*
 * fuzz_vm_policy.c - libFuzzer target for the per-VM policy element (policy/vm_policy.c),
 * which comes from libvirt metadata, policy files and `vnumactl policy`, and, on the same
 * input as a string, the node and CPU list parser idlist_parse (policy/idlist.c).
 *
 * A policy that parses must format back to XML that parses to the same policy; a refusal
 * leaves the defaults and a message.  Built by `make fuzz` (docs/fuzzing.md); the gcc build
 * replays tests/fuzz/corpus/vm_policy/ (tests/unit/test_fuzz_replay_policy.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/idlist.h"
#include "policy/util.h"
#include "policy/vm_policy.h"
#include "tests/fuzz/fuzz_util.h"

int fuzz_vm_policy_run(const uint8_t *data, size_t size);

static bool
fuzz_vm_policy_equal(const struct vm_policy *a, const struct vm_policy *b)
{
	return a->mode == b->mode && a->nodes == b->nodes && a->placement == b->placement &&
	       a->migrate == b->migrate && a->rate_kib_s == b->rate_kib_s &&
	       a->priority == b->priority && strcmp(a->group, b->group) == 0;
}

/* What every parsed policy satisfies, and that it survives formatting. */
static void
fuzz_vm_policy_check(const struct vm_policy *pol)
{
	static const int host_nodes[] = {0, 1, 2, 4, 63, 64};
	struct vm_policy again;
	char err[256], *xml;

	if ((unsigned)pol->mode > VM_POLICY_MODE_OFF ||
	    (unsigned)pol->placement > VM_POLICY_PLACEMENT_CELLS || pol->nodes == 0 ||
	    pol->priority < 0 || pol->priority > VM_POLICY_PRIORITY_MAX ||
	    memchr(pol->group, '\0', sizeof(pol->group)) == NULL)
		abort();
	xml = vm_policy_format_xml(pol);
	if (vm_policy_parse_xml(xml, strlen(xml), &again, err, sizeof(err)) != 0 ||
	    !fuzz_vm_policy_equal(pol, &again))
		abort();
	free(xml);
	for (size_t i = 0; i < sizeof(host_nodes) / sizeof(host_nodes[0]); i++) {
		int ret = vm_policy_check_nodes(pol, host_nodes[i], err, sizeof(err));

		if ((ret != 0 && ret != -EINVAL) || (ret < 0 && err[0] == '\0'))
			abort();
	}
}

/*
 * idlist_parse on the input, under each flag set and limit: an error has a message, a set
 * holds only ids below its limit and, with at most 64 ids, formats back to itself through
 * nodemask_parse.
 */
static void
fuzz_vm_policy_idlist(const uint8_t *data, size_t size)
{
	static const int limits[] = {1, 8, 63, 64, 1000, 65536};
	static const unsigned flags[] = {0, IDLIST_EMPTY_OK, IDLIST_LIBVIRT,
	                                 IDLIST_EMPTY_OK | IDLIST_LIBVIRT | IDLIST_CPUS};
	char buf[NODEMASK_STR_MAX], err[IDLIST_ERR_MAX];

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
			struct idlist set;
			uint64_t mask = 0, again = 0;
			int ret;

			err[0] = '\0';
			ret = idlist_parse((const char *)data, size, limits[i], flags[f], &set, err,
			                   sizeof(err));
			if ((ret != 0 && ret != -EINVAL && ret != -EFBIG) ||
			    (ret < 0 && (err[0] == '\0' || set.words != NULL)))
				abort();
			if (ret < 0)
				continue;
			if (idlist_next(&set, 0) >= limits[i] ||
			    (idlist_count(&set) == 0 && !(flags[f] & IDLIST_EMPTY_OK)))
				abort();
			for (int id = idlist_next(&set, 0); id >= 0 && id < UTIL_MAX_NODES;
			     id = idlist_next(&set, id + 1))
				mask |= nodemask_of(id);
			if (mask != 0 && idlist_next(&set, UTIL_MAX_NODES) < 0) {
				nodemask_format(mask, buf, sizeof(buf));
				if (nodemask_parse(buf, 0, &again, err, sizeof(err)) != 0 ||
				    again != mask)
					abort();
			}
			idlist_free(&set);
		}
	}
}

int
fuzz_vm_policy_run(const uint8_t *data, size_t size)
{
	struct vm_policy pol, def;
	char err[256];
	int ret;

	memset(err, 'x', sizeof(err));
	ret = vm_policy_parse_xml((const char *)data, size, &pol, err, sizeof(err));
	vm_policy_init_default(&def);
	if (ret != 0 && ret != -EINVAL)
		abort();
	if (!fuzz_msg_ok(err, sizeof(err)) || !fuzz_utf8_valid(err, strlen(err)))
		abort(); /* always a message, cut between characters */
	if (ret == 0)
		fuzz_vm_policy_check(&pol);
	else if (err[0] == '\0' || !fuzz_vm_policy_equal(&pol, &def))
		abort(); /* a refusal says why and leaves the defaults */
	fuzz_vm_policy_idlist(data, size);
	return ret;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_vm_policy_run(data, size);
	return 0;
}
#endif
