/* sdnotify.h - systemd's notify protocol (READY=1, STATUS=..., WATCHDOG=1) without libsystemd. */
#ifndef VNUMAD_AGENT_SDNOTIFY_H
#define VNUMAD_AGENT_SDNOTIFY_H

#include <stdint.h>

/* Send msg to $NOTIFY_SOCKET; 0 when sent or when not under systemd, -errno on failure. */
int sdnotify(const char *msg);
/* $WATCHDOG_USEC if set for this process ($WATCHDOG_PID), else 0. */
uint64_t sdnotify_watchdog_usec(void);

#endif
