/*
 * engine_groups.c - per-VM engine state and buddy groups.
 *
 * A VM's vCPUs form one buddy group; a VM placed by its guest vNUMA cells (snap_vm_by_cells:
 * placement='cells', or memory that fits no node) gets one group per cell, each with its cell's
 * RAM range.
 * Cross-VM groups (policy group="name") are an affinity between VMs' homes (engine_home.c).
 */
#include <stdlib.h>
#include <string.h>

#include "policy/engine_internal.h"

static void
engine_groups_free(struct eng_vm *ev)
{
	for (int i = 0; i < ev->nr_groups; i++)
		free(ev->groups[i].vcpus);
	free(ev->groups);
	ev->groups = NULL;
	ev->nr_groups = 0;
}

void
engine_vm_free(struct eng_vm *ev)
{
	if (ev == NULL)
		return;
	engine_groups_free(ev);
	free(ev->fault_prev);
	free(ev->fault_avg);
	free(ev->vcpu_strength);
	free(ev->vcpu_conv);
	free(ev->util_avg);
	free(ev->vcpu_group);
	free(ev->vcpu_target);
	free(ev->vcpu_node);
	free(ev->vcpu_moved_s);
	free(ev->vcpu_pinned_s);
	free(ev->vcpu_moves);
	free(ev->chase_node);
	free(ev->chase_s);
	free(ev);
}

/* Allocate the per-vCPU arrays of a VM seen for the first time. */
void
engine_vm_alloc(struct eng_vm *ev, const struct snap_vm *vm, int nr_nodes)
{
	size_t nv = (size_t)vm->nr_vcpus, cells = nv * (size_t)nr_nodes;

	ev->nr_vcpus = vm->nr_vcpus;
	ev->nr_nodes = nr_nodes;
	memcpy(ev->name, vm->name, sizeof(ev->name));
	ev->fault_prev = xcalloc(cells, sizeof(uint64_t));
	ev->fault_avg = xcalloc(cells, sizeof(double));
	ev->vcpu_strength = xcalloc(nv, sizeof(int));
	ev->vcpu_conv = xcalloc(nv, sizeof(int));
	ev->util_avg = xcalloc(nv, sizeof(double));
	ev->vcpu_group = xcalloc(nv, sizeof(int));
	ev->vcpu_target = xcalloc(nv, sizeof(int));
	ev->vcpu_node = xcalloc(nv, sizeof(int));
	ev->vcpu_moved_s = xcalloc(nv, sizeof(double));
	ev->vcpu_pinned_s = xcalloc(nv, sizeof(double));
	ev->vcpu_moves = xcalloc(nv, sizeof(uint32_t));
	ev->chase_node = xcalloc(nv, sizeof(int));
	ev->chase_s = xcalloc(nv, sizeof(double));
	for (size_t v = 0; v < nv; v++) {
		ev->chase_node[v] = ENGINE_NO_NODE;
		ev->vcpu_target[v] = ENGINE_NO_NODE;
		ev->vcpu_moved_s[v] = -1e9;
		ev->vcpu_pinned_s[v] = -1e9;
	}
	ev->rehomed_s = -1e9;
	ev->backoff_until_s = -1e9;
	ev->adverse_until_s = -1e9;
}

static void
engine_group_init(struct eng_group *g, int cell, int nr_vcpus, uint64_t start, uint64_t mib)
{
	memset(g, 0, sizeof(*g));
	g->cell = cell;
	g->vcpus = xcalloc((size_t)nr_vcpus + 1, sizeof(int));
	g->mem_start_mib = start;
	g->mem_mib = mib;
	g->conv_node = g->place_node = g->primary = ENGINE_NO_NODE;
}

/* (Re)build the groups from the VM's policy and cells; homes are chosen again afterwards. */
void
engine_groups_build(struct eng_vm *ev, const struct snap_vm *vm, bool by_cells)
{
	engine_groups_free(ev);
	if (!by_cells) {
		ev->nr_groups = 1;
		ev->groups = xcalloc(1, sizeof(*ev->groups));
		engine_group_init(&ev->groups[0], -1, vm->nr_vcpus, 0, vm->mem_mib);
		for (int v = 0; v < vm->nr_vcpus; v++) {
			ev->groups[0].vcpus[ev->groups[0].nr_vcpus++] = v;
			ev->vcpu_group[v] = 0;
		}
	} else {
		ev->nr_groups = vm->nr_cells;
		ev->groups = xcalloc((size_t)vm->nr_cells, sizeof(*ev->groups));
		for (int c = 0; c < vm->nr_cells; c++)
			engine_group_init(&ev->groups[c], c, vm->nr_vcpus,
			                  vm->cells[c].mem_start_mib, vm->cells[c].mem_mib);
		for (int v = 0; v < vm->nr_vcpus; v++) {
			struct eng_group *g = &ev->groups[vm->vcpu_cell[v]];

			g->vcpus[g->nr_vcpus++] = v;
			ev->vcpu_group[v] = vm->vcpu_cell[v];
		}
	}
	for (int v = 0; v < vm->nr_vcpus; v++)
		ev->vcpu_target[v] = ENGINE_NO_NODE;
	ev->placed = false;
}
