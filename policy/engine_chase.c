/*
 * engine_chase.c - adverse guests: a VM whose working set moves faster than vnumad can follow.
 *
 * A spanning group's vCPU follows its faults (engine_converge.c).  Each such move is judged
 * once: it paid when the vCPU's faults still favour the node it was moved to
 * ENGINE_CHASE_WINDOW_S later; it was wasted when, before that, they came to favour another
 * node by ENGINE_VCPU_GAIN_MARGIN (compression would move it again: the guest moved its
 * threads or their data, not the host).  Once ENGINE_ADVERSE_MIN_MOVES moves of a VM are
 * judged, the VM is adverse when ENGINE_ADVERSE_WASTED_PERMILLE of them were wasted: vnumad
 * stops chasing it (its vCPUs stay where they are, its memory is not moved but off its
 * policy's nodes) for ENGINE_ADVERSE_BACKOFF_BASE_S, doubled each time the re-test after
 * finds it adverse again, up to ENGINE_ADVERSE_BACKOFF_MAX_S; a re-test it passes resets it.
 * The CPU rules (spread, span relief) still apply to it: they move for load, not faults.
 */
#include "policy/engine_internal.h"

/* The node other than `node` that holds ENGINE_VCPU_GAIN_MARGIN x v's faults there, or -1. */
static int
engine_chase_elsewhere(const struct eng_vm *ev, int v, int node)
{
	const double *f = &ev->fault_avg[(size_t)v * (size_t)ev->nr_nodes];
	int c = ev->vcpu_conv[v];

	if (ev->vcpu_strength[v] < ENGINE_STRONG / 2 || c < 0 || c == node)
		return ENGINE_NO_NODE;
	return f[c] >= ENGINE_VCPU_GAIN_MARGIN * f[node] ? c : ENGINE_NO_NODE;
}

void
engine_chase_note(struct eng_vm *ev, int v, int to, double now_s)
{
	ev->chase_node[v] = to;
	ev->chase_s[v] = now_s;
}

static void
engine_chase_verdict(struct eng_vm *ev, double now_s)
{
	double wait = ENGINE_ADVERSE_BACKOFF_BASE_S;

	ev->chase_last_wasted = ev->chase_wasted;
	ev->chase_last_judged = ev->chase_wasted + ev->chase_paid;
	if ((uint64_t)ev->chase_wasted * 1000 >=
	    (uint64_t)ENGINE_ADVERSE_WASTED_PERMILLE * ev->chase_last_judged) {
		for (int i = 0; i < ev->adverse_level && wait < ENGINE_ADVERSE_BACKOFF_MAX_S; i++)
			wait *= 2;
		if (wait > ENGINE_ADVERSE_BACKOFF_MAX_S)
			wait = ENGINE_ADVERSE_BACKOFF_MAX_S;
		ev->adverse_until_s = now_s + wait;
		ev->adverse_level++;
		ev->adverse_times++;
		/* Settled where they are: no move of theirs is judged while it lasts. */
		for (int k = 0; k < ev->nr_vcpus; k++)
			ev->chase_node[k] = ENGINE_NO_NODE;
	} else {
		ev->adverse_level = 0;
	}
	ev->chase_wasted = ev->chase_paid = 0;
}

void
engine_chase_update(struct eng_vm *ev, double now_s)
{
	ev->adverse = engine_vm_adverse(ev, now_s);
	if (ev->adverse)
		return;
	for (int v = 0; v < ev->nr_vcpus; v++) {
		int node = ev->chase_node[v];

		if (node < 0)
			continue;
		if (ev->vcpu_node[v] != node) {
			/* moved again for another reason (load, policy, a flip): not judged */
			ev->chase_node[v] = ENGINE_NO_NODE;
		} else if (engine_chase_elsewhere(ev, v, node) >= 0) {
			ev->chase_wasted++;
			ev->chase_node[v] = ENGINE_NO_NODE;
		} else if (now_s - ev->chase_s[v] >= ENGINE_CHASE_WINDOW_S) {
			ev->chase_paid++;
			ev->chase_node[v] = ENGINE_NO_NODE;
		}
	}
	if (ev->chase_wasted + ev->chase_paid >= ENGINE_ADVERSE_MIN_MOVES) {
		engine_chase_verdict(ev, now_s);
		ev->adverse = engine_vm_adverse(ev, now_s);
	}
}

bool
engine_vm_adverse(const struct eng_vm *ev, double now_s)
{
	return now_s < ev->adverse_until_s;
}
