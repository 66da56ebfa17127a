/*
 * fuzz_replay.h - the replay driver of the fuzz targets that have a run function
 * (fuzz_<name>_run: the target's work, returning its main parser's result): every file of
 * tests/fuzz/corpus/<name>/ goes through it, in every ctest run and so in gcc builds too, and a
 * seed's name pins the result: "ok-*" must return 0, "einval-*" -EINVAL, "efbig-*" -EFBIG,
 * "enoent-*" -ENOENT, "eproto-*" -EPROTO, "epipe-*" -EPIPE, "eprotonosupport-*"
 * -EPROTONOSUPPORT.  Other files (found by the fuzzer, or crash reproducers) need only be
 * survived.  Include after <cmocka.h>; needs VNUMAD_SRCDIR (ctest sets it).
 */
#ifndef VNUMAD_TESTS_FUZZ_REPLAY_H
#define VNUMAD_TESTS_FUZZ_REPLAY_H

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/fileio.h"
#include "policy/util.h"

#define FUZZ_REPLAY_MIN_FILES 5                 /* each seed corpus has at least this many */
#define FUZZ_REPLAY_MAX_BYTES (4 * 1024 * 1024) /* bigger corpus files are a mistake */

/* The result a seed's name promises; 1 for none. */
static int
fuzz_replay_expected(const char *name)
{
	static const struct {
		const char *prefix;
		int ret;
	} names[] = {{"ok-", 0},
	             {"einval-", -EINVAL},
	             {"efbig-", -EFBIG},
	             {"enoent-", -ENOENT},
	             {"eproto-", -EPROTO},
	             {"epipe-", -EPIPE},
	             {"eprotonosupport-", -EPROTONOSUPPORT}};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strncmp(name, names[i].prefix, strlen(names[i].prefix)) == 0)
			return names[i].ret;
	return 1;
}

static void
fuzz_replay_one(const char *dir, const char *name, int (*run)(const uint8_t *, size_t))
{
	struct util_buf path = {0};
	int want = fuzz_replay_expected(name), ret;
	char *data, *exact;
	size_t len;

	util_buf_printf(&path, "%s/%s", dir, name);
	if ((ret = fileio_read(path.data, FUZZ_REPLAY_MAX_BYTES, &data, &len)) < 0)
		fail_msg("cannot read %s: %s", path.data, strerror(-ret));
	free(path.data);
	exact = xmalloc(len + 1); /* len bytes that matter: ASan catches a read past them */
	memcpy(exact, data, len);
	free(data);
	ret = run((const uint8_t *)exact, len);
	print_message("%-40s %4d\n", name, ret);
	if (want <= 0 && ret != want)
		fail_msg("%s/%s: returned %d (%s), its name promises %d (%s)", dir, name, ret,
		         strerror(ret < 0 ? -ret : 0), want, strerror(-want));
	free(exact);
}

/* Replay tests/fuzz/corpus/<corpus>/ through run. */
static void
fuzz_replay_corpus(const char *corpus, int (*run)(const uint8_t *, size_t))
{
	const char *src = getenv("VNUMAD_SRCDIR");
	struct dirent **names;
	char dir[4096];
	int n, files = 0;

	if (src == NULL) {
		print_message("VNUMAD_SRCDIR not set (run through ctest): skipping\n");
		skip();
	}
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", src, corpus);
	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		fail_msg("cannot read %s: %s", dir, strerror(errno));
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			fuzz_replay_one(dir, names[i]->d_name, run);
			files++;
		}
		free(names[i]);
	}
	free(names);
	if (files < FUZZ_REPLAY_MIN_FILES)
		fail_msg("%s: %d files, fewer than %d: is the corpus lost?", dir, files,
		         FUZZ_REPLAY_MIN_FILES);
}

#endif
