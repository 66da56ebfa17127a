/*
 * cli.c - vnumactl's command table, its argument grammar, global options and help.
 *
 * The grammar of each command is the spec string in its table row (see cli.h); a spec is
 * parsed on every dispatch, so a table row is the only place a command's arguments are
 * written down, and help prints the same string.
 */
#include "agent/cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/client.h"
#include "agent/cmd_host.h"
#include "agent/cmd_migrate.h"
#include "agent/cmd_top.h"
#include "agent/cmd_vm.h"
#include "agent/shell.h"
#include "agent/simulate.h"
#include "agent/version.h"

#define CLI_SPEC_MAX   512 /* longest spec string; specs are short usage lines */
#define CLI_PROG       "vnumactl"
#define CLI_HELP_WIDTH 100 /* --help wraps usage lines before this column */

/*
 * The commands of BRIEF 4.5 and docs/protocol.md.  "policy" is read-only in the table: without
 * a setting option it only shows; with one it asks the daemon to change the policy, and the
 * daemon refuses that (403) to a peer that may not write.
 */
const struct cli_command cli_commands[] = {
    {
        .name = "list",
        .spec = "",
        .handler = cmd_list,
        .help = "list the VMs: size, policy mode, state, home nodes and locality",
    },
    {
        .name = "vminfo",
        .aliases = {"dominfo", NULL},
        .spec = "VM",
        .handler = cmd_vminfo,
        .help = "show one VM: policy, placement, memory per node, vCPUs and counters",
    },
    {
        .name = "nodeinfo",
        .spec = "",
        .handler = cmd_nodeinfo,
        .help = "show the host's NUMA nodes: CPUs, load, memory and distances",
    },
    {
        .name = "policy",
        .spec = "VM [--mode auto|advisory|manual|off] [--nodes LIST] [--placement compact|cells] "
                "[--migrate yes|no] [--rate RATE] [--priority N] [--group NAME] [--reset] "
                "[--live] [--config] [--current]",
        .handler = cmd_policy,
        .empty_values = true, /* --group '': no group; --rate '': no per-VM cap */
        .help = "show a VM's policy; any setting option changes it, --reset drops what "
                "vnumactl set (needs root or the group)",
    },
    {
        .name = "pin",
        .spec = "VM VCPU NODE",
        .handler = cmd_pin,
        .needs_write = true,
        .help = "pin one vCPU to a node list; the VM switches to mode manual",
    },
    {
        .name = "unpin",
        .spec = "VM [VCPU]",
        .handler = cmd_unpin,
        .needs_write = true,
        .help = "remove one vCPU's pin (all without VCPU); the VM returns to its own mode",
    },
    {
        .name = "migrate",
        .spec = "VM --node N [--force] [--no-wait] [--timeout S]",
        .handler = cmd_migrate,
        .needs_write = true,
        .help = "move a whole VM to one node and wait for its memory (progress bar); "
                "refused when it does not fit unless --force",
    },
    {
        .name = "stats",
        .spec = "[VM]",
        .handler = cmd_stats,
        .help = "show the host's counters since start, or one VM's",
    },
    {
        .name = "events",
        .spec = "[--since N] [--limit N] [--vm VM] [--follow]",
        .handler = cmd_events,
        .help = "show recent decisions and changes; --follow prints new ones as they come",
    },
    {
        .name = "explain",
        .spec = "VM",
        .handler = cmd_explain,
        .help = "explain why a VM is where it is: its home and the events that put it there",
    },
    {
        .name = "top",
        .spec = "[--once] [--interval S]",
        .handler = cmd_top,
        .help = "live view of nodes and VMs ('q' quits)",
    },
    {
        .name = "place",
        .spec = "--vcpus N --memory SIZE [--cells K] [--reserve]",
        .handler = cmd_place,
        .help = "advise where a new VM would go, from the live host state; --reserve holds "
                "it for a VM about to start",
    },
    {
        .name = "status",
        .spec = "",
        .handler = cmd_status,
        .help = "show the daemon's state: backend, uptime, rounds, paused, sampling",
    },
    {
        .name = "pause",
        .spec = "",
        .handler = cmd_pause,
        .needs_write = true,
        .help = "stop acting on VMs (decisions and counters go on, as advisory)",
    },
    {
        .name = "resume",
        .spec = "",
        .handler = cmd_resume,
        .needs_write = true,
        .help = "start acting on VMs again",
    },
    {
        .name = "reload",
        .spec = "",
        .handler = cmd_reload,
        .needs_write = true,
        .help = "re-read the configuration file (as SIGHUP); a bad file changes nothing",
    },
    {
        .name = "simulate",
        .spec = "[SCENARIO] [--policy LIST] [--host-profile NAME] [--json] [--plot FILE]",
        .handler = simulate_cmd,
        .needs_write = false,
        .help = "run a scenario on a simulated host under each balancer and compare them",
    },
    {
        .name = "help",
        .spec = "[COMMAND]",
        .handler = cli_help_cmd,
        .needs_write = false,
        .help = "list the commands, or show how to use one",
    },
    {
        .name = "quit",
        .aliases = {"exit", NULL},
        .spec = "",
        .handler = cli_quit_cmd,
        .help = "leave the interactive shell",
    },
    {.name = NULL},
};

__attribute__((format(printf, 3, 4))) static int
cli_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* An upper-case placeholder word: [A-Z][A-Z0-9_]*. */
static bool
cli_word_is_type(const char *w)
{
	if (!isupper((unsigned char)w[0]))
		return false;
	for (; *w != '\0'; w++)
		if (!isupper((unsigned char)*w) && !isdigit((unsigned char)*w) && *w != '_')
			return false;
	return true;
}

/* A choice type: two or more [a-z0-9-]+ words joined by '|', e.g. "yes|no". */
static bool
cli_word_is_choice(const char *w)
{
	bool bar = false, word = false;

	for (; *w != '\0'; w++) {
		if (*w == '|') {
			if (!word)
				return false;
			bar = true;
			word = false;
		} else if (islower((unsigned char)*w) || isdigit((unsigned char)*w) || *w == '-') {
			word = true;
		} else {
			return false;
		}
	}
	return bar && word;
}

/* An option's value placeholder: a type word or a choice. */
static bool
cli_word_is_value(const char *w)
{
	return cli_word_is_type(w) || cli_word_is_choice(w);
}

/* An option name: [a-z][a-z0-9-]*. */
static bool
cli_word_is_option(const char *w)
{
	if (!islower((unsigned char)w[0]))
		return false;
	for (; *w != '\0'; w++)
		if (!islower((unsigned char)*w) && !isdigit((unsigned char)*w) && *w != '-')
			return false;
	return true;
}

static int
cli_spec_add(struct cli_args *args, const char *name, const char *type, bool positional,
             bool optional, char *err, size_t errlen)
{
	struct cli_param *p;

	if (args->nr_params == CLI_MAX_PARAMS)
		return cli_fail(err, errlen, "spec has more than %d placeholders", CLI_MAX_PARAMS);
	if (strlen(name) >= CLI_NAME_MAX || strlen(type) >= CLI_NAME_MAX)
		return cli_fail(err, errlen, "spec word '%s' too long", name);
	if (positional ? !cli_word_is_type(type) : !cli_word_is_option(name))
		return cli_fail(err, errlen, "bad spec word '%s'", positional ? type : name);
	if (!positional && type[0] != '\0' && !cli_word_is_value(type))
		return cli_fail(err, errlen, "bad spec type '%s' for --%s", type, name);
	for (int i = 0; i < args->nr_params; i++) {
		if (positional && args->params[i].positional && args->params[i].optional &&
		    !optional)
			return cli_fail(err, errlen, "required %s after an optional one", type);
	}
	p = &args->params[args->nr_params];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->type, sizeof(p->type), "%s", type);
	for (char *c = p->name; positional && *c != '\0'; c++)
		*c = (char)tolower((unsigned char)*c);
	p->positional = positional;
	p->optional = optional;
	for (int i = 0; i < args->nr_params; i++)
		if (strcmp(args->params[i].name, p->name) == 0)
			return cli_fail(err, errlen, "spec names '%s' twice", p->name);
	args->values[args->nr_params++] = NULL;
	return 0;
}

/* Strip a trailing ']' from tok; true when there was one. */
static bool
cli_spec_close(char *tok)
{
	size_t n = strlen(tok);

	if (n == 0 || tok[n - 1] != ']')
		return false;
	tok[n - 1] = '\0';
	return true;
}

int
cli_spec_parse(const char *spec, struct cli_args *args, char *err, size_t errlen)
{
	char buf[CLI_SPEC_MAX], *tok[CLI_SPEC_MAX / 2], *save = NULL;
	int nr_tok = 0, r;

	memset(args, 0, sizeof(*args));
	if (strlen(spec) >= sizeof(buf))
		return cli_fail(err, errlen, "spec too long");
	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *t = strtok_r(buf, " ", &save); t != NULL; t = strtok_r(NULL, " ", &save))
		tok[nr_tok++] = t;
	for (int i = 0; i < nr_tok; i++) {
		char *t = tok[i];
		bool optional = t[0] == '[';
		bool closed;

		t += optional;
		closed = optional ? cli_spec_close(t) : true;
		if (strncmp(t, "--", 2) != 0) {
			if (!closed)
				return cli_fail(err, errlen, "unclosed '[' at '%s'", t);
			r = cli_spec_add(args, t, t, true, optional, err, errlen);
		} else if (!closed) {
			/* "[--opt TYPE]": the type closes the group. */
			if (i + 1 == nr_tok || !cli_spec_close(tok[i + 1]))
				return cli_fail(err, errlen, "unclosed '[' at '%s'", t);
			r = cli_spec_add(args, t + 2, tok[++i], false, true, err, errlen);
		} else if (!optional && i + 1 < nr_tok && cli_word_is_value(tok[i + 1])) {
			r = cli_spec_add(args, t + 2, tok[++i], false, false, err, errlen);
		} else {
			r = cli_spec_add(args, t + 2, "", false, optional, err, errlen);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int
cli_param_find(const struct cli_args *args, const char *name, size_t len)
{
	for (int i = 0; i < args->nr_params; i++)
		if (strlen(args->params[i].name) == len &&
		    strncmp(args->params[i].name, name, len) == 0)
			return i;
	return -1;
}

/* Whether value is one of the '|'-separated words of choice. */
static bool
cli_choice_match(const char *choice, const char *value)
{
	size_t len = strlen(value);

	for (const char *w = choice;; w++) {
		size_t wlen = strcspn(w, "|");

		if (wlen == len && strncmp(w, value, len) == 0)
			return true;
		w += wlen;
		if (*w == '\0')
			return false;
	}
}

/* Check a value against its placeholder type. */
static int
cli_value_check(const struct cli_param *p, const char *value, char *err, size_t errlen)
{
	const char *c = value;

	if (strchr(p->type, '|') != NULL && !cli_choice_match(p->type, value))
		return cli_fail(err, errlen, "option '--%s': '%s' is not one of %s", p->name, value,
		                p->type);
	if (strcmp(p->type, "N") != 0)
		return 0;
	while (isdigit((unsigned char)*c))
		c++;
	if (c == value || *c != '\0' || c - value > 9) {
		char what[CLI_NAME_MAX + 3];

		snprintf(what, sizeof(what), "%s%s", p->positional ? "" : "--", p->name);
		return cli_fail(err, errlen, CLI_ERR_BAD_VALUE, what, value,
		                "a non-negative integer");
	}
	return 0;
}

/*
 * One "--name[=value]" word at argv[*i]; consumes the next word as the value when needed.
 */
static int
cli_args_option(const struct cli_command *cmd, struct cli_args *args, int argc, char **argv, int *i,
                bool *json, char *err, size_t errlen)
{
	const char *word = argv[*i] + 2, *eq = strchr(word, '=');
	size_t len = eq != NULL ? (size_t)(eq - word) : strlen(word);
	const char *value = eq != NULL ? eq + 1 : NULL;
	int idx = cli_param_find(args, word, len);
	const struct cli_param *p;
	char opt[256]; /* "--name" as typed, for the error (a long bogus one is cut) */

	if (idx < 0 && len == 6 && strncmp(word, "domain", 6) == 0)
		idx = cli_param_find(args, "vm", 2); /* virsh's name for the VM */
	if (idx < 0 && len == 4 && strncmp(word, "json", 4) == 0 && value == NULL) {
		*json = true; /* the global option, after the command */
		return 0;
	}
	if (idx < 0) {
		snprintf(opt, sizeof(opt), "--%.*s", (int)len, word);
		return cli_fail(err, errlen, CLI_ERR_UNKNOWN_OPTION, opt);
	}
	p = &args->params[idx];
	snprintf(opt, sizeof(opt), "--%s", p->name);
	if (p->type[0] == '\0') {
		if (value != NULL)
			return cli_fail(err, errlen, CLI_ERR_TAKES_NO_VALUE, opt);
		args->values[idx] = "";
		return 0;
	}
	if (value == NULL) {
		if (*i + 1 >= argc || strncmp(argv[*i + 1], "--", 2) == 0)
			return cli_fail(err, errlen, CLI_ERR_NEEDS_VALUE, opt, p->type);
		value = argv[++*i];
	}
	if (value[0] == '\0' && !cmd->empty_values)
		return cli_fail(err, errlen, CLI_ERR_NEEDS_VALUE, opt, p->type);
	if (args->values[idx] != NULL)
		return cli_fail(err, errlen, CLI_ERR_GIVEN_TWICE, opt);
	args->values[idx] = value;
	return cli_value_check(p, value, err, errlen);
}

static int
cli_args_positional(struct cli_args *args, const char *word, char *err, size_t errlen)
{
	for (int i = 0; i < args->nr_params; i++) {
		if (!args->params[i].positional || args->values[i] != NULL)
			continue;
		args->values[i] = word;
		return cli_value_check(&args->params[i], word, err, errlen);
	}
	return cli_fail(err, errlen, CLI_ERR_UNEXPECTED_ARG, word);
}

static int
cli_args_check_required(const struct cli_args *args, char *err, size_t errlen)
{
	for (int i = 0; i < args->nr_params; i++) {
		const struct cli_param *p = &args->params[i];

		if (p->optional || args->values[i] != NULL)
			continue;
		char opt[CLI_NAME_MAX + 3];

		if (p->positional)
			return cli_fail(err, errlen, CLI_ERR_MISSING_ARG, p->type);
		snprintf(opt, sizeof(opt), "--%s", p->name);
		return cli_fail(err, errlen, CLI_ERR_MISSING_OPTION, opt);
	}
	return 0;
}

int
cli_args_parse(const struct cli_command *cmd, int argc, char **argv, struct cli_args *args,
               bool *json, char *err, size_t errlen)
{
	bool options_done = false;
	int r;

	r = cli_spec_parse(cmd->spec, args, err, errlen);
	if (r < 0)
		return r;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!options_done && strcmp(a, "--") == 0) {
			options_done = true;
			continue;
		}
		if (!options_done && strncmp(a, "--", 2) == 0)
			r = cli_args_option(cmd, args, argc, argv, &i, json, err, errlen);
		else if (!options_done && a[0] == '-' && a[1] != '\0')
			r = cli_fail(err, errlen, CLI_ERR_UNKNOWN_OPTION, a);
		else
			r = cli_args_positional(args, a, err, errlen);
		if (r < 0)
			return r;
	}
	return cli_args_check_required(args, err, errlen);
}

const char *
cli_args_get(const struct cli_args *args, const char *name)
{
	int idx = cli_param_find(args, name, strlen(name));

	return idx < 0 ? NULL : args->values[idx];
}

bool
cli_args_has(const struct cli_args *args, const char *name)
{
	return cli_args_get(args, name) != NULL;
}

const struct cli_command *
cli_command_find(const struct cli_command *table, const char *name)
{
	for (const struct cli_command *c = table; c->name != NULL; c++) {
		if (strcmp(c->name, name) == 0)
			return c;
		for (int a = 0; a < CLI_MAX_ALIASES && c->aliases[a] != NULL; a++)
			if (strcmp(c->aliases[a], name) == 0)
				return c;
	}
	return NULL;
}

static void cli_command_usage_print(const struct cli_ctx *ctx, const struct cli_command *c);

int
cli_dispatch(struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_command *cmd = cli_command_find(ctx->table, argv[0]);
	struct cli_args args;
	bool json = false;
	char err[256];

	if (cmd == NULL) {
		fprintf(ctx->err, "error: " CLI_ERR_UNKNOWN_COMMAND "\n", argv[0]);
		return 1;
	}
	/* CMD --help: what `help CMD` prints, as virsh does (before any other check). */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0) {
			cli_command_usage_print(ctx, cmd);
			return 0;
		}
	if (cli_args_parse(cmd, argc - 1, argv + 1, &args, &json, err, sizeof(err)) < 0) {
		fprintf(ctx->err, "error: %s\n", err);
		fprintf(ctx->err, "usage: %s %s %s\n", ctx->prog, cmd->name, cmd->spec);
		return 1;
	}
	if (json || cli_args_has(&args, "json"))
		ctx->json = true;
	return cmd->handler(ctx, &args) == 0 ? 0 : 1;
}

/*
 * Value of "-c SOCKET", "-cSOCKET", "--connect SOCKET" or "--connect=SOCKET" at argv[*i];
 * "--socket" is the same (the daemon's own name for it).
 */
static int
cli_global_connect(struct cli_ctx *ctx, int argc, char **argv, int *i)
{
	const char *a = argv[*i];

	if (strncmp(a, "--connect=", 10) == 0) {
		ctx->socket_path = a + 10;
	} else if (strncmp(a, "--socket=", 9) == 0) {
		ctx->socket_path = a + 9;
	} else if (strncmp(a, "-c", 2) == 0 && a[2] != '\0') {
		ctx->socket_path = a + 2;
	} else if (*i + 1 < argc) {
		ctx->socket_path = argv[++*i];
	} else {
		fprintf(ctx->err, "error: " CLI_ERR_NEEDS_VALUE "\n", a, "SOCKET");
		return -EINVAL;
	}
	if (ctx->socket_path[0] == '\0') {
		fprintf(ctx->err, "error: " CLI_ERR_NEEDS_VALUE "\n", a, "SOCKET");
		return -EINVAL;
	}
	if (cmd_socket_uri_refuse(ctx,
	                          a[1] != '-'                      ? "-c"
	                          : strncmp(a, "--socket", 8) == 0 ? "--socket"
	                                                           : "--connect",
	                          ctx->socket_path) < 0)
		return -EINVAL;
	if (strlen(ctx->socket_path) > CLIENT_SOCKET_PATH_MAX) {
		fprintf(ctx->err,
		        "error: option '%.*s': the socket path is %zu bytes, longer than the %d a "
		        "Unix socket address holds\n",
		        a[1] == '-' ? (int)strcspn(a, "=") : 2, a, strlen(ctx->socket_path),
		        CLIENT_SOCKET_PATH_MAX);
		return -ENAMETOOLONG;
	}
	return 0;
}

/*
 * A command's usage (name, spec, aliases) at column indent, wrapped before CLI_HELP_WIDTH
 * with continuation lines indented two more.
 */
static void
cli_usage_line_print(FILE *f, int indent, const struct cli_command *c)
{
	char text[CLI_SPEC_MAX * 2], *save = NULL;
	int col = indent;

	snprintf(text, sizeof(text), "%s %s", c->name, c->spec);
	for (int a = 0; a < CLI_MAX_ALIASES && c->aliases[a] != NULL; a++) {
		size_t used = strlen(text);

		snprintf(text + used, sizeof(text) - used, "%s%s", a == 0 ? " (alias: " : ", ",
		         c->aliases[a]);
	}
	if (c->aliases[0] != NULL)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), ")");
	fprintf(f, "%*s", indent, "");
	for (char *w = strtok_r(text, " ", &save); w != NULL; w = strtok_r(NULL, " ", &save)) {
		int len = (int)strlen(w);

		if (col > indent && col + 1 + len > CLI_HELP_WIDTH) {
			fprintf(f, "\n%*s", indent + 2, "");
			col = indent + 2;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fputs(w, f);
		col += len;
	}
	fputc('\n', f);
}

static void
cli_usage_print(const struct cli_ctx *ctx, FILE *f)
{
	int width = 0;

	for (const struct cli_command *c = ctx->table; c->name != NULL; c++)
		if ((int)strlen(c->name) > width)
			width = (int)strlen(c->name);
	fprintf(f, "usage: %s [-c SOCKET] [--json] COMMAND [ARGS]\n\n", ctx->prog);
	fprintf(f,
	        "global options:\n"
	        "  -c, --connect SOCKET  the daemon's control socket (default $" CLIENT_SOCKET_ENV
	        ",\n"
	        "                        else " CLIENT_DEFAULT_SOCKET "; not a libvirt URI)\n"
	        "      --socket SOCKET   the same (vnumad's name for it)\n"
	        "      --json            machine-readable output\n"
	        "  -h, --help            show this help\n"
	        "  -V, --version         show the version\n\n"
	        "commands:\n");
	for (const struct cli_command *c = ctx->table; c->name != NULL; c++) {
		fprintf(f, "  %-*s  %s\n", width, c->name, c->help);
		cli_usage_line_print(f, width + 6, c);
	}
	fprintf(f,
	        "\nOptions take \"--opt value\" or \"--opt=value\"; a VM is a name or an id, "
	        "also given as\n\"--domain VM\".  With no command, %s reads commands from "
	        "standard input.\n",
	        ctx->prog);
}

/* Returns 1 when the option finished the run (help, version), 0 to go on, -EINVAL. */
static int
cli_global_option(struct cli_ctx *ctx, int argc, char **argv, int *i)
{
	const char *a = argv[*i];

	if (strcmp(a, "--json") == 0) {
		ctx->json = true;
	} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
		cli_usage_print(ctx, ctx->out);
		return 1;
	} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
		fprintf(ctx->out, "%s %s\n", ctx->prog, vnumad_version());
		return 1;
	} else if (strncmp(a, "-c", 2) == 0 || strcmp(a, "--connect") == 0 ||
	           strncmp(a, "--connect=", 10) == 0 || strcmp(a, "--socket") == 0 ||
	           strncmp(a, "--socket=", 9) == 0) {
		return cli_global_connect(ctx, argc, argv, i);
	} else {
		fprintf(ctx->err, "error: " CLI_ERR_UNKNOWN_OPTION "\n", a);
		return -EINVAL;
	}
	return 0;
}

int
cli_run(const struct cli_command *table, int argc, char **argv, FILE *out, FILE *err)
{
	struct cli_ctx ctx = {.out = out, .err = err, .table = table, .prog = CLI_PROG};
	int i, r, status;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (argv[i][0] != '-' || argv[i][1] == '\0')
			break;
		r = cli_global_option(&ctx, argc, argv, &i);
		if (r != 0)
			return r > 0 ? 0 : 1;
	}
	if (i < argc)
		status = cli_dispatch(&ctx, argc - i, argv + i);
	else if (cli_command_find(table, "quit") != NULL)
		status = shell_run(&ctx, stdin); /* BRIEF 4.5: no command, an interactive shell */
	else {
		fprintf(err, "error: no command given; try '%s help'\n", ctx.prog);
		return 1;
	}
	if (fflush(out) != 0 || ferror(out)) {
		fprintf(err, "error: cannot write output: %s\n", strerror(errno));
		return 1;
	}
	return status;
}

static void
cli_command_usage_print(const struct cli_ctx *ctx, const struct cli_command *c)
{
	fprintf(ctx->out, "usage: %s %s %s\n\n  %s\n", ctx->prog, c->name, c->spec, c->help);
	if (c->aliases[0] != NULL) {
		fprintf(ctx->out, "\naliases:");
		for (int a = 0; a < CLI_MAX_ALIASES && c->aliases[a] != NULL; a++)
			fprintf(ctx->out, " %s", c->aliases[a]);
		fprintf(ctx->out, "\n");
	}
	if (c->needs_write)
		fprintf(ctx->out,
		        "\nChanges the daemon's state: needs root or the vnumad group.\n");
}

int
cli_help_cmd(struct cli_ctx *ctx, const struct cli_args *args)
{
	const char *name = cli_args_get(args, "command");
	const struct cli_command *c;

	if (name == NULL) {
		cli_usage_print(ctx, ctx->out);
		return 0;
	}
	c = cli_command_find(ctx->table, name);
	if (c == NULL) {
		fprintf(ctx->err, "error: " CLI_ERR_UNKNOWN_COMMAND "\n", name);
		return -EINVAL;
	}
	cli_command_usage_print(ctx, c);
	return 0;
}

int
cli_quit_cmd(struct cli_ctx *ctx, const struct cli_args *args)
{
	(void)args;
	ctx->quit = true;
	return 0;
}
