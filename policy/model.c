/*
 * model.c - snapshot allocation and plan building.
 */
#include "policy/model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const host_cap_names[HOST_CAP_NR] = {
    "pin",           "move-pages",       "bind-at-start",   "bind-live",    "vm-sampling",
    "scan-tunables", "kernel-balancing", "faults-per-pass", "range-faults",
};

const char *
host_cap_name(int i)
{
	return i >= 0 && i < HOST_CAP_NR ? host_cap_names[i] : "?";
}

char *
host_caps_format(unsigned caps, char *buf, size_t len)
{
	size_t used = 0;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	for (int i = 0; i < HOST_CAP_NR && used < len; i++)
		if (caps & (1u << i))
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "",
			                         host_cap_names[i]);
	return buf;
}

_Static_assert(HOST_CAPS_ALL_LEVERS == (1u << HOST_LEVER_NR) - 1,
               "the levers are the capability bits 0..HOST_LEVER_NR-1");

const char *
host_lever_state_name(enum host_lever_state state)
{
	switch (state) {
	case HOST_LEVER_PRESENT:
		return "present";
	case HOST_LEVER_ABSENT:
		return "absent";
	case HOST_LEVER_REFUSED:
		return "refused";
	}
	return "?";
}

void
host_levers_from_caps(unsigned caps, struct host_lever *out)
{
	for (int i = 0; i < HOST_LEVER_NR; i++) {
		out[i].state = (caps & (1u << i)) ? HOST_LEVER_PRESENT : HOST_LEVER_ABSENT;
		snprintf(out[i].reason, sizeof(out[i].reason), "not probed");
	}
}

struct snapshot *
snapshot_new(int nr_nodes, int nr_cpus, int nr_vms, const int *vm_vcpus)
{
	struct snapshot *snap = xcalloc(1, sizeof(*snap));
	size_t nr_vcpus = 0, v = 0;

	for (int i = 0; i < nr_vms; i++)
		nr_vcpus += (size_t)vm_vcpus[i];
	snap->nr_nodes = nr_nodes;
	snap->nodes = xcalloc((size_t)nr_nodes, sizeof(*snap->nodes));
	snap->distance = xcalloc((size_t)nr_nodes * (size_t)nr_nodes, sizeof(int));
	snap->nr_cpus = nr_cpus;
	snap->cpu_node = xcalloc((size_t)nr_cpus, sizeof(int));
	snap->nr_vms = nr_vms;
	snap->vms = xcalloc((size_t)nr_vms, sizeof(*snap->vms));
	snap->vcpu_store = xcalloc(nr_vcpus, sizeof(*snap->vcpu_store));
	snap->fault_store = xcalloc(nr_vcpus * 2 * (size_t)nr_nodes, sizeof(uint64_t));
	snap->resident_store = xcalloc((size_t)nr_vms * (size_t)nr_nodes, sizeof(uint64_t));
	for (int i = 0; i < nr_vms; i++) {
		struct snap_vm *vm = &snap->vms[i];

		vm->nr_vcpus = vm_vcpus[i];
		vm->vcpus = &snap->vcpu_store[v];
		vm->resident_mib = &snap->resident_store[(size_t)i * (size_t)nr_nodes];
		vm_policy_init_default(&vm->policy);
		vm->policy_ok = true;
		vm->host_nodes = NODEMASK_ALL;
		for (int c = 0; c < vm->nr_vcpus; c++, v++) {
			uint64_t *f = &snap->fault_store[v * 2 * (size_t)nr_nodes];

			vm->vcpus[c].faults_private = f;
			vm->vcpus[c].faults_shared = f + nr_nodes;
			vm->vcpus[c].allowed_nodes = NODEMASK_ALL;
			vm->vcpus[c].index = c;
		}
	}
	return snap;
}

static void
snapshot_vm_cells_free(struct snap_vm *vm)
{
	for (int c = 0; c < vm->nr_cells && vm->cells != NULL; c++) {
		free(vm->cells[c].resident_mib);
		free(vm->cells[c].resident_sure_mib);
	}
	free(vm->cells);
}

void
snapshot_cell_resident_alloc(struct snap_cell *cell, int nr_nodes)
{
	free(cell->resident_mib);
	free(cell->resident_sure_mib);
	cell->resident_mib = xcalloc((size_t)nr_nodes + 1, sizeof(uint64_t));
	cell->resident_sure_mib = xcalloc((size_t)nr_nodes + 1, sizeof(uint64_t));
}

void
snapshot_vm_set_cells(struct snap_vm *vm, int nr_cells)
{
	snapshot_vm_cells_free(vm);
	free(vm->vcpu_cell);
	vm->nr_cells = nr_cells;
	vm->cells = nr_cells ? xcalloc((size_t)nr_cells, sizeof(*vm->cells)) : NULL;
	vm->vcpu_cell = nr_cells ? xcalloc((size_t)vm->nr_vcpus, sizeof(int)) : NULL;
}

bool
snap_vm_by_cells(const struct snapshot *snap, const struct snap_vm *vm)
{
	if (vm->nr_cells < 2)
		return false;
	if (vm->policy.placement == VM_POLICY_PLACEMENT_CELLS)
		return true;
	for (int n = 0; n < snap->nr_nodes; n++)
		if (vm->mem_mib <= snap->nodes[n].mem_total_mib)
			return false;
	return true;
}

void
snapshot_vm_remove(struct snapshot *snap, int i)
{
	snapshot_vm_cells_free(&snap->vms[i]);
	free(snap->vms[i].vcpu_cell);
	memmove(&snap->vms[i], &snap->vms[i + 1],
	        (size_t)(snap->nr_vms - i - 1) * sizeof(snap->vms[0]));
	snap->nr_vms--;
}

void
snapshot_free(struct snapshot *snap)
{
	if (snap == NULL)
		return;
	for (int i = 0; i < snap->nr_vms; i++) {
		snapshot_vm_cells_free(&snap->vms[i]);
		free(snap->vms[i].vcpu_cell);
	}
	free(snap->nodes);
	free(snap->distance);
	free(snap->cpu_node);
	free(snap->vms);
	free(snap->vcpu_store);
	free(snap->fault_store);
	free(snap->resident_store);
	free(snap);
}

void
plan_init(struct plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	plan->next_call_s = 1.0;
}

void
plan_reset(struct plan *plan)
{
	plan->nr_pins = plan->nr_moves = plan->nr_binds = plan->nr_samplings = 0;
	plan->next_call_s = 1.0;
}

void
plan_free(struct plan *plan)
{
	free(plan->pins);
	free(plan->moves);
	free(plan->binds);
	free(plan->samplings);
	memset(plan, 0, sizeof(*plan));
}

void
plan_reason_set(struct plan_reason *why, const char *rule, double gain, const char *fmt, ...)
{
	va_list ap;

	snprintf(why->rule, sizeof(why->rule), "%s", rule);
	why->gain = gain;
	va_start(ap, fmt);
	vsnprintf(why->text, sizeof(why->text), fmt, ap);
	va_end(ap);
}

struct plan_pin *
plan_add_pin(struct plan *plan, int vm_id, int vcpu, uint64_t nodes)
{
	struct plan_pin *pin;

	util_array_reserve((void **)&plan->pins, &plan->cap_pins, plan->nr_pins + 1, sizeof(*pin));
	pin = &plan->pins[plan->nr_pins++];
	memset(pin, 0, sizeof(*pin));
	pin->vm_id = vm_id;
	pin->vcpu = vcpu;
	pin->nodes = nodes;
	pin->kind = PLAN_PIN_MOVE;
	pin->flip_with = -1;
	pin->to_node = -1;
	return pin;
}

struct plan_pin *
plan_add_flip(struct plan *plan, int vm_a, int vcpu_a, int node_a, int vm_b, int vcpu_b, int node_b)
{
	size_t ia = plan->nr_pins;
	struct plan_pin *a, *b;

	plan_add_pin(plan, vm_a, vcpu_a, nodemask_of(node_a));
	plan_add_pin(plan, vm_b, vcpu_b, nodemask_of(node_b));
	a = &plan->pins[ia];
	b = &plan->pins[ia + 1];
	a->kind = b->kind = PLAN_PIN_FLIP;
	a->flip_with = (int)ia + 1;
	b->flip_with = (int)ia;
	return a;
}

struct plan_mem_move *
plan_add_move(struct plan *plan, int vm_id, int from_node, int to_node, uint64_t mib)
{
	struct plan_mem_move *mv;

	util_array_reserve((void **)&plan->moves, &plan->cap_moves, plan->nr_moves + 1,
	                   sizeof(*mv));
	mv = &plan->moves[plan->nr_moves++];
	memset(mv, 0, sizeof(*mv));
	mv->vm_id = vm_id;
	mv->from_node = from_node;
	mv->to_node = to_node;
	mv->mib = mib;
	return mv;
}

struct plan_mem_bind *
plan_add_bind(struct plan *plan, int vm_id, uint64_t nodes)
{
	struct plan_mem_bind *b;

	util_array_reserve((void **)&plan->binds, &plan->cap_binds, plan->nr_binds + 1, sizeof(*b));
	b = &plan->binds[plan->nr_binds++];
	memset(b, 0, sizeof(*b));
	b->vm_id = vm_id;
	b->nodes = nodes;
	return b;
}

struct plan_sampling *
plan_add_sampling(struct plan *plan, int vm_id, double scan_mib_s)
{
	struct plan_sampling *s;

	util_array_reserve((void **)&plan->samplings, &plan->cap_samplings, plan->nr_samplings + 1,
	                   sizeof(*s));
	s = &plan->samplings[plan->nr_samplings++];
	memset(s, 0, sizeof(*s));
	s->vm_id = vm_id;
	s->scan_mib_s = scan_mib_s;
	return s;
}
