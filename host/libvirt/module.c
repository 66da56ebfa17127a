/*
 * module.c - the entry points of vnumad-libvirt.so (host/module.h): its ABI string and the
 * libvirt backend's open.  Only these two symbols are exported (module.map).
 */
#include "host/module.h"

const char *vnumad_module_abi(void);
int vnumad_module_libvirt_open(const char *uri, struct host *inner, struct host **out, char *err,
                               size_t errlen);

const char *
vnumad_module_abi(void)
{
	static char abi[256];

	host_module_abi(abi, sizeof(abi));
	return abi;
}

int
vnumad_module_libvirt_open(const char *uri, struct host *inner, struct host **out, char *err,
                           size_t errlen)
{
	return host_libvirt_open(uri, inner, out, err, errlen);
}
