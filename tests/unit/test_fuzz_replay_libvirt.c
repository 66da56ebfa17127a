/*
 * test_fuzz_replay_libvirt.c - runs every file of tests/fuzz/corpus/lv_domain/ through the
 * libvirt domain XML target (tests/fuzz/fuzz_lv_domain.c, compiled in here so gcc builds
 * exercise it) and checks the named seeds: "ok-*" must parse, "einval-*" must give -EINVAL;
 * other files need only be survived.  Needs VNUMAD_SRCDIR (ctest sets it).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/fileio.h"
#include "policy/util.h"

#include "tests/fuzz/fuzz_lv_domain.c"

#define REPLAY_MIN_FILES 10
#define REPLAY_MAX_BYTES (4 * 1024 * 1024)

static void
replay_one(const char *dir, const char *name)
{
	char path[4600], err[256];
	struct lv_domain d;
	size_t len;
	char *data, *exact;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((ret = fileio_read(path, REPLAY_MAX_BYTES, &data, &len)) < 0)
		fail_msg("cannot read %s: %s", path, strerror(-ret));
	exact = xmalloc(len + 1); /* at least one byte, so an empty file is a valid pointer */
	memcpy(exact, data, len);
	free(data);
	LLVMFuzzerTestOneInput((const uint8_t *)exact, len);
	memset(&d, 0, sizeof(d));
	ret = lv_domain_parse(exact, len, &d, err, sizeof(err));
	lv_domain_free(&d);
	print_message("%-32s %4d %s\n", name, ret, ret ? err : "");
	if (strncmp(name, "ok-", 3) == 0)
		assert_int_equal(ret, 0);
	else if (strncmp(name, "einval-", 7) == 0)
		assert_int_equal(ret, -EINVAL);
	free(exact);
}

static void
test_replay_lv_domain(void **state)
{
	const char *src = getenv("VNUMAD_SRCDIR");
	struct dirent **names;
	char dir[4096];
	int n, files = 0;

	(void)state;
	if (src == NULL) {
		print_message("VNUMAD_SRCDIR not set (run through ctest): skipping\n");
		skip();
	}
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/lv_domain", src);
	n = scandir(dir, &names, NULL, alphasort);
	if (n < 0)
		fail_msg("cannot read %s: %s", dir, strerror(errno));
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.') {
			replay_one(dir, names[i]->d_name);
			files++;
		}
		free(names[i]);
	}
	free(names);
	assert_true(files >= REPLAY_MIN_FILES);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replay_lv_domain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
