/*
 * oracle_chain.c - stage 2's chains (docs/peers/oracle.md): a move of one VM that makes it
 * faster but overloads a node, together with a move of another VM off that node.  Neither
 * gains alone when the second VM is better placed than the first but loses less by moving:
 * which of two VMs on a full node takes the remote vCPU, or the remote memory.
 */
#include "host/sim/peer_oracle.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/util.h"

/* The best chain found so far: x's move in sr->bv/bu/bpart/bc, y's in yv/yu/yc. */
struct chain {
	int x, y;
	double gain;
	int *yv, *tyv; /* y's vCPU nodes: best, tentative */
	int *yu, *tyu; /* y's unit nodes: best, tentative */
	int cap_u;
	struct oracle_contrib yc;
};

/* Evaluate y as in tyv/tyu together with x's move (sr->tv/tu/tpart/tc); keep the best. */
static void
chain_try(struct oracle_srch *sr, int x, int y, struct chain *best)
{
	struct oracle_srch_change ch[2] = {{x, &sr->tc}, {y, &sr->tc2}};
	struct oracle_srch_result d;

	oracle_srch_eval(sr, y, best->tyv, best->tyu, NULL, &sr->tc2);
	oracle_srch_delta(sr, ch, 2, &d);
	if (!d.feasible || d.gain <= best->gain)
		return;
	best->gain = d.gain;
	best->x = x;
	best->y = y;
	memcpy(best->yv, best->tyv, sizeof(int) * (size_t)sr->om->vms[y].nr_vcpus);
	memcpy(best->yu, best->tyu, sizeof(int) * (size_t)sr->vms[y].nr_units);
	oracle_srch_contrib_copy(&best->yc, &sr->tc2, sr->nn);
	memcpy(sr->bv, sr->tv, sizeof(int) * (size_t)sr->om->vms[x].nr_vcpus);
	memcpy(sr->bu, sr->tu, sizeof(int) * (size_t)sr->vms[x].nr_units);
	sr->bpart = sr->tpart;
	oracle_srch_contrib_copy(&sr->bc, &sr->tc, sr->nn);
}

/* y's units on b, those whose vCPU is elsewhere first, highest index first, until need MiB. */
static void
chain_free_mem(struct oracle_srch *sr, int y, int b, uint64_t need, int c, struct chain *best)
{
	const struct oracle_srch_vm *sv = &sr->vms[y];
	uint64_t got = 0;

	for (int pass = 0; pass < 2; pass++)
		for (int u = sv->nr_units - 1; u >= 0 && got < need; u--) {
			bool stray = sv->vcpu_node[sv->unit_group[u]] != b;

			if (sv->unit_node[u] != b || stray != (pass == 0))
				continue;
			best->tyu[u] = c;
			got += sv->unit_len[u];
		}
}

/*
 * Tentatively move y's last t vCPUs on b (in vcpu_order) to c, alone or (with_mem) with as
 * many of their memory units as c holds now.
 */
static void
chain_free_cpus(struct oracle_srch *sr, int y, int b, int t, int c, bool with_mem,
                struct chain *best)
{
	const struct oracle_srch_vm *sv = &sr->vms[y];
	uint64_t room = with_mem ? oracle_srch_room_mib(sr, y, c) : 0, have = sv->cur.m[c];

	for (int i = sr->om->vms[y].nr_vcpus - 1; i >= 0 && t > 0; i--)
		if (sv->vcpu_node[sv->vcpu_order[i]] == b) {
			best->tyv[sv->vcpu_order[i]] = c;
			t--;
		}
	for (int u = sv->nr_units - 1; u >= 0 && with_mem; u--)
		if (best->tyv[sv->unit_group[u]] == c && sv->vcpu_node[sv->unit_group[u]] == b &&
		    sv->unit_node[u] != c && have + sv->unit_len[u] <= room) {
			best->tyu[u] = c;
			have += sv->unit_len[u];
		}
}

/*
 * With x's move in sr->tv/tu/tpart/tc overloading b (need_mib > 0: MiB over its capacity;
 * else need_cpu, util over its CPUs): every other VM y on b moves that much memory, or one
 * vCPU and as many as make up need_cpu (alone, or with their memory as far as it fits), from
 * b to each other node.
 */
static void
chain_repairs(struct oracle_srch *sr, int x, int b, uint64_t need_mib, double need_cpu,
              struct chain *best)
{
	const struct oracle_vm_model *mx = &sr->om->vms[x];

	for (int i = 0; i < sr->nr_live; i++) {
		int y = sr->live[i], nv = sr->om->vms[y].nr_vcpus, on_b = 0, ts[2];
		const struct oracle_srch_vm *sy = &sr->vms[y];
		const struct oracle_vm_model *my = &sr->om->vms[y];

		if (y == x || my->first > mx->last || mx->first > my->last ||
		    (need_mib > 0 ? sy->cur.m[b] == 0 : sy->cur.u[b] == 0))
			continue;
		if (sy->nr_units > best->cap_u) {
			best->cap_u = sy->nr_units * 2;
			best->yu = xreallocarray(best->yu, (size_t)best->cap_u, sizeof(int));
			best->tyu = xreallocarray(best->tyu, (size_t)best->cap_u, sizeof(int));
		}
		for (int v = 0; v < nv; v++)
			on_b += sy->vcpu_node[v] == b;
		ts[0] = 1;
		ts[1] = my->util > 0 ? (int)ceil(need_cpu / my->util - 1e-9) : on_b;
		ts[1] = ts[1] > on_b ? on_b : ts[1];
		for (int c = 0; c < sr->nn; c++)
			for (int k = 0; k < (need_mib > 0 ? 1 : 4); k++) {
				if (c == b || !nodemask_test(my->allowed, c) ||
				    (k % 2 == 1 && ts[1] <= 1))
					continue;
				memcpy(best->tyv, sy->vcpu_node, sizeof(int) * (size_t)nv);
				memcpy(best->tyu, sy->unit_node,
				       sizeof(int) * (size_t)sy->nr_units);
				if (need_mib > 0)
					chain_free_mem(sr, y, b, need_mib, c, best);
				else
					chain_free_cpus(sr, y, b, ts[k % 2], c, k >= 2, best);
				chain_try(sr, x, y, best);
			}
	}
}

/* x's tentative binding (sr->tc) is faster for x itself than its current one. */
static bool
chain_faster(const struct oracle_srch *sr, int x)
{
	double gain = 0;

	for (int n = 0; n < sr->nn; n++)
		gain += sr->tc.s[n] - sr->vms[x].cur.s[n];
	return gain > 1e-12;
}

/* What x's tentative binding puts on b beyond its CPUs (*cpu, util) and its capacity (MiB). */
static uint64_t
chain_overload(const struct oracle_srch *sr, int x, int b, double *cpu)
{
	const struct oracle_vm_model *vmm = &sr->om->vms[x];
	const struct oracle_srch_vm *sv = &sr->vms[x];
	double du = sr->tc.u[b] - sv->cur.u[b];
	uint64_t over = 0;

	*cpu = 0;
	for (int j = vmm->first; j <= vmm->last; j++) {
		size_t k = (size_t)j * sr->nn + b;
		uint64_t m = sr->seg_m[k] - sv->cur.m[b] + sr->tc.m[b];
		double u = sr->seg_u[k] + du - sr->om->cpus_per_node;

		*cpu = du > 0 && u > 1e-9 && u > *cpu ? u : *cpu;
		over =
		    m > sr->om->cap_mib && m - sr->om->cap_mib > over ? m - sr->om->cap_mib : over;
	}
	return over;
}

/* x's memory on a whose vCPUs sit on b (want units of it) to b, whether b has room or not. */
static int
chain_mem_move(struct oracle_srch *sr, int x, int a, int b, int want)
{
	const struct oracle_srch_vm *sv = &sr->vms[x];
	int nr = 0;

	oracle_ls_reset(sr, x);
	for (int u = sv->nr_units - 1; u >= 0 && nr < want; u--)
		if (sv->unit_node[u] == a && sv->vcpu_node[sv->unit_group[u]] == b) {
			sr->tu[u] = b;
			nr++;
		}
	return nr;
}

/*
 * Chains of x: a move that makes x itself faster but overloads node b (one vCPU from a to b;
 * x's memory from a to its vCPUs on b: one unit, half, all), together with another VM's
 * vCPU or memory from b to wherever is best.  Neither gains alone when the second VM is
 * better placed than the first but loses less by moving.
 */
static void
chain_vm(struct oracle_srch *sr, int x, struct chain *best)
{
	const struct oracle_vm_model *mx = &sr->om->vms[x];
	double cpu;

	for (int a = 0; a < sr->nn; a++)
		for (int b = 0; b < sr->nn; b++) {
			int homing;

			if (a == b || !nodemask_test(mx->allowed, b))
				continue;
			if (oracle_ls_flag_last(sr, x, a, 1, -1) > 0) {
				oracle_ls_move_flagged(sr, x, b, oracle_srch_room_mib(sr, x, b));
				oracle_srch_eval(sr, x, sr->tv, sr->tu, &sr->tpart, &sr->tc);
				if (chain_faster(sr, x) && chain_overload(sr, x, b, &cpu) == 0 &&
				    cpu > 0)
					chain_repairs(sr, x, b, 0, cpu, best);
			}
			homing = chain_mem_move(sr, x, a, b, INT_MAX);
			for (int k = 0; k < 3 && homing > 0; k++) {
				int want = k == 0 ? 1 : k == 1 ? (homing + 1) / 2 : homing;
				uint64_t need;

				if (k > 0 && want <= (k == 1 ? 1 : (homing + 1) / 2))
					continue;
				chain_mem_move(sr, x, a, b, want);
				oracle_srch_eval(sr, x, sr->tv, sr->tu, NULL, &sr->tc);
				need = chain_overload(sr, x, b, &cpu);
				if (need > 0 && chain_faster(sr, x))
					chain_repairs(sr, x, b, need, 0, best);
			}
		}
}

/* One sweep of chains over the VMs, applying each that gains.  Returns whether one did. */
bool
oracle_chain_run(struct oracle_srch *sr)
{
	struct chain best = {0};
	int max_v = 1;
	bool improved = false;

	for (int i = 0; i < sr->nr_live; i++)
		max_v = sr->om->vms[sr->live[i]].nr_vcpus > max_v
		            ? sr->om->vms[sr->live[i]].nr_vcpus
		            : max_v;
	best.yv = xcalloc((size_t)max_v, sizeof(int));
	best.tyv = xcalloc((size_t)max_v, sizeof(int));
	best.cap_u = sr->max_units;
	best.yu = xcalloc((size_t)best.cap_u, sizeof(int));
	best.tyu = xcalloc((size_t)best.cap_u, sizeof(int));
	oracle_contrib_init(&best.yc, sr->nn);
	for (int i = 0; i < sr->nr_live && sr->work <= ORACLE_WORK_MAX; i++) {
		best.gain = sr->eps;
		best.x = -1;
		chain_vm(sr, sr->live[i], &best);
		if (best.x < 0)
			continue;
		oracle_srch_apply(sr, best.y, best.yv, best.yu, &best.yc);
		oracle_srch_apply_best(sr, best.x);
		oracle_ls_hot_build(sr);
		improved = true;
	}
	free(best.yv);
	free(best.tyv);
	free(best.yu);
	free(best.tyu);
	oracle_contrib_fini(&best.yc);
	return improved;
}
