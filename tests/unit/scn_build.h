/*
 * scn_build.h - building scenarios by hand in unit tests: a VM with the loader's defaults
 * (BRIEF 4.2: mem_intensity 0.5, util 1, no stop, phase 60 s, first touch by vCPU 0, default
 * policy), so tests only set what they are about.
 */
#ifndef VNUMAD_TESTS_SCN_BUILD_H
#define VNUMAD_TESTS_SCN_BUILD_H

#include <stdio.h>
#include <string.h>

#include "host/sim/scenario.h"

static inline void
scn_build_vm(struct scn_vm *vm, const char *name, int vcpus, double gib, enum scn_workload w)
{
	memset(vm, 0, sizeof(*vm));
	snprintf(vm->name, sizeof(vm->name), "%s", name);
	vm->vcpus = vcpus;
	vm->memory_gib = gib;
	vm->workload = w;
	vm->mem_intensity = 0.5;
	vm->util = 1.0;
	vm->stop_s = -1;
	vm->phase_s = 60;
	vm->first_touch_node = -1;
	vm_policy_init_default(&vm->policy);
}

#endif
