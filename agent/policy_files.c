/*
 * policy_files.c - per-VM policy files (policy_files.h).
 */
#include "agent/policy_files.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/fileio.h"
#include "policy/util.h"

#define POLICY_FILE_SUFFIX ".xml"

/* Parse one file into f (its name already set). */
static void
policy_file_read(const char *dir, struct policy_file *f)
{
	char path[4096], msg[160];
	char *data;
	size_t len = 0;
	int ret;

	vm_policy_init_default(&f->policy); /* what a file that cannot be read stands for */
	snprintf(path, sizeof(path), "%s/%s%s", dir, f->name, POLICY_FILE_SUFFIX);
	/* A FIFO or device is refused before it is opened: open() could wait forever. */
	ret = fileio_read(path, POLICY_FILE_MAX_BYTES, &data, &len);
	if (ret == -EFBIG) {
		snprintf(f->error, sizeof(f->error), "%s%s: larger than %d bytes", f->name,
		         POLICY_FILE_SUFFIX, POLICY_FILE_MAX_BYTES);
		return;
	}
	if (ret < 0) {
		snprintf(f->error, sizeof(f->error), "%s%s: %s", f->name, POLICY_FILE_SUFFIX,
		         fileio_strerror(ret));
		return;
	}
	f->ok = vm_policy_parse_xml(data, len, &f->policy, msg, sizeof(msg)) == 0;
	if (!f->ok) {
		vm_policy_init_default(&f->policy);
		snprintf(f->error, sizeof(f->error), "%s%s: %s", f->name, POLICY_FILE_SUFFIX, msg);
	}
	free(data);
}

static int
policy_file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct policy_file *)a)->name, ((const struct policy_file *)b)->name);
}

/* NAME of a directory entry "NAME.xml" into name; false for other entries. */
static bool
policy_file_entry_name(const char *entry, char name[POLICY_FILE_NAME_MAX])
{
	size_t n = strlen(entry), sl = strlen(POLICY_FILE_SUFFIX);

	if (entry[0] == '.' || n <= sl || n - sl >= POLICY_FILE_NAME_MAX ||
	    strcmp(entry + n - sl, POLICY_FILE_SUFFIX) != 0)
		return false;
	memcpy(name, entry, n - sl);
	name[n - sl] = '\0';
	return true;
}

int
policy_files_load(const char *dir, struct policy_files *out, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t cap = 0;

	memset(out, 0, sizeof(*out));
	if (d == NULL) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "policy_dir %s: %s", dir, strerror(errno));
		return -errno;
	}
	while ((de = readdir(d)) != NULL) {
		struct policy_file f;

		memset(&f, 0, sizeof(f));
		if (!policy_file_entry_name(de->d_name, f.name))
			continue;
		policy_file_read(dir, &f);
		util_array_reserve((void **)&out->files, &cap, out->nr + 1, sizeof(*out->files));
		out->files[out->nr++] = f;
	}
	closedir(d);
	if (out->nr > 0)
		qsort(out->files, out->nr, sizeof(*out->files), policy_file_cmp);
	return 0;
}

/* Characters of a pattern that are not wildcards: how specific it is. */
static size_t
policy_file_literals(const char *pattern)
{
	size_t n = 0;

	for (const char *p = pattern; *p; p++)
		n += strchr("*?[]", *p) == NULL;
	return n;
}

const struct policy_file *
policy_files_match(const struct policy_files *pf, const char *name)
{
	const struct policy_file *best = NULL;
	size_t best_lit = 0;

	for (size_t i = 0; i < pf->nr; i++)
		if (strcmp(pf->files[i].name, name) == 0)
			return &pf->files[i];
	for (size_t i = 0; i < pf->nr; i++) {
		size_t lit = policy_file_literals(pf->files[i].name);

		if (fnmatch(pf->files[i].name, name, 0) != 0)
			continue;
		if (best == NULL || lit > best_lit) {
			best = &pf->files[i];
			best_lit = lit;
		}
	}
	return best;
}

void
policy_files_free(struct policy_files *pf)
{
	free(pf->files);
	pf->files = NULL;
	pf->nr = 0;
}

size_t
policy_files_errors(const struct policy_files *pf, const char *dir, char *buf, size_t len)
{
	size_t nr = 0, used = 0;

	if (len > 0)
		buf[0] = '\0';
	for (size_t i = 0; i < pf->nr; i++) {
		if (pf->files[i].ok)
			continue;
		nr++;
		if (used < len) {
			int n =
			    snprintf(buf + used, len - used, "%s/%s\n", dir, pf->files[i].error);

			used = n < 0 ? len : used + (size_t)n;
		}
	}
	return nr;
}
