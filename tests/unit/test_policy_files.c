/*
 * test_policy_files.c - per-VM policy files (agent/policy_files.c): which file a VM takes
 * (exact name, then the most literal pattern, then byte order), bad files kept with their
 * error, what is not a policy file, a missing directory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "agent/policy_files.h"

static void
put(const char *dir, const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

#define POL(attrs) "<vnuma:policy xmlns:vnuma='http://vnumad.org/schemas/policy/1.0' " attrs "/>\n"

static void
test_match_order(void **state)
{
	char dir[] = "/tmp/vnumad-pf-XXXXXX", sub[4096], err[256];
	struct policy_files pf;
	const struct policy_file *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	put(dir, "db-orders.xml", POL("mode='manual'"));
	put(dir, "db-*.xml", POL("mode='advisory'"));
	put(dir, "*.xml", POL("priority='10'"));
	put(dir, "web?.xml", POL("migrate='no'"));
	put(dir, "web*.xml", POL("priority='90'"));
	put(dir, "broken.xml", POL("mode='sometimes'"));
	put(dir, "notes.txt", "not a policy\n");
	put(dir, ".hidden.xml", POL("mode='off'"));
	snprintf(sub, sizeof(sub), "%s/dir.xml", dir);
	assert_int_equal(mkdir(sub, 0700), 0);

	assert_int_equal(policy_files_load(dir, &pf, err, sizeof(err)), 0);
	assert_int_equal(pf.nr, 7); /* six files and the directory; not .txt nor hidden */
	assert_non_null(f = policy_files_match(&pf, "db-orders"));
	assert_int_equal(f->policy.mode, VM_POLICY_MODE_MANUAL);
	assert_non_null(f = policy_files_match(&pf, "db-users"));
	assert_int_equal(f->policy.mode, VM_POLICY_MODE_ADVISORY);
	assert_non_null(f = policy_files_match(&pf, "mail"));
	assert_int_equal(f->policy.priority, 10);
	/* "web?" and "web*" have three literals each: the first in byte order ('*' < '?') */
	assert_non_null(f = policy_files_match(&pf, "web1"));
	assert_string_equal(f->name, "web*");
	assert_int_equal(f->policy.priority, 90);
	/* a bad file is kept with its error and the default policy */
	assert_non_null(f = policy_files_match(&pf, "broken"));
	assert_false(f->ok);
	assert_non_null(strstr(f->error, "broken.xml"));
	assert_non_null(strstr(f->error, "mode"));
	assert_int_equal(f->policy.mode, VM_POLICY_MODE_AUTO);
	assert_non_null(f = policy_files_match(&pf, "dir"));
	assert_false(f->ok);
	assert_non_null(strstr(f->error, "not a regular file"));
	policy_files_free(&pf);

	/* without the catch-all, an unmatched VM has no file */
	snprintf(sub, sizeof(sub), "%s/*.xml", dir);
	assert_int_equal(unlink(sub), 0);
	assert_int_equal(policy_files_load(dir, &pf, err, sizeof(err)), 0);
	assert_null(policy_files_match(&pf, "mail"));
	policy_files_free(&pf);
	assert_int_equal(system((snprintf(sub, sizeof(sub), "rm -rf '%s'", dir), sub)), 0);
}

static void
test_missing_and_unreadable(void **state)
{
	struct policy_files pf;
	char err[256] = "", file[] = "/tmp/vnumad-pf-file-XXXXXX";
	int fd = mkstemp(file);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(policy_files_load("/nonexistent/vnumad/policy.d", &pf, err, sizeof(err)),
	                 0);
	assert_int_equal(pf.nr, 0);
	assert_null(policy_files_match(&pf, "x"));
	policy_files_free(&pf);
	/* a file where the directory should be */
	assert_int_equal(policy_files_load(file, &pf, err, sizeof(err)), -ENOTDIR);
	assert_non_null(strstr(err, "policy_dir"));
	unlink(file);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_match_order),
	    cmocka_unit_test(test_missing_and_unreadable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
