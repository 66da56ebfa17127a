/* version.h - the version string every binary reports. */
#ifndef VNUMAD_AGENT_VERSION_H
#define VNUMAD_AGENT_VERSION_H

const char *vnumad_version(void);

#endif
