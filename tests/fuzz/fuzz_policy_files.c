/*
 * fuzz_policy_files.c - libFuzzer target for the per-VM policy files (agent/policy_files.c):
 * the directory's file names (VM names and shell patterns) and contents, and which file each
 * VM name takes.
 *
 * The input is several files (tests/fuzz/fuzz_util.h: "%% NAME.xml" lines start them),
 * written into an emptied directory that policy_files_load() then reads.  A section named
 * ":vms" is not written: its lines are VM names to match.  Built by `make fuzz`
 * (docs/fuzzing.md); the gcc build replays tests/fuzz/corpus/policy_files/
 * (tests/unit/test_fuzz_replay_policy.c).  Returns 0 when every file parsed, -EINVAL when some
 * did not.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/policy_files.h"
#include "tests/fuzz/fuzz_util.h"

#define FUZZ_POLICY_FILES_VMS ":vms"
#define FUZZ_POLICY_FILES_MAX 64 /* VM names tried per input */

int fuzz_policy_files_run(const uint8_t *data, size_t size);

/* The loaded files are sorted, named and either a policy or an error. */
static int
fuzz_policy_files_check(const struct policy_files *pf)
{
	int ret = 0;

	for (size_t i = 0; i < pf->nr; i++) {
		const struct policy_file *f = &pf->files[i];

		if (memchr(f->name, '\0', sizeof(f->name)) == NULL || f->name[0] == '\0' ||
		    (i > 0 && strcmp(pf->files[i - 1].name, f->name) >= 0))
			abort();
		if (!f->ok && (memchr(f->error, '\0', sizeof(f->error)) == NULL || !f->error[0]))
			abort();
		if (!f->ok)
			ret = -EINVAL;
	}
	return ret;
}

/* The file a VM takes matches its name, and a file named exactly after it always wins. */
static void
fuzz_policy_files_match(const struct policy_files *pf, const char *vm)
{
	const struct policy_file *m = policy_files_match(pf, vm);

	for (size_t i = 0; i < pf->nr; i++)
		if (strcmp(pf->files[i].name, vm) == 0 && m != &pf->files[i])
			abort();
	if (m != NULL && strcmp(m->name, vm) != 0 && fnmatch(m->name, vm, 0) != 0)
		abort();
	if (m == NULL)
		for (size_t i = 0; i < pf->nr; i++)
			if (fnmatch(pf->files[i].name, vm, 0) == 0)
				abort();
}

int
fuzz_policy_files_run(const uint8_t *data, size_t size)
{
	struct fuzz_file files[FUZZ_FILES_MAX];
	const char *dir = fuzz_dir_reset();
	int nr = fuzz_files_split(data, size, files, FUZZ_FILES_MAX), ret;
	struct policy_files pf;
	struct fuzz_argv vms = {0};
	char err[256];

	for (int i = 0; i < nr; i++) {
		if (strcmp(files[i].path, FUZZ_POLICY_FILES_VMS) == 0 && vms.argv == NULL)
			fuzz_argv_split(files[i].data, files[i].len, '\n', NULL,
			                FUZZ_POLICY_FILES_MAX, &vms);
		else if (files[i].path[0] != '\0' && files[i].path[0] != ':')
			fuzz_file_write(dir, files[i].path, files[i].data, files[i].len,
			                files[i].nul_lines);
	}
	if (policy_files_load(dir, &pf, err, sizeof(err)) != 0)
		abort(); /* the directory is there and readable */
	ret = fuzz_policy_files_check(&pf);
	for (int i = 0; i < vms.argc; i++)
		fuzz_policy_files_match(&pf, vms.argv[i]);
	fuzz_policy_files_match(&pf, "");
	policy_files_free(&pf);
	fuzz_argv_free(&vms);
	return ret;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_policy_files_run(data, size);
	return 0;
}
#endif
