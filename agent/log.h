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

/*
 * What vnumad did or was asked to do to a VM (a pin, a memory move, a policy change, a
 * request and who made it), at info level, with the journal fields VM= (the VM's name; none
 * when vm is NULL) and VNUMAD_ACTION= (action) when the log goes to the journal.  At most
 * LOG_ACTION_BURST lines per VM in LOG_VM_INTERVAL_S; the rest are counted and the next line
 * printed says how many were left out (`vnumactl events` keeps them all).  vm_id < 0: an
 * action of the daemon's own (pause, resume), never rate limited.
 */
#define LOG_ACTION_BURST 10
void log_vm_action(int vm_id, const char *vm, const char *action, double now_s, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));

/*
 * The journal's native socket (default /run/systemd/journal/socket), used for lines that carry
 * fields when the target is the journal; when a datagram cannot be sent there the line goes to
 * stderr with its priority prefix as any other.  NULL: the default.  For tests.
 */
void log_journal_socket_set(const char *path);

#endif
