/*
 * policy_files.h - per-VM policies kept as files, for VMs whose host holds none (QEMU without
 * libvirt, or libvirt domains without vnumad metadata).
 *
 * The directory (config key policy_dir, default /etc/vnumad/policy.d) holds one file per rule,
 * NAME.xml, each with one <vnuma:policy .../> element (docs/policy.md).  NAME is a VM name or
 * a shell pattern (fnmatch: '*', '?', '[...]').  A VM takes the file named exactly after it,
 * else the matching pattern with the most literal characters, ties to the first in byte
 * order: "db-*" beats "*" for db-orders, and "db-orders" beats both.  Files are read at start
 * and on SIGHUP.  A file that does not parse is kept with its error: the VMs it matches run
 * on the default policy and show the error (vnumactl list, vminfo).
 */
#ifndef VNUMAD_AGENT_POLICY_FILES_H
#define VNUMAD_AGENT_POLICY_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/vm_policy.h"

/* Largest policy file read, bytes: a policy is one element of a few hundred bytes. */
#define POLICY_FILE_MAX_BYTES 65536
/* Longest NAME kept (a libvirt domain name is at most this long in practice). */
#define POLICY_FILE_NAME_MAX 256

struct policy_file {
	char name[POLICY_FILE_NAME_MAX]; /* the file name without ".xml": a VM name or pattern */
	bool ok;
	struct vm_policy policy;                /* when ok */
	char error[POLICY_FILE_NAME_MAX + 192]; /* when !ok: "FILE: message" */
};

struct policy_files {
	struct policy_file *files; /* ascending by name */
	size_t nr;
};

/*
 * Read every NAME.xml under dir into *out (a missing directory is no files).  Returns 0, or
 * -errno with a message in err when the directory exists but cannot be read; bad files are
 * not errors here (see above).
 */
int policy_files_load(const char *dir, struct policy_files *out, char *err, size_t errlen);
/* The file that applies to VM name, or NULL. */
const struct policy_file *policy_files_match(const struct policy_files *pf, const char *name);
void policy_files_free(struct policy_files *pf);
/*
 * The files that were refused, one "DIR/FILE.xml: message" line each into buf (cut at len);
 * returns how many there are.  VMs such a file names run on the default policy.
 */
size_t policy_files_errors(const struct policy_files *pf, const char *dir, char *buf, size_t len);

#endif
