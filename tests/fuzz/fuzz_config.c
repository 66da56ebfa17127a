/*
 * fuzz_config.c - libFuzzer target for vnumad.conf (agent/config.c, config_value.c): the
 * input is written to a file in a private directory and read by config_load(), as `vnumad -n`
 * and SIGHUP read it.
 *
 * A file that loads gives values inside the documented bounds; one that does not reports
 * every error as "PATH:LINE: message" lines, and the report fits whatever buffer it is given
 * (loaded again into small ones).  Built by `make fuzz` (docs/fuzzing.md); the gcc build
 * replays tests/fuzz/corpus/config/ (tests/unit/test_fuzz_replay_agent.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/config.h"
#include "tests/fuzz/fuzz_util.h"

#define FUZZ_CONFIG_ERR_MAX 8192

int fuzz_config_run(const uint8_t *data, size_t size);

static void
fuzz_config_check(const struct config *cfg)
{
	if (!(cfg->sample_period_s >= 0.1 && cfg->sample_period_s <= 60) ||
	    !(cfg->rebalance_period_s >= cfg->sample_period_s && cfg->rebalance_period_s <= 600) ||
	    (cfg->socket_mode & ~(mode_t)0777) != 0 || cfg->socket_path[0] != '/' ||
	    cfg->state_file[0] != '/' || cfg->policy_dir[0] != '/' ||
	    memchr(cfg->socket_path, '\0', sizeof(cfg->socket_path)) == NULL ||
	    memchr(cfg->control_group, '\0', sizeof(cfg->control_group)) == NULL ||
	    !(cfg->migrate_rate_mib_s > 0 && cfg->migrate_rate_mib_s <= 1024 * 1024) ||
	    (unsigned)cfg->default_mode > VM_POLICY_MODE_OFF)
		abort();
}

/* Every line of a report names the file, or counts what did not fit. */
static void
fuzz_config_report_check(const char *path, const char *err)
{
	size_t plen = strlen(path);

	for (const char *line = err; *line != '\0';) {
		const char *nl = strchr(line, '\n');

		if (strncmp(line, "(", 1) != 0 &&
		    (strncmp(line, path, plen) != 0 || line[plen] != ':'))
			abort();
		if (nl == NULL)
			break;
		line = nl + 1;
	}
}

int
fuzz_config_run(const uint8_t *data, size_t size)
{
	static const size_t small[] = {1, 2, 40, 161, 300};
	const char *dir = fuzz_dir_reset();
	char path[FUZZ_PATH_MAX + 16], *err = xmalloc(FUZZ_CONFIG_ERR_MAX);
	struct config cfg;
	int ret;

	snprintf(path, sizeof(path), "%s/vnumad.conf", dir);
	if (fuzz_file_write(dir, "vnumad.conf", data, size, false) < 0)
		abort();
	ret = config_load(path, &cfg, err, FUZZ_CONFIG_ERR_MAX);
	if (ret != 0 && ret != -EINVAL)
		abort();
	if (ret == 0)
		fuzz_config_check(&cfg);
	else if (err[0] == '\0')
		abort(); /* a refusal says why */
	fuzz_config_report_check(path, err);
	for (size_t i = 0; ret < 0 && i < sizeof(small) / sizeof(small[0]); i++) {
		char *cut = xmalloc(small[i] + 1);
		const char *count;
		size_t same;

		cut[small[i]] = 'x'; /* one byte past the buffer, which must stay untouched */
		if (config_load(path, &cfg, cut, small[i]) != ret || cut[small[i]] != 'x' ||
		    !fuzz_msg_ok(cut, small[i]))
			abort();
		/* The same report cut to fit, then perhaps the count of errors left out. */
		count = cut[0] == '(' ? cut : strstr(cut, "\n(");
		same = count != NULL ? (size_t)(count - cut) : strlen(cut);
		if (strncmp(cut, err, same) != 0)
			abort();
		free(cut);
	}
	free(err);
	return ret;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_config_run(data, size);
	return 0;
}
#endif
