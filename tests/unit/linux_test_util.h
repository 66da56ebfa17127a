/*
 * linux_test_util.h - helpers shared by the Linux backend's unit tests (test_linux_*.c):
 *   ltu_src_path         a path inside the source tree ($VNUMAD_SRCDIR, else ".")
 *   ltu_fixture_root     the root of the fixture tree tests/fixtures/linux/<tree>
 *   ltu_file_write       write a text into <dir>/<rel> (the test fails if it cannot)
 *   ltu_tree_cpus_write  give a tree the CPU files hwloc reads, from its nodes' cpulists
 *                        (tests/fixtures/linux/cpu-topology.sh)
 *   ltu_numa_parse_list  linux_qemu_numa_parse on a NULL-terminated option list, after an
 *                        argv[0] of "qemu-system-x86_64"
 *   ltu_now_s            the monotonic clock, seconds
 *   ltu_opens_now        files this thread has opened through fileio so far (fileio.h)
 *   ltu_dir_remove       remove a test's temporary tree (a message, not a failure, if not)
 *   ltu_load_start       start $VNUMAD_BINDIR/guest-tools/vnuma-load --name <name> with the
 *                        NULL-terminated extra arguments given, its stdout to /dev/null
 *   ltu_load_stop        stop it (SIGTERM) and reap it
 *
 * Everything is static inline, so a test that leaves some helpers unused does not warn. The
 * including file defines _GNU_SOURCE before its first system header, as the tests do.
 */
#ifndef VNUMAD_TESTS_LINUX_TEST_UTIL_H
#define VNUMAD_TESTS_LINUX_TEST_UTIL_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "host/fileio.h"
#include "host/linux/qemu_numa.h"

/* Entries of an argument vector built here: argv[0], the arguments and the closing NULL. */
#define LTU_ARGS_MAX 64

/* The returned path is in a static buffer: the next ltu_src_path or ltu_fixture_root call
 * overwrites it. */
static inline const char *
ltu_src_path(const char *rel)
{
	static char buf[4096];
	const char *src = getenv("VNUMAD_SRCDIR");

	snprintf(buf, sizeof(buf), "%s/%s", src ? src : ".", rel);
	return buf;
}

static inline const char *
ltu_fixture_root(const char *tree)
{
	char rel[512];

	snprintf(rel, sizeof(rel), "tests/fixtures/linux/%s", tree);
	return ltu_src_path(rel);
}

static inline void
ltu_file_write(const char *dir, const char *rel, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

static inline void
ltu_tree_cpus_write(const char *root)
{
	char cmd[8192];

	snprintf(cmd, sizeof(cmd), "sh '%s' '%s'",
	         ltu_src_path("tests/fixtures/linux/cpu-topology.sh"), root);
	assert_int_equal(system(cmd), 0);
}

/*
 * Appends the char * arguments of ap, up to a NULL, to argv[argc...] and closes argv with a
 * NULL. Returns the new argc, or -E2BIG when argv (max entries) cannot hold them all.
 */
static inline int
ltu_args_append(char **argv, int argc, int max, va_list ap)
{
	char *arg;

	while ((arg = va_arg(ap, char *)) != NULL) {
		if (argc >= max - 1)
			return -E2BIG;
		argv[argc++] = arg;
	}
	argv[argc] = NULL;
	return argc;
}

static inline int ltu_numa_parse_list(struct linux_qemu_numa *n, ...) __attribute__((sentinel));

/* linux_qemu_numa_parse's result on "qemu-system-x86_64" followed by the arguments given. */
static inline int
ltu_numa_parse_list(struct linux_qemu_numa *n, ...)
{
	char *argv[LTU_ARGS_MAX] = {"qemu-system-x86_64"};
	int argc;
	va_list ap;

	va_start(ap, n);
	argc = ltu_args_append(argv, 1, LTU_ARGS_MAX, ap);
	va_end(ap);
	if (argc < 0)
		fail_msg("ltu_numa_parse_list: more than %d arguments", LTU_ARGS_MAX - 2);
	return linux_qemu_numa_parse(argc, argv, n);
}

static inline uint64_t
ltu_opens_now(void)
{
	struct fileio_counts c;

	fileio_counts_get(&c);
	return c.opens;
}

static inline void
ltu_dir_remove(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		print_message("could not remove %s\n", dir);
}

static inline double
ltu_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline pid_t ltu_load_start(const char *name, ...) __attribute__((sentinel));

/* The pid of a vnuma-load "VM" called name, started with the extra arguments given. */
static inline pid_t
ltu_load_start(const char *name, ...)
{
	char path[4096];
	char *argv[LTU_ARGS_MAX] = {path, "--name", (char *)name};
	const char *bin = getenv("VNUMAD_BINDIR");
	int argc;
	pid_t pid;
	va_list ap;

	snprintf(path, sizeof(path), "%s/guest-tools/vnuma-load", bin ? bin : ".");
	va_start(ap, name);
	argc = ltu_args_append(argv, 3, LTU_ARGS_MAX, ap);
	va_end(ap);
	if (argc < 0)
		fail_msg("ltu_load_start: more than %d arguments", LTU_ARGS_MAX - 4);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (freopen("/dev/null", "w", stdout) == NULL)
			_exit(127);
		execv(path, argv);
		_exit(127);
	}
	return pid;
}

static inline void
ltu_load_stop(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

#endif
