/*
 * simulate.c - `vnumactl simulate`: load a scenario (or the built-in default), run it under
 * each chosen balancer, and print the comparison as a table or as JSON, optionally with a
 * locality chart.  The oracle always runs, because vs_oracle is measured against it; it is
 * reported only when chosen.  Results come in registry order whatever order LIST gives.
 */
#include "agent/simulate.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cmd_common.h"
#include "agent/format.h"
#include "agent/svg.h"
#include "host/sim/peers.h"
#include "host/sim/scenario.h"
#include "host/sim/sim.h"
#include "policy/util.h"

#define SIMULATE_ERR_MAX 512 /* bytes of an error message */
#define SIMULATE_ORACLE  "oracle"

static int
simulate_nr_balancers(void)
{
	int nr = 0;

	while (sim_balancers[nr] != NULL)
		nr++;
	return nr;
}

static void
simulate_valid_names(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; sim_balancers[i] != NULL && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i > 0 ? ", " : "",
		                         sim_balancers[i]->name);
}

static int
simulate_policy_select(const char *name, size_t len, bool *selected, int nr, char *err,
                       size_t errlen)
{
	char valid[256];

	for (int i = 0; i < nr; i++) {
		if (strlen(sim_balancers[i]->name) == len &&
		    strncmp(sim_balancers[i]->name, name, len) == 0) {
			selected[i] = true;
			return 0;
		}
	}
	simulate_valid_names(valid, sizeof(valid));
	if (len == 0)
		snprintf(err, errlen, "--policy: empty policy name (valid: %s)", valid);
	else
		snprintf(err, errlen, "--policy: unknown policy '%.*s' (valid: %s)", (int)len, name,
		         valid);
	return -EINVAL;
}

int
simulate_policies_parse(const char *list, bool *selected, int nr, char *err, size_t errlen)
{
	const char *p = list;

	for (int i = 0; i < nr; i++)
		selected[i] = list == NULL;
	while (list != NULL) {
		const char *comma = strchr(p, ',');
		size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		int r = simulate_policy_select(p, len, selected, nr, err, errlen);

		if (r < 0)
			return r;
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	return 0;
}

/* Run every selected balancer and the oracle; fill vs_oracle.  0 or -errno (printed). */
static int
simulate_run_all(struct cli_ctx *ctx, const struct scenario *scn, const bool *selected, int nr,
                 struct sim_result *res)
{
	bool progress = isatty(fileno(ctx->err));
	char err[SIMULATE_ERR_MAX] = "";
	double oracle_throughput = 0.0;
	int r;

	for (int i = 0; i < nr; i++) {
		const struct balancer_ops *bal = sim_balancers[i];
		bool oracle = strcmp(bal->name, SIMULATE_ORACLE) == 0;

		if (!selected[i] && !oracle)
			continue;
		/*
		 * In the interactive shell SIGINT is caught (shell.h): Ctrl-C stops the run
		 * between two balancers.  Elsewhere it ends vnumactl as before.
		 */
		if (cmd_signal_caught(false) == SIGINT) {
			fprintf(ctx->err, "%serror: interrupted\n", progress ? "\n" : "");
			return -EINTR;
		}
		if (progress)
			fprintf(ctx->err, "\rsimulating %-10s", bal->name);
		r = sim_run(scn, bal, &res[i], err, sizeof(err));
		if (r < 0) {
			fprintf(ctx->err, "%serror: %s: %s\n", progress ? "\n" : "", bal->name,
			        err[0] != '\0' ? err : strerror(-r));
			return r;
		}
		if (oracle)
			oracle_throughput = res[i].throughput;
	}
	if (progress)
		fprintf(ctx->err, "\r%-21s\r", "");
	for (int i = 0; i < nr; i++)
		res[i].vs_oracle =
		    oracle_throughput > 0.0 ? res[i].throughput / oracle_throughput : 0.0;
	return 0;
}

/* Print the report of the selected results; write the chart when asked.  0 or -errno. */
static int
simulate_report(struct cli_ctx *ctx, const struct scenario *scn, const bool *selected, int nr,
                const struct sim_result *res, struct format_file *plot)
{
	struct sim_result *shown = xcalloc((size_t)nr, sizeof(*shown));
	struct format_sim_report rep = {
	    .scenario = scn->name,
	    .duration_s = scn->duration_s,
	    .nodes = scn->host.nodes,
	    .cpus_per_node = scn->host.cpus_per_node,
	    .memory_per_node_gib = scn->host.memory_per_node_gib,
	    .nr_vms = scn->nr_vms,
	    .host_profile = sim_profile_name(scn->host_profile),
	    .levers = sim_profile_caps(scn->host_profile),
	    .results = shown,
	};
	char *text;
	int r = 0;

	for (int i = 0; i < nr; i++)
		if (selected[i])
			shown[rep.nr_results++] = res[i]; /* shallow: res keeps the series */
	text = format_sim_report_text(&rep, ctx->json);
	fputs(text, ctx->out);
	free(text);
	if (plot->path != NULL) {
		char *name = xstrdup(plot->path); /* commit releases plot */

		text = svg_locality_chart(scn->name, scn->duration_s, shown, rep.nr_results);
		r = format_file_commit(plot, text, strlen(text));
		if (r < 0)
			fprintf(ctx->err, "error: cannot write %s: %s\n", name, strerror(-r));
		free(text);
		free(name);
	}
	free(shown);
	return r;
}

int
simulate_cmd(struct cli_ctx *ctx, const struct cli_args *args)
{
	const char *path = cli_args_get(args, "scenario"), *plot_path = cli_args_get(args, "plot");
	int nr = simulate_nr_balancers(), r;
	bool *selected = xcalloc((size_t)nr, sizeof(*selected));
	struct sim_result *res = xcalloc((size_t)nr, sizeof(*res));
	struct format_file plot = {.fd = -1};
	struct scenario *scn = NULL;
	char err[SIMULATE_ERR_MAX] = "";

	const char *profile_name = cli_args_get(args, "host-profile");
	enum sim_profile profile = SIM_PROFILE_LINUX;

	r = simulate_policies_parse(cli_args_get(args, "policy"), selected, nr, err, sizeof(err));
	if (r == 0 && profile_name != NULL)
		r = sim_profile_parse(profile_name, &profile, err, sizeof(err));
	if (r == 0)
		r = path != NULL
		        ? scenario_load_file(path, &scn, err, sizeof(err))
		        : scenario_load_string(scenario_default_json, &scn, err, sizeof(err));
	if (r == 0)
		scn->host_profile = profile;
	if (r < 0) {
		fprintf(ctx->err, "error: %s\n", err[0] != '\0' ? err : strerror(-r));
		goto out;
	}
	/* Open the chart's file first, so a bad path fails before a long run. */
	if (plot_path != NULL) {
		r = format_file_open(&plot, plot_path);
		if (r < 0) {
			fprintf(ctx->err, "error: cannot write %s: %s\n", plot_path, strerror(-r));
			goto out;
		}
	}
	r = simulate_run_all(ctx, scn, selected, nr, res);
	if (r == 0)
		r = simulate_report(ctx, scn, selected, nr, res, &plot);
out:
	if (plot.path != NULL)
		format_file_abort(&plot);
	for (int i = 0; i < nr; i++)
		sim_result_free(&res[i]);
	free(res);
	free(selected);
	if (scn != NULL)
		scenario_free(scn);
	return r;
}
