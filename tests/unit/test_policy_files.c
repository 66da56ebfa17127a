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
#include "policy/util.h"

/* Seconds after which a test that waits on a FIFO is killed: a hang, never a slow run. */
#define HANG_S 30

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

/*
 * Only regular files are policy files: a FIFO (which hung the daemon in open() at start and
 * on reload), a link to one, a device are kept with the error "not a regular file", and the
 * rest of the directory is read; a link to a regular file elsewhere is read.  The alarm only
 * turns a hang into a failure.
 */
static void
test_fifo_and_links(void **state)
{
	char dir[] = "/tmp/vnumad-pf-XXXXXX", path[4096], target[4096], err[256];
	struct policy_files pf;
	const struct policy_file *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/web1.xml", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	snprintf(target, sizeof(target), "%s/web2.xml", dir);
	assert_int_equal(symlink(path, target), 0); /* to the FIFO */
	snprintf(path, sizeof(path), "%s/web3.xml", dir);
	assert_int_equal(symlink("/dev/null", path), 0);
	put(dir, "shared.policy", POL("priority='77'"));
	snprintf(path, sizeof(path), "%s/db1.xml", dir);
	snprintf(target, sizeof(target), "%s/shared.policy", dir);
	assert_int_equal(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/gone.xml", dir);
	assert_int_equal(symlink("/nonexistent/vnumad/x.xml", path), 0);
	put(dir, "db2.xml", POL("mode='advisory'"));

	alarm(HANG_S);
	assert_int_equal(policy_files_load(dir, &pf, err, sizeof(err)), 0);
	alarm(0);
	assert_int_equal(pf.nr, 6);
	for (int i = 1; i <= 3; i++) {
		char name[16], want[64];

		snprintf(name, sizeof(name), "web%d", i);
		snprintf(want, sizeof(want), "web%d.xml: not a regular file", i);
		assert_non_null(f = policy_files_match(&pf, name));
		assert_false(f->ok);
		assert_string_equal(f->error, want);
		/* the default policy, all of it */
		assert_int_equal(f->policy.mode, VM_POLICY_MODE_AUTO);
		assert_int_equal(f->policy.priority, VM_POLICY_PRIORITY_DEF);
		assert_true(f->policy.migrate);
		assert_true(f->policy.nodes == NODEMASK_ALL);
	}
	assert_non_null(f = policy_files_match(&pf, "db1"));
	assert_true(f->ok);
	assert_int_equal(f->policy.priority, 77);
	assert_non_null(f = policy_files_match(&pf, "gone"));
	assert_false(f->ok);
	assert_string_equal(f->error, "gone.xml: No such file or directory");
	assert_non_null(f = policy_files_match(&pf, "db2"));
	assert_true(f->ok);
	assert_int_equal(f->policy.mode, VM_POLICY_MODE_ADVISORY);
	policy_files_free(&pf);
	assert_int_equal(system((snprintf(path, sizeof(path), "rm -rf '%s'", dir), path)), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_match_order),
	    cmocka_unit_test(test_missing_and_unreadable),
	    cmocka_unit_test(test_fifo_and_links),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
