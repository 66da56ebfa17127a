/*
 * module_load.c - the libvirt backend, loaded from vnumad-libvirt.so (host/module.h) when
 * vnumad runs with --connect.
 *
 * The module is looked for next to the running executable first (a build tree, or a copy of
 * vnumad kept with its module), then in VNUMAD_MODULE_DIR, the directory `cmake --install`
 * puts it in.  Once loaded it stays loaded: the hosts it opens run its code until they close,
 * and a daemon opens one host per run.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host/module.h"
#include "policy/util.h"

#ifndef VNUMAD_MODULE_DIR
#define VNUMAD_MODULE_DIR "/usr/lib/vnumad"
#endif

/* The directory of the running executable, into dir. */
static int
host_module_exe_dir(char *dir, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", dir, len - 1);
	char *slash;

	if (n < 0)
		return -errno;
	if ((size_t)n >= len - 1)
		return -ENAMETOOLONG;
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (slash == NULL)
		return -ENOENT;
	*slash = '\0';
	return 0;
}

/* Check a loaded module's ABI string against this build's; 0 or -ELIBBAD with err. */
static int
host_module_check(void *dl, const char *path, char *err, size_t errlen)
{
	const char *(*abi_fn)(void) = (const char *(*)(void))dlsym(dl, HOST_MODULE_ABI_SYM);
	char mine[256];

	host_module_abi(mine, sizeof(mine));
	if (abi_fn == NULL) {
		util_errf(err, errlen, "%s is not a vnumad module (no %s)", path,
		          HOST_MODULE_ABI_SYM);
		return -ELIBBAD;
	}
	if (strcmp(abi_fn(), mine) != 0) {
		util_errf(err, errlen,
		          "%s was built from other sources than this vnumad (module: %s; vnumad: "
		          "%s): install the two together",
		          path, abi_fn(), mine);
		return -ELIBBAD;
	}
	return 0;
}

/* Load the module from the first directory that has it; its open function, or NULL. */
static host_module_open_fn *
host_module_libvirt_load(char *err, size_t errlen, int *rc)
{
	char dirs[2][PATH_MAX], path[PATH_MAX + 64];
	void *dl;
	host_module_open_fn *open_fn;

	if (host_module_exe_dir(dirs[0], sizeof(dirs[0])) < 0)
		dirs[0][0] = '\0';
	snprintf(dirs[1], sizeof(dirs[1]), "%s", VNUMAD_MODULE_DIR);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], HOST_MODULE_LIBVIRT);
		if (dirs[i][0] == '\0' || access(path, F_OK) != 0)
			continue;
		dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (dl == NULL) {
			util_errf(err, errlen, "cannot load the libvirt backend: %s", dlerror());
			*rc = -ELIBACC;
			return NULL;
		}
		if ((*rc = host_module_check(dl, path, err, errlen)) < 0) {
			dlclose(dl);
			return NULL;
		}
		*(void **)&open_fn = dlsym(dl, HOST_MODULE_OPEN_SYM);
		if (open_fn == NULL) {
			util_errf(err, errlen, "%s has no %s", path, HOST_MODULE_OPEN_SYM);
			*rc = -ELIBBAD;
			dlclose(dl);
		}
		return open_fn; /* never closed: see the top of the file */
	}
	util_errf(err, errlen,
	          "the libvirt backend (%s) is not installed: looked next to vnumad (%s) and in %s",
	          HOST_MODULE_LIBVIRT, dirs[0][0] ? dirs[0] : "?", dirs[1]);
	*rc = -ENOENT;
	return NULL;
}

int
host_libvirt_module_open(const char *uri, struct host *inner, struct host **out, char *err,
                         size_t errlen)
{
	static host_module_open_fn *open_fn;
	int rc = 0;

	if (open_fn == NULL)
		open_fn = host_module_libvirt_load(err, errlen, &rc);
	if (open_fn == NULL) {
		inner->ops->close(inner);
		return rc;
	}
	return open_fn(uri, inner, out, err, errlen);
}
