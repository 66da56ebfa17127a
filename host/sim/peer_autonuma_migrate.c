/*
 * peer_autonuma_migrate.c - the `autonuma` peer's task placement: what numa_migrate_preferred(),
 * task_numa_migrate(), task_numa_find_cpu() and task_numa_compare() in kernel/sched/fair.c do for
 * one vCPU thread that runs off its preferred node: a move to an idle CPU there, or a swap with a
 * task that gains too.  The rest of the model is in peer_autonuma.c.
 */
#include "host/sim/peer_autonuma_internal.h"

#include <math.h>
#include <stdbool.h>

/* ---- constants (kernel names in brackets; see docs/peers/autonuma.md) --------------------- */

/* [SMALLIMP] a swap must gain at least 30 (of 2 x 1000) or it is ping-pong; 30. */
#define AUTONUMA_SMALLIMP 30
/* [NUMA_IMBALANCE_MIN] running-task imbalance tolerated on a lightly loaded node; 2. */
#define AUTONUMA_NUMA_IMBALANCE_MIN 2.0
/*
 * [sd->imb_numa_nr] "lightly loaded": at most node CPUs >> 3 runnable (6.x, one LLC per node:
 * 12.5 % of the node; at least 1).
 */
#define AUTONUMA_IMB_NUMA_SHIFT 3
/*
 * A node has an idle CPU (node_has_spare with idle_cpu >= 0) when its vCPUs leave at least this
 * many CPUs' worth of time unused.  The kernel samples one instant; a CPU idle half the time is
 * found idle about half the time.  Unit: CPUs; 0.5.
 */
#define AUTONUMA_IDLE_CPU_MIN 0.5
/* Loads are sums of cpu_use; differences below this are rounding, not imbalance.  CPUs. */
#define AUTONUMA_LOAD_EPS 1e-9

/* ---- task placement (task_numa_migrate, task_numa_find_cpu, task_numa_compare) ------------ */

/* task_numa_env: the search for one task. */
struct autonuma_env {
	int p;          /* task index */
	int src, dst;   /* nodes */
	long best_imp;  /* improvement of the best candidate so far */
	int best_task;  /* swap partner, -1 for a plain move */
	int best_node;  /* -1: nothing found */
	bool best_move; /* best is a plain move */
};

/* load_too_imbalanced(): would the capacity-corrected load difference grow? */
static bool
autonuma_load_too_imbalanced(const struct autonuma_round *rd, int src, int dst, double src_load,
                             double dst_load)
{
	double src_cap = rd->snap->nodes[src].nr_cpus, dst_cap = rd->snap->nodes[dst].nr_cpus;
	double imb = fabs(dst_load * src_cap - src_load * dst_cap);
	double old_imb = fabs(rd->node_load[dst] * src_cap - rd->node_load[src] * dst_cap);

	return imb > old_imb + AUTONUMA_LOAD_EPS;
}

static void
autonuma_env_assign(struct autonuma_env *env, int cur, long imp)
{
	env->best_task = cur;
	env->best_move = cur < 0;
	env->best_imp = imp;
	env->best_node = env->dst;
}

static int
autonuma_pref_of(const struct autonuma_round *rd, int t)
{
	return t < 0 ? -1 : autonuma_task_state(rd, t)->preferred;
}

/* The improvement of swapping p with cur, with the kernel's hysteresis and preferences. */
static long
autonuma_swap_imp(const struct autonuma_round *rd, const struct autonuma_env *env, int cur,
                  long taskimp, long groupimp)
{
	const struct autonuma_task *tc = &rd->tasks[cur];
	int cur_pref = autonuma_pref_of(rd, cur);
	long imp;

	if (tc->vm == rd->tasks[env->p].vm) {
		/* Same group: task weights, with 1/16 hysteresis against tiny differences. */
		imp = taskimp + autonuma_task_weight(rd, cur, env->src) -
		      autonuma_task_weight(rd, cur, env->dst);
		imp -= imp / 16;
	} else {
		imp = groupimp + autonuma_group_weight(rd, tc->vm, env->src) -
		      autonuma_group_weight(rd, tc->vm, env->dst);
	}
	if (cur_pref == env->dst)
		imp -= imp / 16; /* discourage moving a task off its preferred node */
	if (cur_pref == env->src)
		imp += imp / 8; /* encourage a task that moves to its preferred node */
	return imp;
}

/*
 * task_numa_compare() for the task cur running on env->dst.  Returns true when the search of
 * this node should stop.
 */
static bool
autonuma_compare(struct autonuma_round *rd, struct autonuma_env *env, int cur, long taskimp,
                 long groupimp, bool maymove)
{
	const struct autonuma_task *tp = &rd->tasks[env->p], *tc = &rd->tasks[cur];
	int cur_pref = autonuma_pref_of(rd, cur), best_pref = autonuma_pref_of(rd, env->best_task);
	long imp, moveimp = groupimp;
	double load;

	if (cur == env->p || tc->busy || !nodemask_test(tc->allowed, env->src))
		return false;
	if (env->best_task >= 0 && best_pref == env->src && cur_pref != env->src)
		return false;
	imp = autonuma_swap_imp(rd, env, cur, taskimp, groupimp);
	if (maymove && moveimp > imp && moveimp > env->best_imp) {
		autonuma_env_assign(env, -1, moveimp);
		return false;
	}
	if (env->best_task >= 0 && cur_pref == env->src && best_pref != env->src)
		goto assign;
	if (imp < AUTONUMA_SMALLIMP || imp <= env->best_imp + AUTONUMA_SMALLIMP / 2)
		return false;
	load = tp->load - tc->load;
	if (fabs(load) > AUTONUMA_LOAD_EPS &&
	    autonuma_load_too_imbalanced(rd, env->src, env->dst, rd->node_load[env->src] - load,
	                                 rd->node_load[env->dst] + load))
		return false;
assign:
	autonuma_env_assign(env, cur, imp);
	return !maymove && cur_pref == env->src;
}

/*
 * task_numa_find_cpu() on node dst: an idle CPU when the node has spare capacity and the move
 * leaves no imbalance the load balancer would undo; otherwise a task to swap with.
 */
static void
autonuma_find_on_node(struct autonuma_round *rd, struct autonuma_env *env, int dst, long taskimp,
                      long groupimp)
{
	int nr_cpus = rd->snap->nodes[dst].nr_cpus;
	double lp = rd->tasks[env->p].load;
	double src_run = rd->node_load[env->src] - lp, dst_run = rd->node_load[dst] + lp;
	bool maymove;

	env->dst = dst;
	if (rd->node_load[dst] + AUTONUMA_IDLE_CPU_MIN <= nr_cpus) {
		double imb = dst_run > src_run ? dst_run - src_run : 0.0;
		int light = nr_cpus >> AUTONUMA_IMB_NUMA_SHIFT;

		if (dst_run <= (light > 1 ? light : 1) && imb <= AUTONUMA_NUMA_IMBALANCE_MIN)
			imb = 0; /* adjust_numa_imbalance() */
		maymove = imb <= AUTONUMA_LOAD_EPS;
		if (maymove) {
			/* Recorded with its real gain, so only a better node replaces it. */
			if (env->best_node < 0 || groupimp >= env->best_imp)
				autonuma_env_assign(env, -1, groupimp);
			return;
		}
	} else {
		maymove = !autonuma_load_too_imbalanced(rd, env->src, dst,
		                                        rd->node_load[env->src] - lp, dst_run);
	}
	for (int t = 0; t < rd->nr_tasks; t++)
		if (rd->tasks[t].node == dst &&
		    autonuma_compare(rd, env, t, taskimp, groupimp, maymove))
			break;
}

static void
autonuma_task_set_node(struct autonuma_round *rd, int t, int node)
{
	struct autonuma_task *tk = &rd->tasks[t];

	rd->node_load[tk->node] -= tk->load;
	rd->node_load[node] += tk->load;
	tk->node = node;
	tk->busy = true;
}

static void
autonuma_pin_kernel_move(struct autonuma_round *rd, int t, int to_node, const char *rule, long imp,
                         int other)
{
	const struct autonuma_task *tk = &rd->tasks[t];
	const struct snap_vm *vm = &rd->snap->vms[tk->vm];
	struct plan_pin *pin = plan_add_pin(rd->plan, vm->id, tk->vcpu, tk->allowed);

	pin->kind = PLAN_PIN_KERNEL_MOVE;
	pin->to_node = to_node;
	if (other < 0)
		plan_reason_set(&pin->why, rule, (double)imp,
		                "%s vCPU %d: node %d -> %d, group weight %ld -> %ld permille",
		                vm->name, tk->vcpu, tk->node, to_node,
		                autonuma_group_weight(rd, tk->vm, tk->node),
		                autonuma_group_weight(rd, tk->vm, to_node));
	else
		plan_reason_set(&pin->why, rule, (double)imp,
		                "%s vCPU %d: node %d -> %d, swapped with %s vCPU %d", vm->name,
		                tk->vcpu, tk->node, to_node,
		                rd->snap->vms[rd->tasks[other].vm].name, rd->tasks[other].vcpu);
}

static void
autonuma_apply(struct autonuma_round *rd, const struct autonuma_env *env)
{
	int cur = env->best_task;

	if (env->best_move) {
		autonuma_pin_kernel_move(rd, env->p, env->best_node, "autonuma-move", env->best_imp,
		                         -1);
		autonuma_task_set_node(rd, env->p, env->best_node);
		return;
	}
	autonuma_pin_kernel_move(rd, env->p, env->best_node, "autonuma-swap", env->best_imp, cur);
	autonuma_pin_kernel_move(rd, cur, env->src, "autonuma-swap", env->best_imp, env->p);
	autonuma_task_set_node(rd, env->p, env->best_node);
	autonuma_task_set_node(rd, cur, env->src);
}

/*
 * task_numa_migrate(): look for a place on the preferred node, then (nothing found, or the group
 * is spread over several active nodes) on every other node where the task or its group gains.
 * Afterwards the task prefers the node it lands on (or stays on): the group settles there until
 * the next placement.
 */
static void
autonuma_task_migrate(struct autonuma_round *rd, int t)
{
	const struct autonuma_task *tp = &rd->tasks[t];
	struct autonuma_vcpu *avc = autonuma_task_state(rd, t);
	struct autonuma_env env = {
	    .p = t, .src = tp->node, .dst = -1, .best_imp = 0, .best_task = -1, .best_node = -1};
	int pref = avc->preferred, vm = tp->vm;
	long tw_src = autonuma_task_weight(rd, t, env.src);
	long gw_src = autonuma_group_weight(rd, vm, env.src);

	if (nodemask_test(tp->allowed, pref))
		autonuma_find_on_node(rd, &env, pref, autonuma_task_weight(rd, t, pref) - tw_src,
		                      autonuma_group_weight(rd, vm, pref) - gw_src);
	if (env.best_node < 0 || rd->vmst[vm]->nr_active > 1) {
		for (int nid = 0; nid < rd->snap->nr_nodes; nid++) {
			long taskimp = autonuma_task_weight(rd, t, nid) - tw_src;
			long groupimp = autonuma_group_weight(rd, vm, nid) - gw_src;

			if (nid == env.src || nid == pref || !nodemask_test(tp->allowed, nid))
				continue;
			if (taskimp < 0 && groupimp < 0)
				continue;
			autonuma_find_on_node(rd, &env, nid, taskimp, groupimp);
		}
	}
	avc->preferred = env.best_node < 0 ? env.src : env.best_node;
	if (env.best_node >= 0)
		autonuma_apply(rd, &env);
}

/* numa_migrate_preferred(): only a task that faulted, has a preferred node and is off it. */
void
autonuma_task_consider(struct autonuma_round *rd, int t)
{
	const struct autonuma_vcpu *avc = autonuma_task_state(rd, t);
	const struct autonuma_task *tp = &rd->tasks[t];

	if (!avc->faulted || avc->preferred < 0 || tp->busy || avc->preferred == tp->node)
		return;
	autonuma_task_migrate(rd, t);
}
