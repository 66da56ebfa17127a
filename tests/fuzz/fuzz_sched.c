/*
 * fuzz_sched.c - libFuzzer target for /proc/<pid>/task/<tid>/sched (host/linux/sched.c); the
 * other per-thread parsers (stat, status, comm) and the cmdline parser ride along on the same
 * input, since they are small and share the scanning code.
 *
 * Built and run by `make fuzz` (docs/fuzzing.md; `make fuzz FUZZ_TARGETS=sched`).
 *
 * Add any crash or interesting input it finds to tests/fuzz/corpus/sched/ (name it "ok-*",
 * "einval-*" or "efbig-*" to pin the sched parser's result); the gcc build replays that
 * directory in every ctest run (tests/unit/test_fuzz_replay_linux.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/linux/procfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
fuzz_sched_known(int ret)
{
	return ret == 0 || ret == -EINVAL || ret == -EFBIG;
}

static void
fuzz_sched_task_files(const char *text, size_t size)
{
	struct linux_task_stat st;
	struct linux_task_status ts;
	struct linux_cmdline cl;
	char comm[LINUX_COMM_MAX];

	if (!fuzz_sched_known(linux_task_stat_parse(text, size, &st)) ||
	    strlen(st.comm) >= LINUX_COMM_MAX)
		abort();
	if (!fuzz_sched_known(linux_task_status_parse(text, size, &ts)))
		abort();
	linux_task_status_free(&ts);
	if (!fuzz_sched_known(linux_comm_parse(text, size, comm)))
		abort();
	if (!fuzz_sched_known(linux_cmdline_parse(text, size, &cl)) || cl.argc < 0 ||
	    (cl.argv != NULL && cl.argv[cl.argc] != NULL))
		abort();
	linux_cmdline_free(&cl);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct linux_sched s;
	int ret = linux_sched_parse(text, size, &s);

	if (!fuzz_sched_known(ret))
		abort();
	for (int i = 0; ret == 0 && i < s.nr_faults; i++)
		if (s.faults[i].node >= LINUX_MAX_NODES ||
		    (i > 0 && s.faults[i].node <= s.faults[i - 1].node))
			abort();
	if (ret < 0 && s.faults != NULL)
		abort();
	linux_sched_free(&s);
	fuzz_sched_task_files(text, size);
	return 0;
}
