/*
 * fuzz_scenario.c - libFuzzer target for the simulator's scenario loader
 * (host/sim/scenario.c, scenario_json.c): strict JSON, then every field, the cells and the
 * embedded policy XML.
 *
 * A scenario that loads must be one the simulator can run as it is: every field in its range,
 * cells that partition each VM's vCPUs, distances 10 on the diagonal.  Built by `make fuzz`
 * with tests/fuzz/scenario.dict (docs/fuzzing.md); the gcc build replays
 * tests/fuzz/corpus/scenario/ (tests/unit/test_fuzz_replay_policy.c).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/sim/scenario.h"
#include "tests/fuzz/fuzz_util.h"

int fuzz_scenario_run(const uint8_t *data, size_t size);

static void
fuzz_scenario_vm_check(const struct scenario *scn, const struct scn_vm *vm)
{
	uint8_t owned[SCN_MAX_VCPUS] = {0};
	double mem = 0;

	if (vm->name[0] == '\0' || memchr(vm->name, '\0', sizeof(vm->name)) == NULL ||
	    vm->vcpus < 1 || vm->vcpus > SCN_MAX_VCPUS || !(vm->memory_gib > 0) ||
	    vm->nr_cells < 0 || vm->nr_cells > SCN_MAX_NODES ||
	    vm->first_touch_node >= scn->host.nodes || !(vm->util >= 0 && vm->util <= 1) ||
	    !(vm->mem_intensity >= 0 && vm->mem_intensity <= 1) || !(vm->start_s >= 0))
		abort();
	for (int c = 0; c < vm->nr_cells; c++) {
		const struct scn_cell *cell = &vm->cells[c];

		if (cell->nr_vcpus < 1 || !(cell->memory_gib > 0))
			abort();
		for (int i = 0; i < cell->nr_vcpus; i++) {
			int v = cell->vcpus[i];

			if (v < 0 || v >= vm->vcpus || owned[v]++)
				abort(); /* a vCPU outside the VM, or in two cells */
		}
		mem += cell->memory_gib;
	}
	for (int v = 0; vm->nr_cells > 0 && v < vm->vcpus; v++)
		if (!owned[v])
			abort(); /* a vCPU in no cell */
	if (vm->nr_cells > 0 && fabs(mem - vm->memory_gib) > 1e-3 * vm->memory_gib)
		abort();
	if (vm->policy_xml != NULL) {
		struct vm_policy again;
		char err[256];

		if (vm_policy_parse_xml(vm->policy_xml, strlen(vm->policy_xml), &again, err,
		                        sizeof(err)) != 0 ||
		    again.mode != vm->policy.mode || again.nodes != vm->policy.nodes ||
		    (vm->policy.nodes != NODEMASK_ALL &&
		     (scn->host.nodes < 64 && vm->policy.nodes >> scn->host.nodes) != 0))
			abort(); /* the kept XML is the policy, on the host's nodes */
	}
}

static void
fuzz_scenario_check(const struct scenario *scn)
{
	const struct scn_host *h = &scn->host;

	if (scn->name[0] == '\0' || memchr(scn->name, '\0', sizeof(scn->name)) == NULL ||
	    h->nodes < 1 || h->nodes > SCN_MAX_NODES || h->cpus_per_node < 1 ||
	    !(h->memory_per_node_gib > 0) || h->distances == NULL || scn->nr_vms < 1 ||
	    scn->nr_vms > SCN_MAX_VMS || !(scn->duration_s > 0) ||
	    !(scn->duration_s <= SCN_MAX_DURATION_S) || !(scn->balancer_start_s >= 0) ||
	    !(scn->balancer_start_s < scn->duration_s))
		abort();
	for (int i = 0; i < h->nodes; i++)
		for (int j = 0; j < h->nodes; j++) {
			int d = h->distances[i * h->nodes + j];

			if (i == j ? d != 10 : (d <= 10 || d > 255))
				abort();
		}
	for (int v = 0; v < scn->nr_vms; v++) {
		fuzz_scenario_vm_check(scn, &scn->vms[v]);
		for (int w = 0; w < v; w++)
			if (strcmp(scn->vms[v].name, scn->vms[w].name) == 0)
				abort(); /* names are unique */
	}
}

int
fuzz_scenario_run(const uint8_t *data, size_t size)
{
	char *text = fuzz_strndup(data, size), err[512];
	struct scenario *scn = (struct scenario *)&err; /* must be reset */
	int ret;

	memset(err, 'x', sizeof(err));
	ret = scenario_load_string(text, &scn, err, sizeof(err));
	if (ret != 0 && ret != -EINVAL)
		abort();
	if (ret == 0 && scn != NULL)
		fuzz_scenario_check(scn);
	else if (ret == 0 || scn != NULL || !fuzz_msg_ok(err, sizeof(err)) || err[0] == '\0')
		abort(); /* a refusal says why and returns nothing */
	scenario_free(scn);
	free(text);
	return ret;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_scenario_run(data, size);
	return 0;
}
#endif
