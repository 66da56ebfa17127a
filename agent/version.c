/* version.c - the version string every binary reports. */
#include "agent/version.h"

#define VNUMAD_VERSION "0.1.0"

const char *
vnumad_version(void)
{
	return VNUMAD_VERSION;
}
