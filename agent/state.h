/*
 * state.h - /var/lib/vnumad/state.json: the original affinity of every vCPU vnumad changed, so
 * that an orderly stop with restore_on_exit, or `vnumad --restore` after a crash, puts them
 * back; and the admin's kernel scan tunables while vnumad has them slowed (scan_lever.h), put
 * back by every stop, `vnumad --restore` and the next start.  Written atomically (temp file, fsync,
 * rename) whenever it changes.  Also the lock that keeps two daemons off one state directory.
 *
 * Ownership: struct state owns its entries; state_free().
 */
#ifndef VNUMAD_AGENT_STATE_H
#define VNUMAD_AGENT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/scan_control.h"

/*
 * Longest VM name recorded, in bytes without the NUL.  libvirt keeps a domain's files under
 * its name, so NAME_MAX (255) bounds what a real host shows; a longer name is refused whole,
 * never cut (two names cut alike would share entries).
 */
#define STATE_VM_NAME_MAX 255

/*
 * Newest version written into the file (state_read.c reads it and every older one).  Bump
 * when the format changes, and add a reader.  A file without saved scan tunables is written
 * as version 1, which every release reads; one with them as version 2.
 */
#define STATE_FILE_VERSION 2

/* Largest state file read, in bytes: an entry takes about 120, so this is ~140k vCPUs. */
#define STATE_FILE_MAX_BYTES (16 * 1024 * 1024)

struct state_entry {
	char vm[STATE_VM_NAME_MAX + 1]; /* VM name (stable across daemon restarts) */
	int vm_id;                      /* VM id when recorded (pid on Linux) */
	int vcpu;
	int tid;
	uint64_t orig_nodes; /* allowed node mask before vnumad first pinned it */
	/*
	 * In the file on disk: read from it, or written by the last state_save that succeeded.
	 * vnumad changes a vCPU's affinity only once its entry is (agent/actions.c).
	 */
	bool saved;
};

struct state {
	struct state_entry *entries; /* in the order recorded (or read) */
	size_t nr, cap;
	bool dirty;
	size_t *slots; /* private to state.c: the (vm, vcpu) index over entries */
	size_t nr_slots;
	/* The file could be neither read nor set aside: state_save never replaces it. */
	bool keep_file;
	/*
	 * The admin's kernel scan tunables, recorded before vnumad first changed them and until
	 * they are back (version 2's "scan" object).
	 */
	bool scan_saved;
	struct scan_tunables scan;
};

struct state *state_new(void);
void state_free(struct state *st);
/*
 * Read the state file, of any version this vnumad knows (state_read.c).  Missing file: an
 * empty state.  Otherwise 0, or with *out NULL and a message in err (never a crash): -EINVAL
 * for a malformed file, -EPROTONOSUPPORT for a version it has no reader for, -errno when it
 * cannot be read.
 */
int state_load(const char *path, struct state **out, char *err, size_t errlen);
/*
 * The daemon's state_load: a file it cannot use never keeps vnumad from starting.  A file that
 * state_load refuses (malformed, unreadable, of an unknown version) is renamed to
 * PATH[.vVERSION].YYYYMMDDTHHMMSSZ.bad next to it (a free name: never over an older one), and
 * of its vcpus the entries with version 1's fields, types and ranges are taken into *out,
 * marked dirty (fields of later versions ignored), and its "scan" object when it has version
 * 2's fields, types and ranges.  Always 0 with *out set; what was done, for
 * a warning, in note ("" when the file was read as it is).  When the file cannot be renamed
 * it stays, and *out->keep_file keeps state_save from replacing it.  Call with the lock held.
 */
int state_load_or_set_aside(const char *path, struct state **out, char *note, size_t notelen);
/*
 * Write st to path atomically and mark every entry saved; 0, or -errno with a message (st
 * stays dirty): -EFBIG when the file would be larger than STATE_FILE_MAX_BYTES, which
 * state_load refuses, -EEXIST while st->keep_file.
 */
int state_save(struct state *st, const char *path, char *err, size_t errlen);
/* A name longer than STATE_VM_NAME_MAX is never found (and never recorded). */
const struct state_entry *state_find(const struct state *st, const char *vm, int vcpu);
/*
 * Record vcpu's original mask unless already recorded; marks dirty when added (not saved:
 * state_save writes it).  Returns 0
 * (also when there is nothing to record: an empty name or mask), or -ENAMETOOLONG, recording
 * nothing, when vm is longer than STATE_VM_NAME_MAX bytes.
 */
int state_record(struct state *st, const char *vm, int vm_id, int vcpu, int tid,
                 uint64_t orig_nodes);
void state_forget(struct state *st, const char *vm, int vcpu); /* vcpu < 0: the whole VM */

/* t as the JSON object of version 2's "scan" (also `vnumactl status`); the caller puts it. */
struct json_object *state_scan_json(const struct scan_tunables *t);
/* Record (t) or forget (NULL) the admin's scan tunables; marks dirty when that changes. */
void state_scan_set(struct state *st, const struct scan_tunables *t);

/* Keep the entries i with keep[i] (st->nr of them), in their order; forget the others. */
void state_retain(struct state *st, const bool *keep);

/* Where a set of entries stood, for undoing the state_record calls made since. */
struct state_mark {
	size_t nr;
	bool dirty;
};

struct state_mark state_mark(const struct state *st);
/* Forget the entries recorded since m was taken (no entry may have been forgotten since). */
void state_rollback(struct state *st, struct state_mark m);

/* Take an exclusive lock on path + ".lock"; -EBUSY with a message when another holds it. */
int state_lock(const char *path, int *fd_out, char *err, size_t errlen);

#endif
