/*
 * oracle_repack.c - stage 2's large neighbourhood (docs/peers/oracle.md): for a pair of nodes,
 * every VM that lies wholly on them is packed anew, by branch and bound over a few options
 * per VM: where it is now, on either node alone, split evenly over both, filling either and
 * spilling to the other.  It finds what moves of one VM at a time cannot, e.g. five VMs
 * exchanged between two nodes so that none has to be split.
 */
#include "host/sim/peer_oracle.h"

#include <stdlib.h>
#include <string.h>

#include "policy/util.h"

/* Options per VM: now, node a, node b, even split, fill a spill b, fill b spill a. */
#define REPACK_MAX_OPTS 6
/*
 * Branch-and-bound nodes visited per pair of nodes, at most (default 20000): enough to pack
 * a dozen VMs exactly; beyond, the search keeps the best packing found.  A count, not a
 * clock, so the result is the same on every machine.
 */
#define REPACK_MAX_VISITS 20000

struct repack_opt {
	int *vcpu_node;
	int *unit_node;
	struct oracle_contrib c;
	double alone; /* gain of this option with none of the pair's VMs placed */
};

struct repack_vm {
	int vm;
	int nr_opts;
	struct repack_opt opt[REPACK_MAX_OPTS];
	double best_alone;
};

struct repack {
	struct oracle_srch *sr;
	int nr;
	struct repack_vm *v;
	double *rest;     /* rest[i]: sum of best_alone of v[i..nr) (the bound) */
	int a, b, lo, hi; /* the pair, and the segments its VMs live in */
	double *demand;   /* (nr + 1) x nr_segs: CPU demand of v[i..nr) at eff_max per segment */
	int *choice;      /* the option of each v[i] on the current branch */
	int *best_choice;
	double best;   /* total gain of the best packing so far */
	double cap;    /* most any packing can gain: the pair's CPUs busy at full speed */
	bool improved; /* some packing beats the one there was */
	uint64_t visits;
};

/* Is all of vm (vCPUs and memory) on nodes of mask? */
static bool
repack_within(const struct oracle_srch *sr, int vm, uint64_t mask)
{
	const struct oracle_srch_vm *sv = &sr->vms[vm];

	if (!sv->placed)
		return false;
	for (int v = 0; v < sr->om->vms[vm].nr_vcpus; v++)
		if (!nodemask_test(mask, sv->vcpu_node[v]))
			return false;
	for (int u = 0; u < sv->nr_units; u++)
		if (!nodemask_test(mask, sv->unit_node[u]))
			return false;
	return true;
}

static bool
repack_same(const struct oracle_contrib *x, const struct oracle_contrib *y, int nn)
{
	return memcmp(x->u, y->u, sizeof(double) * (size_t)nn) == 0 &&
	       memcmp(x->s, y->s, sizeof(double) * (size_t)nn) == 0 &&
	       memcmp(x->m, y->m, sizeof(uint64_t) * (size_t)nn) == 0;
}

/* Evaluate sr->tv/tu as an option of rv; keep it if it fits alone and is new (or always). */
static void
repack_opt_add(struct repack *rp, struct repack_vm *rv, bool always)
{
	struct oracle_srch *sr = rp->sr;
	struct repack_opt *o = &rv->opt[rv->nr_opts];
	struct oracle_srch_change ch = {rv->vm, &sr->tc};
	struct oracle_srch_result d;
	int nv = sr->om->vms[rv->vm].nr_vcpus, nu = sr->vms[rv->vm].nr_units;

	oracle_srch_eval(sr, rv->vm, sr->tv, sr->tu, NULL, &sr->tc);
	oracle_srch_delta(sr, &ch, 1, &d);
	for (int i = 0; i < rv->nr_opts && !always; i++)
		if (repack_same(&rv->opt[i].c, &sr->tc, sr->nn))
			return;
	if (!d.feasible && !always)
		return;
	o->vcpu_node = xcalloc((size_t)nv, sizeof(int));
	o->unit_node = xcalloc((size_t)nu, sizeof(int));
	memcpy(o->vcpu_node, sr->tv, sizeof(int) * (size_t)nv);
	memcpy(o->unit_node, sr->tu, sizeof(int) * (size_t)nu);
	oracle_contrib_init(&o->c, sr->nn);
	oracle_srch_contrib_copy(&o->c, &sr->tc, sr->nn);
	o->alone = d.gain;
	if (rv->nr_opts == 0 || d.gain > rv->best_alone)
		rv->best_alone = d.gain;
	rv->nr_opts++;
}

/* The options of VM vm (unplaced, its binding in cur_v/cur_u) on nodes a and b. */
static void
repack_opts_build(struct repack *rp, struct repack_vm *rv, int a, int b)
{
	struct oracle_srch *sr = rp->sr;
	const struct oracle_vm_model *vmm = &sr->om->vms[rv->vm];
	uint64_t pair = nodemask_of(a) | nodemask_of(b);
	struct oracle_shape shapes[5] = {
	    {nodemask_of(a), -1}, {nodemask_of(b), -1}, {pair, -1}, {pair, a}, {pair, b}};

	memcpy(sr->tv, sr->vms[rv->vm].vcpu_node, sizeof(int) * (size_t)vmm->nr_vcpus);
	memcpy(sr->tu, sr->vms[rv->vm].unit_node, sizeof(int) * (size_t)sr->vms[rv->vm].nr_units);
	repack_opt_add(rp, rv, true); /* where it is: option 0, the packing to beat */
	for (int i = 0; i < 5; i++) {
		if ((shapes[i].mask & vmm->allowed) != shapes[i].mask ||
		    (i >= 2 && vmm->nr_vcpus < 2))
			continue;
		oracle_shape_fill(sr, rv->vm, &shapes[i], sr->tv, sr->tu);
		repack_opt_add(rp, rv, false);
	}
}

static int
repack_vm_cmp(const void *x, const void *y)
{
	const struct repack_vm *a = x, *b = y;

	if (a->best_alone != b->best_alone)
		return a->best_alone > b->best_alone ? -1 : 1;
	return (a->vm > b->vm) - (a->vm < b->vm);
}

/*
 * The most the VMs v[depth..nr) of rp (not placed) can add on the pair's nodes, segment by
 * segment: neither more than the two nodes' CPUs busy at eff_max less what they do already,
 * nor more than those VMs' own CPU demand at eff_max.
 */
static double
repack_cap(struct repack *rp, int depth)
{
	struct oracle_srch *sr = rp->sr;
	const struct oracle_model *om = sr->om;
	const double *demand = &rp->demand[(size_t)depth * om->nr_segs];
	int nodes[2] = {rp->a, rp->b};
	double cap = 0;

	for (int j = rp->lo; j <= rp->hi; j++) {
		double slack = 0;

		for (int k = 0; k < 2 && demand[j] > 0; k++) {
			size_t c = (size_t)j * sr->nn + nodes[k];

			slack += om->cpus_per_node * sr->eff_max -
			         oracle_node_work(om->cpus_per_node, sr->seg_u[c], sr->seg_s[c]);
		}
		cap += om->seg_len_s[j] * (demand[j] < slack ? demand[j] : slack);
	}
	sr->work += (uint64_t)(rp->hi - rp->lo + 1) * 2;
	return cap;
}

/* rp->demand, lo and hi for the VMs in the order of rp->v. */
static void
repack_demand(struct repack *rp)
{
	const struct oracle_model *om = rp->sr->om;
	size_t ns = (size_t)om->nr_segs;

	free(rp->demand);
	rp->demand = xcalloc(((size_t)rp->nr + 1) * ns + 1, sizeof(double));
	rp->lo = om->nr_segs;
	rp->hi = -1;
	for (int i = rp->nr - 1; i >= 0; i--) {
		const struct oracle_vm_model *vmm = &om->vms[rp->v[i].vm];

		memcpy(&rp->demand[(size_t)i * ns], &rp->demand[(size_t)(i + 1) * ns],
		       ns * sizeof(double));
		for (int j = vmm->first; j <= vmm->last; j++)
			rp->demand[(size_t)i * ns + j] +=
			    vmm->util * vmm->nr_vcpus * rp->sr->eff_max;
		rp->lo = vmm->first < rp->lo ? vmm->first : rp->lo;
		rp->hi = vmm->last > rp->hi ? vmm->last : rp->hi;
	}
}

/*
 * Depth-first over the options, bounded by the best each remaining VM can do alone and by
 * what the pair's CPUs can still do.
 */
static void
repack_dfs(struct repack *rp, int depth, double total)
{
	struct oracle_srch *sr = rp->sr;
	struct repack_vm *rv;
	if (total + rp->rest[depth] <= rp->best + sr->eps || rp->visits >= REPACK_MAX_VISITS)
		return;
	if (depth < rp->nr && total + repack_cap(rp, depth) <= rp->best + sr->eps)
		return;
	rp->visits++;
	if (depth == rp->nr) {
		rp->best = total;
		rp->improved = true;
		memcpy(rp->best_choice, rp->choice, sizeof(int) * (size_t)rp->nr);
		return;
	}
	rv = &rp->v[depth];
	for (int i = 0; i < rv->nr_opts; i++) {
		struct oracle_srch_change ch = {rv->vm, &rv->opt[i].c};
		struct oracle_srch_result d;

		oracle_srch_delta(sr, &ch, 1, &d);
		if (!d.feasible)
			continue;
		rp->choice[depth] = i;
		oracle_srch_account(sr, rv->vm, ch.to, 1);
		sr->vms[rv->vm].placed = true;
		oracle_srch_contrib_copy(&sr->vms[rv->vm].cur, ch.to, sr->nn);
		repack_dfs(rp, depth + 1, total + d.gain);
		oracle_srch_unplace(sr, rv->vm);
	}
}

/*
 * The VMs of the pair back where they were: their bindings never changed, their contribution
 * is option 0's once options exist (the search overwrites cur).  No node version changes.
 */
static void
repack_restore(struct repack *rp)
{
	for (int i = 0; i < rp->nr; i++) {
		struct oracle_srch_vm *sv = &rp->sr->vms[rp->v[i].vm];

		if (rp->v[i].nr_opts > 0)
			oracle_srch_contrib_copy(&sv->cur, &rp->v[i].opt[0].c, rp->sr->nn);
		oracle_srch_account(rp->sr, rp->v[i].vm, &sv->cur, 1);
		sv->placed = true;
	}
}

/* Place every VM of the pair on option choice[i]. */
static void
repack_place(struct repack *rp, const int *choice)
{
	for (int i = 0; i < rp->nr; i++) {
		const struct repack_opt *o = &rp->v[i].opt[choice[i]];

		oracle_srch_apply(rp->sr, rp->v[i].vm, o->vcpu_node, o->unit_node, &o->c);
	}
}

static void
repack_free(struct repack *rp)
{
	for (int i = 0; i < rp->nr; i++)
		for (int k = 0; k < rp->v[i].nr_opts; k++) {
			free(rp->v[i].opt[k].vcpu_node);
			free(rp->v[i].opt[k].unit_node);
			oracle_contrib_fini(&rp->v[i].opt[k].c);
		}
	free(rp->v);
	free(rp->rest);
	free(rp->demand);
	free(rp->choice);
	free(rp->best_choice);
}

/* The gain of the packing there was (the VMs of rp, unplaced, added back one by one). */
static double
repack_now(struct repack *rp)
{
	struct oracle_srch *sr = rp->sr;
	double now = 0;

	for (int i = 0; i < rp->nr; i++) {
		struct oracle_srch_change ch = {rp->v[i].vm, &sr->vms[rp->v[i].vm].cur};
		struct oracle_srch_result d;

		oracle_srch_delta(sr, &ch, 1, &d);
		now += d.gain;
		oracle_srch_account(sr, rp->v[i].vm, ch.to, 1);
	}
	for (int i = 0; i < rp->nr; i++)
		oracle_srch_account(sr, rp->v[i].vm, &sr->vms[rp->v[i].vm].cur, -1);
	return now;
}

/*
 * Pack the VMs wholly on nodes a and b anew.  The packing there was is option 0 of every VM
 * and the search starts from its value, so only a better one is taken.  Returns whether one
 * was.
 */
static bool
repack_pair(struct oracle_srch *sr, int a, int b)
{
	uint64_t pair = nodemask_of(a) | nodemask_of(b);
	struct repack rp = {.sr = sr};
	double now = 0;

	rp.v = xcalloc((size_t)sr->nr_live + 1, sizeof(*rp.v));
	for (int i = 0; i < sr->nr_live; i++)
		if (repack_within(sr, sr->live[i], pair))
			rp.v[rp.nr++].vm = sr->live[i];
	if (rp.nr < 2)
		goto out;
	for (int i = 0; i < rp.nr; i++)
		oracle_srch_unplace(sr, rp.v[i].vm);
	rp.a = a;
	rp.b = b;
	repack_demand(&rp);
	now = repack_now(&rp);
	if (now >= repack_cap(&rp, 0) - sr->eps) { /* no packing can do better */
		repack_restore(&rp);
		goto out;
	}
	for (int i = 0; i < rp.nr; i++)
		repack_opts_build(&rp, &rp.v[i], a, b);
	qsort(rp.v, (size_t)rp.nr, sizeof(*rp.v), repack_vm_cmp);
	repack_demand(&rp); /* in the new order */
	rp.rest = xcalloc((size_t)rp.nr + 1, sizeof(double));
	for (int i = rp.nr - 1; i >= 0; i--)
		rp.rest[i] = rp.rest[i + 1] + rp.v[i].best_alone;
	rp.choice = xcalloc((size_t)rp.nr, sizeof(int));
	rp.best_choice = xcalloc((size_t)rp.nr, sizeof(int));
	rp.best = now;
	repack_dfs(&rp, 0, 0);
	if (rp.improved)
		repack_place(&rp, rp.best_choice);
	else
		repack_restore(&rp);
out:
	repack_free(&rp);
	return rp.improved;
}

bool
oracle_repack_run(struct oracle_srch *sr)
{
	bool improved = false;

	for (int a = 0; a < sr->nn; a++)
		for (int b = a + 1; b < sr->nn && sr->work <= ORACLE_WORK_MAX; b++) {
			uint64_t *seen = &sr->pair_seen[a * sr->nn + b];

			/* Nothing changed on either node since their last re-pack: nothing to find.
			 */
			if (*seen == sr->node_version[a] + sr->node_version[b])
				continue;
			if (repack_pair(sr, a, b))
				improved = true;
			*seen = sr->node_version[a] + sr->node_version[b];
		}
	return improved;
}
