/*
 * observe_plan.c - which VMs a snapshot reads, within a CPU budget (observe_plan.h).
 */
#include "host/linux/observe_plan.h"

#include <stdlib.h>

#include "policy/util.h"

void
linux_obs_budget_init(struct linux_obs_budget *b, double cap_percent)
{
	*b = (struct linux_obs_budget){
	    .cap_ms_s = cap_percent > 0 ? cap_percent * 10.0 : 0, /* % of 1000 ms per second */
	    .at_s = -1,
	    .fixed_ms = 0.5,
	    .unit_ms = 0.1,
	    .window_s = -1,
	    .cpu_ms_s = -1,
	};
	b->tokens_ms = b->cap_ms_s * LINUX_OBSERVE_BURST_S;
}

void
linux_obs_vm_init(struct linux_obs_vm *st, double now_s)
{
	*st = (struct linux_obs_vm){.read_s = -1, .period_s = 0, .changed = true};
	linux_obs_watch(st, now_s);
}

void
linux_obs_watch(struct linux_obs_vm *st, double now_s)
{
	if (st->active_until_s < now_s + LINUX_OBSERVE_ACTIVE_S)
		st->active_until_s = now_s + LINUX_OBSERVE_ACTIVE_S;
	st->period_s = 0;
}

static bool
obs_active(const struct linux_obs_vm *st, double now_s)
{
	return st->read_s < 0 || st->changed || now_s < st->active_until_s;
}

/* How far past its period a VM is (>= 1: due); active VMs first. */
static double
obs_urgency(const struct linux_obs_vm *st, double now_s)
{
	double since_s = now_s - st->read_s;

	if (obs_active(st, now_s))
		return 1e9;
	if (st->period_s <= 0)
		return 1e6;
	return since_s / st->period_s;
}

static double
obs_cost_ms(const struct linux_obs_budget *b, int nr_vcpus)
{
	return b->unit_ms * (1.0 + (nr_vcpus > 0 ? nr_vcpus : 0));
}

struct obs_order {
	double urgency;
	int pid;
	size_t i;
};

static int
obs_order_cmp(const void *a, const void *b)
{
	const struct obs_order *x = a, *y = b;

	if (x->urgency != y->urgency)
		return x->urgency > y->urgency ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void
obs_refill(struct linux_obs_budget *b, double now_s)
{
	double max_ms = b->cap_ms_s * LINUX_OBSERVE_BURST_S;

	if (b->at_s >= 0 && now_s > b->at_s)
		b->tokens_ms += b->cap_ms_s * (now_s - b->at_s);
	if (b->tokens_ms > max_ms)
		b->tokens_ms = max_ms;
	b->at_s = now_s;
}

size_t
linux_obs_plan(struct linux_obs_budget *b, struct linux_obs_pick *picks, size_t nr, double now_s)
{
	struct obs_order *order = xcalloc(nr + 1, sizeof(*order));
	double room_ms;
	size_t nr_due = 0, nr_read = 0;
	bool over = false;

	obs_refill(b, now_s);
	room_ms = b->tokens_ms - b->fixed_ms;
	for (size_t i = 0; i < nr; i++) {
		const struct linux_obs_vm *st = picks[i].st;
		double urgency = obs_urgency(st, now_s);

		picks[i].read = false;
		if (urgency >= 1)
			order[nr_due++] = (struct obs_order){urgency, picks[i].pid, i};
	}
	qsort(order, nr_due, sizeof(*order), obs_order_cmp);
	for (size_t k = 0; k < nr_due; k++) {
		struct linux_obs_pick *p = &picks[order[k].i];
		double cost_ms = obs_cost_ms(b, p->nr_vcpus);
		bool must = obs_active(p->st, now_s) || p->st->read_s < 0 ||
		            now_s - p->st->read_s >= LINUX_OBSERVE_MAX_AGE_S;

		if (b->cap_ms_s > 0 && cost_ms > room_ms && !must) {
			b->deferred++;
			continue;
		}
		if (b->cap_ms_s > 0 && cost_ms > room_ms)
			over = true;
		room_ms -= cost_ms;
		p->read = true;
		nr_read++;
	}
	if (over)
		b->over_cap++;
	free(order);
	return nr_read;
}

void
linux_obs_read_done(struct linux_obs_vm *st, double now_s, bool changed)
{
	double next_s;

	st->changed = changed;
	if (changed || st->read_s < 0 || now_s < st->active_until_s) {
		st->period_s = 0;
	} else {
		next_s = st->period_s > 0 ? st->period_s * 2 : now_s - st->read_s;
		if (next_s < 1)
			next_s = 1;
		st->period_s =
		    next_s < LINUX_OBSERVE_SETTLED_MAX_S ? next_s : LINUX_OBSERVE_SETTLED_MAX_S;
	}
	st->read_s = now_s;
}

void
linux_obs_charge(struct linux_obs_budget *b, double now_s, double cpu_ms, size_t nr_read,
                 int vcpus_read, size_t nr_carried)
{
	double a = LINUX_OBSERVE_COST_ALPHA;
	double units = (double)nr_read + (double)(vcpus_read > 0 ? vcpus_read : 0);

	if (cpu_ms < 0)
		cpu_ms = 0;
	b->tokens_ms -= cpu_ms;
	if (nr_read == 0) {
		b->fixed_ms = (1 - a) * b->fixed_ms + a * cpu_ms;
	} else {
		double per = (cpu_ms - b->fixed_ms) / units;

		b->unit_ms = (1 - a) * b->unit_ms + a * (per > 0.001 ? per : 0.001);
	}
	b->reads += nr_read;
	b->carried += nr_carried;
	b->cpu_ms += cpu_ms;
	if (b->window_s < 0 || now_s < b->window_s)
		b->window_s = now_s, b->window_cpu_ms = 0;
	b->window_cpu_ms += cpu_ms;
	if (now_s - b->window_s >= LINUX_OBSERVE_WINDOW_S) {
		b->cpu_ms_s = b->window_cpu_ms / (now_s - b->window_s);
		b->window_s = now_s;
		b->window_cpu_ms = 0;
	}
}

bool
linux_obs_differs(uint64_t prev_sig, const uint64_t *prev_faults, uint64_t sig,
                  const uint64_t *faults, int nr)
{
	double prev_sum = 0, sum = 0, moved = 0;

	if (prev_faults == NULL || prev_sig != sig)
		return true;
	for (int n = 0; n < nr; n++) {
		prev_sum += (double)prev_faults[n];
		sum += (double)faults[n];
	}
	if (prev_sum <= 0 || sum <= 0)
		return (prev_sum > 0) != (sum > 0);
	for (int n = 0; n < nr; n++) {
		double d = (double)faults[n] / sum - (double)prev_faults[n] / prev_sum;

		moved += d < 0 ? -d : d;
	}
	return moved * 1000.0 >= LINUX_OBSERVE_CHANGE_PERMILLE;
}
