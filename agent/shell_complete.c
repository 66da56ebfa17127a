/*
 * shell_complete.c - Tab completion candidates for the interactive shell (shell_complete.h).
 */
#include "agent/shell_complete.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "policy/util.h"

/* Longest word of a line that completion looks at; a longer one gets no candidates. */
#define SHELL_COMPLETE_WORD_MAX 256

/* The line up to the cursor, cut into words; the last one is the word being completed. */
struct shell_complete_line {
	char words[CLI_MAX_PARAMS * 2 + 2][SHELL_COMPLETE_WORD_MAX];
	int nr_done;     /* complete words before the one under the cursor */
	size_t start;    /* where the word under the cursor begins */
	bool too_long;   /* a word or the word count is beyond what is kept */
	const char *cur; /* the word under the cursor (a prefix to match) */
};

static bool
shell_complete_blank(char c)
{
	return c == ' ' || c == '\t';
}

static void
shell_complete_cut(const char *line, size_t point, struct shell_complete_line *l)
{
	const int max_words = (int)(sizeof(l->words) / sizeof(l->words[0]));
	size_t i = 0;

	memset(l, 0, sizeof(*l));
	for (;;) {
		size_t begin, len;

		while (i < point && shell_complete_blank(line[i]))
			i++;
		begin = i;
		while (i < point && !shell_complete_blank(line[i]))
			i++;
		len = i - begin;
		if (l->nr_done == max_words || len >= SHELL_COMPLETE_WORD_MAX) {
			l->too_long = true;
			return;
		}
		memcpy(l->words[l->nr_done], line + begin, len);
		l->words[l->nr_done][len] = '\0';
		if (i == point) { /* the word under the cursor, maybe empty */
			l->start = begin;
			l->cur = l->words[l->nr_done];
			return;
		}
		l->nr_done++;
	}
}

static void
shell_matches_add(struct shell_matches *m, const char *prefix, const char *word, size_t len)
{
	char *copy;

	if (len < strlen(prefix) || strncmp(word, prefix, strlen(prefix)) != 0)
		return;
	copy = xmalloc(len + 1);
	memcpy(copy, word, len);
	copy[len] = '\0';
	util_array_reserve((void **)&m->v, &m->cap, (size_t)m->nr + 1, sizeof(*m->v));
	m->v[m->nr++] = copy;
}

static void
shell_matches_add_commands(struct shell_matches *m, const struct cli_command *table,
                           const char *prefix)
{
	for (const struct cli_command *c = table; c->name != NULL; c++) {
		shell_matches_add(m, prefix, c->name, strlen(c->name));
		for (int a = 0; a < CLI_MAX_ALIASES && c->aliases[a] != NULL; a++)
			shell_matches_add(m, prefix, c->aliases[a], strlen(c->aliases[a]));
	}
}

/* The candidates for a value of placeholder type. */
static void
shell_matches_add_value(struct shell_matches *m, const struct cli_command *table, const char *type,
                        const char *prefix, shell_vms_fn vms, void *vms_arg)
{
	if (strchr(type, '|') != NULL) {
		for (const char *w = type;; w++) {
			size_t len = strcspn(w, "|");

			shell_matches_add(m, prefix, w, len);
			w += len;
			if (*w == '\0')
				break;
		}
	} else if (strcmp(type, "VM") == 0 && vms != NULL) {
		const char *const *names = NULL;
		int nr = vms(vms_arg, &names);

		for (int i = 0; i < nr; i++)
			shell_matches_add(m, prefix, names[i], strlen(names[i]));
	} else if (strcmp(type, "COMMAND") == 0) {
		shell_matches_add_commands(m, table, prefix);
	}
}

static void
shell_matches_add_options(struct shell_matches *m, const struct cli_args *args, const char *prefix)
{
	char opt[CLI_NAME_MAX + 2];
	bool json = false;

	for (int i = 0; i < args->nr_params; i++) {
		if (args->params[i].positional)
			continue;
		snprintf(opt, sizeof(opt), "--%s", args->params[i].name);
		shell_matches_add(m, prefix, opt, strlen(opt));
		json = json || strcmp(args->params[i].name, "json") == 0;
	}
	if (!json) /* the global option, accepted after any command */
		shell_matches_add(m, prefix, "--json", strlen("--json"));
}

/*
 * The placeholder the word under the cursor fills: the option whose value it is, or the next
 * positional.  NULL when it is none (all positionals given, an option's own value given
 * with '=').
 */
static const struct cli_param *
shell_complete_param(const struct cli_args *args, const struct shell_complete_line *l)
{
	const struct cli_param *pending = NULL;
	int nr_positional = 0;

	for (int w = 1; w < l->nr_done; w++) {
		const char *word = l->words[w];

		if (pending != NULL) {
			pending = NULL;
		} else if (strncmp(word, "--", 2) == 0 && strchr(word, '=') == NULL) {
			for (int i = 0; i < args->nr_params; i++) {
				const struct cli_param *p = &args->params[i];

				if (!p->positional && p->type[0] != '\0' &&
				    strcmp(p->name, word + 2) == 0)
					pending = p;
				if (p->positional && strcmp(p->name, "vm") == 0 &&
				    strcmp(word, "--domain") == 0)
					pending = p; /* virsh's name for the VM (cli.h) */
			}
		} else if (strncmp(word, "--", 2) != 0) {
			nr_positional++;
		}
	}
	if (pending != NULL)
		return pending;
	for (int i = 0; i < args->nr_params; i++) {
		if (args->params[i].positional && nr_positional-- == 0)
			return &args->params[i];
	}
	return NULL;
}

static int
shell_matches_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sort and drop duplicates (an alias may equal a VM name; choices may repeat). */
static void
shell_matches_sort(struct shell_matches *m)
{
	int kept = 0;

	if (m->nr == 0)
		return;
	qsort(m->v, (size_t)m->nr, sizeof(*m->v), shell_matches_cmp);
	for (int i = 0; i < m->nr; i++) {
		if (kept > 0 && strcmp(m->v[kept - 1], m->v[i]) == 0)
			free(m->v[i]);
		else
			m->v[kept++] = m->v[i];
	}
	m->nr = kept;
}

int
shell_complete(const struct cli_command *table, const char *line, size_t point, shell_vms_fn vms,
               void *vms_arg, struct shell_matches *m)
{
	struct shell_complete_line l;
	const struct cli_command *cmd;
	struct cli_args args;
	char err[128];

	memset(m, 0, sizeof(*m));
	shell_complete_cut(line, point, &l);
	m->start = l.start;
	if (l.too_long)
		return 0;
	if (l.nr_done == 0) {
		shell_matches_add_commands(m, table, l.cur);
		shell_matches_sort(m);
		return m->nr;
	}
	cmd = cli_command_find(table, l.words[0]);
	if (cmd == NULL || cli_spec_parse(cmd->spec, &args, err, sizeof(err)) < 0)
		return 0;
	if (l.cur[0] == '-') {
		shell_matches_add_options(m, &args, l.cur);
	} else {
		const struct cli_param *p = shell_complete_param(&args, &l);

		if (p != NULL)
			shell_matches_add_value(m, table, p->type, l.cur, vms, vms_arg);
	}
	shell_matches_sort(m);
	return m->nr;
}

void
shell_matches_free(struct shell_matches *m)
{
	for (int i = 0; i < m->nr; i++)
		free(m->v[i]);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

size_t
shell_matches_common_len(const struct shell_matches *m)
{
	size_t len;

	if (m->nr == 0)
		return 0;
	len = strlen(m->v[0]);
	for (int i = 1; i < m->nr; i++) {
		size_t j = 0;

		while (j < len && m->v[i][j] == m->v[0][j])
			j++;
		len = j;
	}
	return len;
}
