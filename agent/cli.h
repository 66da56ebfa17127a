/*
 * cli.h - vnumactl's command grammar and dispatcher (BRIEF section 4.5).
 *
 * Every command is one row of a table: its name, aliases, a typed argument spec, its handler,
 * whether it changes state, and a one-line help.  The spec is a string of placeholders in the
 * style of a usage line, e.g. "VM [--node N] [--policy LIST] [--json]":
 *
 *   NAME            a required positional argument; also accepted as "--name VALUE"
 *   [NAME]          an optional positional argument
 *   --opt TYPE      a required option with a value ("--opt value" or "--opt=value")
 *   [--opt TYPE]    an optional option with a value
 *   [--flag]        an optional flag (no value)
 *
 * TYPE is a placeholder word; N (a non-negative integer) is checked when parsed, and so is a
 * choice written as lower-case words joined by '|' ("yes|no": the value must be one of them);
 * every other type is passed through as text for the handler to check.  Options and
 * positionals may come in any order; "--" ends the options.  "--json" is global and accepted
 * after any command; "--domain" is accepted as another name for a "VM" placeholder (virsh's
 * spelling).  Errors go to stderr as "error: ..." and give exit status 1.
 *
 * With no command, a table that has a "quit" command runs the interactive shell (shell.h) on
 * standard input; a table without one (as in tests) reports that no command was given.
 */
#ifndef VNUMAD_AGENT_CLI_H
#define VNUMAD_AGENT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CLI_MAX_PARAMS  16 /* placeholders in one spec */
#define CLI_NAME_MAX    32 /* longest option or placeholder name, with its NUL */
#define CLI_MAX_ALIASES 4

/* One placeholder of a spec. */
struct cli_param {
	char name[CLI_NAME_MAX]; /* option name without "--"; positional: placeholder, lowercased */
	char type[CLI_NAME_MAX]; /* value placeholder ("FILE", "N", ...); "" for a flag */
	bool positional;
	bool optional;
};

/* A parsed command line for one command.  Values point into argv; nothing is allocated. */
struct cli_args {
	int nr_params;
	struct cli_param params[CLI_MAX_PARAMS];
	const char *values[CLI_MAX_PARAMS]; /* NULL: not given; flags given are "" */
};

struct cli_command;

/* What every handler gets: where to write and the global options.  Not owned by handlers. */
/*
 * One wording for each kind of command-line error, for every command and option (OPT as
 * typed: "--node", "-c").  A bad value: "bad WHAT 'VALUE': want WHAT-IS-WANTED" (WHAT: the
 * option, such as --node, or the argument, such as vCPU).
 */
#define CLI_ERR_UNKNOWN_OPTION  "unknown option '%s'"
#define CLI_ERR_UNKNOWN_COMMAND "unknown command '%s'"
#define CLI_ERR_NEEDS_VALUE     "option '%s' needs a value (%s)" /* OPT, placeholder */
#define CLI_ERR_TAKES_NO_VALUE  "option '%s' takes no value"
#define CLI_ERR_GIVEN_TWICE     "option '%s' given twice"
#define CLI_ERR_MISSING_OPTION  "missing option '%s'"
#define CLI_ERR_MISSING_ARG     "missing argument %s"
#define CLI_ERR_UNEXPECTED_ARG  "unexpected argument '%s'"
#define CLI_ERR_BAD_VALUE       "bad %s '%s': want %s"

struct cli_ctx {
	FILE *out;
	FILE *err;
	const char *socket_path;         /* -c/--connect; NULL means the default socket */
	bool json;                       /* --json, before or after the command */
	const struct cli_command *table; /* the table being dispatched (for help) */
	const char *prog;                /* program name for usage lines */
	bool quit;                       /* set by "quit": the interactive shell stops */
};

struct cli_command {
	const char *name;                     /* NULL ends a table */
	const char *aliases[CLI_MAX_ALIASES]; /* NULL-terminated when shorter */
	const char *spec;
	/*
	 * Returns 0 on success, or -errno after printing "error: ..." to ctx->err; the
	 * dispatcher turns any failure into exit status 1.
	 */
	int (*handler)(struct cli_ctx *ctx, const struct cli_args *args);
	bool needs_write; /* changes daemon state: needs root or the configured group */
	const char *help; /* one line */
	/*
	 * An option's value may be empty (`policy VM --group ''`: back to no group); else an
	 * empty value is refused as a missing one.
	 */
	bool empty_values;
};

/* vnumactl's commands, NULL-name terminated. */
extern const struct cli_command cli_commands[];

/* Parse a spec string into args->params (values cleared).  0 or -EINVAL with a message. */
int cli_spec_parse(const char *spec, struct cli_args *args, char *err, size_t errlen);

/*
 * Parse argv[0..argc-1] (the words after the command name) against cmd's spec.  Sets *json
 * when "--json" appears and the spec does not list it.  0 or -EINVAL with a message.
 */
int cli_args_parse(const struct cli_command *cmd, int argc, char **argv, struct cli_args *args,
                   bool *json, char *err, size_t errlen);

/* The value given for an option or positional (by lowercase name), or NULL. */
const char *cli_args_get(const struct cli_args *args, const char *name);
/* Whether a flag or option was given. */
bool cli_args_has(const struct cli_args *args, const char *name);

/* Find a command by name or alias in a table, or NULL. */
const struct cli_command *cli_command_find(const struct cli_command *table, const char *name);

/* Run argv[0] (a command name) with its arguments from table.  Returns the exit status. */
int cli_dispatch(struct cli_ctx *ctx, int argc, char **argv);

/*
 * The whole of vnumactl: global options, then the command from table.  argv[0] is the
 * program name.  Returns the exit status (0 or 1).
 */
int cli_run(const struct cli_command *table, int argc, char **argv, FILE *out, FILE *err);

/* The "help [COMMAND]" handler, usable in any table. */
int cli_help_cmd(struct cli_ctx *ctx, const struct cli_args *args);

/* The "quit" handler: sets ctx->quit (ends the interactive shell; a no-op elsewhere). */
int cli_quit_cmd(struct cli_ctx *ctx, const struct cli_args *args);

#endif
