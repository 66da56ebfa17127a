/*
 * log.h - logging to stderr or journald, with levels; errno-appending variants; per-VM
 * rate limiting so one misbehaving VM cannot flood the log.
 */
#ifndef VNUMAD_AGENT_LOG_H
#define VNUMAD_AGENT_LOG_H

#include <stdbool.h>

#define LOG_LEVEL_ERR   3 /* syslog numbering */
#define LOG_LEVEL_WARN  4
#define LOG_LEVEL_INFO  6
#define LOG_LEVEL_DEBUG 7

/* Per-VM warnings: at most one per VM per LOG_VM_INTERVAL_S (the rest are counted). */
#define LOG_VM_INTERVAL_S 60

/* target: an enum log_target from config.h. */
void log_init(const char *ident, int level, int target);
void log_set_level(int level);
int log_level_parse(const char *s); /* "error"|"warning"|"info"|"debug" -> level, or -1 */

void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* + strerror(errno) */
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Start-up only: log and exit(1). */
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Rate-limited per VM id, at warning level; now_s is the daemon's clock. */
void log_vm_warnx(int vm_id, double now_s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
