/*
 * module.h - backends built as loadable modules, and what vnumad and a module must agree on.
 *
 * The libvirt backend (host/libvirt/) is built as vnumad-libvirt.so and loaded only when
 * vnumad runs with --connect: libvirt's library and the ~50 it pulls in (GnuTLS, GLib, ...)
 * are never mapped into a daemon that balances a host without libvirt, whose start-up they
 * would slow (seconds under emulation) and whose attack surface they would widen.
 *
 * vnumad and the module pass struct host, struct snapshot and struct plan between them, so
 * both must be built from the same sources: the module exports its ABI string (the version
 * and the sizes of the structures they share) and vnumad refuses a module whose string is not
 * its own.
 */
#ifndef VNUMAD_HOST_MODULE_H
#define VNUMAD_HOST_MODULE_H

#include <stdio.h>

#include "host/host.h"
#include "policy/model.h"
#include "policy/vm_policy.h"

/* The libvirt module's file name, looked for next to vnumad, then in VNUMAD_MODULE_DIR. */
#define HOST_MODULE_LIBVIRT "vnumad-libvirt.so"
/* Symbols a module exports (and nothing else: host/libvirt/module.map). */
#define HOST_MODULE_ABI_SYM  "vnumad_module_abi"
#define HOST_MODULE_OPEN_SYM "vnumad_module_libvirt_open"

/* The ABI string of this build, into buf (len >= 160). */
static inline void
host_module_abi(char *buf, size_t len)
{
	snprintf(buf, len,
	         "vnumad %s host_ops %zu host %zu snapshot %zu snap_vm %zu snap_vcpu %zu "
	         "plan %zu vm_policy %zu",
	         VNUMAD_PROJECT_VERSION, sizeof(struct host_ops), sizeof(struct host),
	         sizeof(struct snapshot), sizeof(struct snap_vm), sizeof(struct snap_vcpu),
	         sizeof(struct plan), sizeof(struct vm_policy));
}

/* The signature of HOST_MODULE_OPEN_SYM: host_libvirt_open's (host.h). */
typedef int host_module_open_fn(const char *uri, struct host *inner, struct host **out, char *err,
                                size_t errlen);

#endif
