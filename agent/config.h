/*
 * config.h - /etc/vnumad/vnumad.conf: one "key = value" per line, '#' comments, blank lines.
 *
 * Every value is checked at parse time (type, unit, bounds); every error is reported as
 * "FILE:LINE: message" (all errors of the file, one per line).  `vnumad -n [FILE]` only
 * checks; SIGHUP parses into a new struct and swaps it in only when valid.  The keys, their
 * units, defaults and bounds are documented in docs/vnumad.conf.5 and in config.c's table.
 */
#ifndef VNUMAD_AGENT_CONFIG_H
#define VNUMAD_AGENT_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "policy/vm_policy.h"

#define CONFIG_DEFAULT_PATH "/etc/vnumad/vnumad.conf"

enum log_target {
	LOG_TARGET_AUTO = 0, /* journal when started by systemd (JOURNAL_STREAM set), else stderr */
	LOG_TARGET_STDERR,
	LOG_TARGET_JOURNAL, /* stderr with <N> syslog-level prefixes, which journald parses */
};

struct config {
	char path[PATH_MAX];        /* the file it came from ("" = defaults only) */
	double sample_period_s;     /* sample_period, default 1s, 100ms..60s */
	double rebalance_period_s;  /* rebalance_period, default 2s, >= sample_period, <= 600s */
	char socket_path[108];      /* socket, default /run/vnumad/vnumad.sock */
	mode_t socket_mode;         /* socket_mode, octal, default 0660 */
	char control_group[64];     /* control_group, default "" (root only) */
	int control_group_line;     /* the line it was set on, for messages; 0 = not set */
	char state_file[PATH_MAX];  /* state_file, default /var/lib/vnumad/state.json */
	bool restore_on_exit;       /* restore_on_exit, yes|no, default yes */
	int log_level;              /* log_level: error|warning|info|debug, default info */
	enum log_target log_target; /* log_target: auto|stderr|journal, default auto */
	double migrate_rate_mib_s;  /* migrate_rate, e.g. 1024MiB/s (host-wide), default 1024 */
	enum vm_policy_mode default_mode; /* default_mode: auto|advisory|manual|off, default auto */
	char policy_dir[PATH_MAX];        /* policy_dir, default /etc/vnumad/policy.d */
	double observe_cpu_cap_percent;   /* observe_cpu_cap, 0..100 %, default 0.5; 0: none */
	bool scan_control;                /* scan_control, yes|no, default no */
	char metrics_listen[64];          /* metrics_listen, [ADDRESS:]PORT, default "" (off) */
	char metrics_textfile[PATH_MAX];  /* metrics_textfile, default "" (off) */
};

void config_defaults(struct config *cfg);
/*
 * Parse path into *cfg (starting from defaults).  Returns 0, or -EINVAL with every error as
 * "path:line: message\n" in err, or -errno when the file cannot be read.  *cfg is only
 * written on success.
 */
int config_load(const char *path, struct config *cfg, char *err, size_t errlen);

#endif
