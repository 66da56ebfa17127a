/*
 * suite_files.h - the public scenario suite's files for unit tests: every tests/sim/NN-*.json
 * under $VNUMAD_SRCDIR (ctest sets it; "." otherwise), sorted by name.
 */
#ifndef VNUMAD_TESTS_SUITE_FILES_H
#define VNUMAD_TESTS_SUITE_FILES_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUITE_MAX_FILES 64
#define SUITE_PATH_MAX  1024

struct suite_files {
	int nr;
	char path[SUITE_MAX_FILES][SUITE_PATH_MAX];
};

static inline int
suite_files_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Fill sf with the suite's scenario files; sf->nr is 0 when the directory cannot be read. */
static inline void
suite_files_list(struct suite_files *sf)
{
	const char *src = getenv("VNUMAD_SRCDIR");
	char dir[512];
	struct dirent *de;
	DIR *d;

	sf->nr = 0;
	snprintf(dir, sizeof(dir), "%s/tests/sim", src ? src : ".");
	d = opendir(dir);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL && sf->nr < SUITE_MAX_FILES) {
		size_t len = strlen(de->d_name);

		if (len > 5 && strcmp(de->d_name + len - 5, ".json") == 0 && de->d_name[0] >= '0' &&
		    de->d_name[0] <= '9')
			snprintf(sf->path[sf->nr++], SUITE_PATH_MAX, "%s/%s", dir, de->d_name);
	}
	closedir(d);
	qsort(sf->path, (size_t)sf->nr, SUITE_PATH_MAX, suite_files_cmp);
}

#endif
