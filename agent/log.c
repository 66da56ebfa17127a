/*
 * log.c - the daemon's log (log.h), written to stderr one line per write(2), under the
 * logger's lock, so that lines from several threads never interleave.
 *
 * Targets:
 *   stderr   "vnumad: warning: message" ("vnumad: message" at info level), for a terminal
 *   journal  "<4>message": the syslog-level prefix journald parses from a service's stderr,
 *            so priorities reach the journal without libsystemd
 *   auto     journal when stderr is journald's stream: $JOURNAL_STREAM ("DEV:INODE", set by
 *            systemd) names the file stderr is open on, as systemd.exec(5) suggests checking;
 *            stderr otherwise (also when the variable is malformed, or stderr was redirected)
 *
 * A message with several lines (every error of a configuration file) is written as several
 * lines, each with the prefix, so that each has its priority in the journal; blank lines are
 * left out.  Other control characters are written as '?'.  A line longer than LOG_LINE_MAX
 * is cut and ends in "...".  Every function keeps errno as it found it.
 *
 * State: the logger's settings and the per-VM rate-limit table live in one static struct,
 * log_state, guarded by its mutex.  That global is deliberate: a logger is needed everywhere
 * (in fatal() before anything is set up, too), and threading a handle through every call
 * would buy nothing.  log_init() resets all of it, the rate-limit table included.
 */
#include "agent/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/config.h"

/* Longest line written, in bytes with prefix and newline: longer lines are cut. */
#define LOG_LINE_MAX 2048

/* Longest message, in bytes, all its lines together: room for every error of a config file. */
#define LOG_MSG_MAX 16384

/*
 * VMs the per-VM rate limiter remembers.  A host runs at most a few hundred VMs; when more
 * have warned, the one that was allowed to log longest ago is forgotten (its suppressed count
 * is lost with it, and its next warning is printed at once).
 */
#define LOG_VM_SLOTS 256

/* Longest program name used as the stderr prefix, in bytes. */
#define LOG_IDENT_MAX 32

struct log_vm_slot {
	bool used;
	int vm_id;
	bool warned;              /* log_vm_warnx printed one for it */
	double last_s;            /* daemon time of the last warning printed for this VM */
	unsigned long suppressed; /* warnings dropped since then */
	double seen_s;            /* the latest of last_s and action_start_s, for eviction */
	/* log_vm_action: the window's start, lines printed in it, lines left out since */
	double action_start_s;
	unsigned action_lines;
	unsigned long action_left_out;
};

/* Where journald takes native datagrams (systemd's sd_journal_sendv uses the same). */
#define LOG_JOURNAL_SOCKET "/run/systemd/journal/socket"

static struct {
	pthread_mutex_t lock;
	char ident[LOG_IDENT_MAX];
	int level;    /* messages above this level are dropped */
	bool journal; /* resolved target: journal prefixes, else stderr style */
	struct log_vm_slot vms[LOG_VM_SLOTS];
	char journal_socket[108]; /* sun_path's size */
	int journal_fd;           /* datagram socket, -1 until first needed */
} log_state = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .ident = "vnumad",
    .level = LOG_LEVEL_INFO,
    .journal = false,
    .journal_socket = LOG_JOURNAL_SOCKET,
    .journal_fd = -1,
};

static const struct {
	const char *name;  /* as in the config file */
	const char *label; /* stderr prefix after "ident: " */
	int level;
} log_levels[] = {
    {"error", "error: ", LOG_LEVEL_ERR},
    {"warning", "warning: ", LOG_LEVEL_WARN},
    {"info", "", LOG_LEVEL_INFO},
    {"debug", "debug: ", LOG_LEVEL_DEBUG},
};

#define LOG_NR_LEVELS (sizeof(log_levels) / sizeof(log_levels[0]))

int
log_level_parse(const char *s)
{
	for (size_t i = 0; s != NULL && i < LOG_NR_LEVELS; i++) {
		if (strcmp(s, log_levels[i].name) == 0)
			return log_levels[i].level;
	}
	return -1;
}

static const char *
log_level_label(int level)
{
	for (size_t i = 0; i < LOG_NR_LEVELS; i++) {
		if (log_levels[i].level == level)
			return log_levels[i].label;
	}
	return "";
}

static int
log_level_clamp(int level)
{
	if (level < LOG_LEVEL_ERR)
		return LOG_LEVEL_ERR;
	if (level > LOG_LEVEL_DEBUG)
		return LOG_LEVEL_DEBUG;
	return level;
}

/* Is stderr the stream systemd connected to the journal ($JOURNAL_STREAM = "DEV:INODE")? */
static bool
log_stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char extra;

	if (js == NULL || sscanf(js, "%llu:%llu%c", &dev, &ino, &extra) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void
log_init(const char *ident, int level, int target)
{
	int saved = errno;

	pthread_mutex_lock(&log_state.lock);
	snprintf(log_state.ident, sizeof(log_state.ident), "%s", ident ? ident : "vnumad");
	log_state.level = log_level_clamp(level);
	if (target == LOG_TARGET_AUTO)
		log_state.journal = log_stderr_is_journal();
	else
		log_state.journal = target == LOG_TARGET_JOURNAL;
	memset(log_state.vms, 0, sizeof(log_state.vms));
	pthread_mutex_unlock(&log_state.lock);
	errno = saved;
}

void
log_set_level(int level)
{
	pthread_mutex_lock(&log_state.lock);
	log_state.level = log_level_clamp(level);
	pthread_mutex_unlock(&log_state.lock);
}

/* Write all of buf to stderr; a log that cannot be written has nowhere to report that. */
static void
log_write(const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

/* Write one line: prefix, then n bytes of text with control characters shown as '?'. */
static void
log_line_write(const char *prefix, const char *text, size_t n)
{
	char line[LOG_LINE_MAX];
	size_t plen = strlen(prefix), room = sizeof(line) - plen - 1; /* 1: the newline */
	bool cut = n > room;

	if (cut)
		n = room - 3; /* room for "..." */
	memcpy(line, prefix, plen);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)text[i];

		line[plen + i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	if (cut) {
		memcpy(line + plen + n, "...", 3);
		n += 3;
	}
	line[plen + n] = '\n';
	log_write(line, plen + n + 1);
}

/* Write a formatted message at level, each of its lines prefixed (the lock held). */
static void
log_emit_locked_text(int level, const char *msg)
{
	char prefix[LOG_IDENT_MAX + 16];
	size_t len = strlen(msg), start, end;

	if (log_state.journal)
		snprintf(prefix, sizeof(prefix), "<%d>", level);
	else
		snprintf(prefix, sizeof(prefix), "%s: %s", log_state.ident, log_level_label(level));
	for (start = 0; start < len || start == 0; start = end + 1) {
		end = start + strcspn(msg + start, "\n");
		if (end > start || len == 0)
			log_line_write(prefix, msg + start, end - start);
	}
}

static void log_emit_locked(int level, const char *suffix, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/*
 * Format the message and its suffix (may be NULL) and write it at level.  Each line of a
 * multi-line message (all the errors of a configuration file, say) becomes its own prefixed
 * line.  The caller holds the lock and has checked the level.
 */
static void
log_emit_locked(int level, const char *suffix, const char *fmt, va_list ap)
{
	char msg[LOG_MSG_MAX];
	size_t len = 0;
	int n;

	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n > 0)
		len = (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
	if (suffix != NULL && len < sizeof(msg) - 1) {
		n = snprintf(msg + len, sizeof(msg) - len, "%s", suffix);
		len = n >= 0 && (size_t)n < sizeof(msg) - len ? len + (size_t)n : sizeof(msg) - 1;
	}
	if (len == sizeof(msg) - 1)
		memcpy(msg + len - 3, "...", 3); /* cut */
	log_emit_locked_text(level, msg);
}

static void log_emit(int level, const char *suffix, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Log at level (if enabled), keeping errno. */
static void
log_emit(int level, const char *suffix, const char *fmt, va_list ap)
{
	int saved = errno;

	pthread_mutex_lock(&log_state.lock);
	if (level <= log_state.level)
		log_emit_locked(level, suffix, fmt, ap);
	pthread_mutex_unlock(&log_state.lock);
	errno = saved;
}

/* ": strerror(err)" for log_warn and fatal. */
static void
log_errno_suffix(int err, char *buf, size_t len)
{
	snprintf(buf, len, ": %s", strerror(err));
}

void
log_warn(const char *fmt, ...)
{
	int saved = errno;
	char suffix[128];
	va_list ap;

	log_errno_suffix(saved, suffix, sizeof(suffix));
	va_start(ap, fmt);
	log_emit(LOG_LEVEL_WARN, suffix, fmt, ap);
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(LOG_LEVEL_WARN, NULL, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(LOG_LEVEL_INFO, NULL, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(LOG_LEVEL_DEBUG, NULL, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	int saved = errno;
	char suffix[128];
	va_list ap;

	log_errno_suffix(saved, suffix, sizeof(suffix));
	va_start(ap, fmt);
	log_emit(LOG_LEVEL_ERR, suffix, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_emit(LOG_LEVEL_ERR, NULL, fmt, ap);
	va_end(ap);
	exit(1);
}

/*
 * The slot of vm_id: its own, else a free one, else the one whose last message (warning or
 * action) is oldest (ties: the lower slot).  A new or reused slot is cleared and marked as never
 * having logged.
 */
static struct log_vm_slot *
log_vm_slot_get(int vm_id, bool *fresh)
{
	struct log_vm_slot *victim = NULL;

	for (size_t i = 0; i < LOG_VM_SLOTS; i++) {
		struct log_vm_slot *s = &log_state.vms[i];

		if (s->used && s->vm_id == vm_id) {
			*fresh = false;
			return s;
		}
		if (victim == NULL || (victim->used && (!s->used || s->seen_s < victim->seen_s)))
			victim = s;
	}
	memset(victim, 0, sizeof(*victim));
	victim->used = true;
	victim->vm_id = vm_id;
	*fresh = true;
	return victim;
}

void
log_vm_warnx(int vm_id, double now_s, const char *fmt, ...)
{
	int saved = errno;
	struct log_vm_slot *slot;
	char suffix[64] = "";
	bool fresh;
	va_list ap;

	pthread_mutex_lock(&log_state.lock);
	if (LOG_LEVEL_WARN > log_state.level)
		goto out;
	slot = log_vm_slot_get(vm_id, &fresh);
	/* A clock that went backwards counts as time passed, so nothing stays muted forever. */
	if (!fresh && slot->warned && now_s >= slot->last_s &&
	    now_s - slot->last_s < LOG_VM_INTERVAL_S) {
		slot->suppressed++;
		goto out;
	}
	if (slot->suppressed > 0)
		snprintf(suffix, sizeof(suffix), " (%lu similar message%s suppressed)",
		         slot->suppressed, slot->suppressed == 1 ? "" : "s");
	slot->warned = true;
	slot->last_s = now_s;
	slot->seen_s = now_s > slot->seen_s ? now_s : slot->seen_s;
	slot->suppressed = 0;
	va_start(ap, fmt);
	log_emit_locked(LOG_LEVEL_WARN, suffix, fmt, ap);
	va_end(ap);
out:
	pthread_mutex_unlock(&log_state.lock);
	errno = saved;
}

void
log_journal_socket_set(const char *path)
{
	pthread_mutex_lock(&log_state.lock);
	snprintf(log_state.journal_socket, sizeof(log_state.journal_socket), "%s",
	         path != NULL ? path : LOG_JOURNAL_SOCKET);
	pthread_mutex_unlock(&log_state.lock);
}

/* Append "KEY=value\n" to the datagram, value's control characters as '?'. */
static void
log_field_add(char *buf, size_t len, size_t *used, const char *key, const char *value)
{
	int n = snprintf(buf + *used, len - *used, "%s=", key);

	if (n < 0 || (size_t)n >= len - *used)
		return;
	*used += (size_t)n;
	for (; *value != '\0' && *used < len - 1; value++) {
		unsigned char c = (unsigned char)*value;

		buf[(*used)++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	if (*used < len)
		buf[(*used)++] = '\n';
}

/*
 * One message with its fields as a native journal datagram (the lock held).  0, or -1 when
 * it could not be sent (no journald there, a full buffer): the caller logs it the usual way.
 */
static int
log_journal_send_locked(int level, const char *vm, const char *action, const char *msg)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dgram[LOG_LINE_MAX + 256], prio[4];
	size_t used = 0;

	if (log_state.journal_fd < 0)
		log_state.journal_fd =
		    socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (log_state.journal_fd < 0)
		return -1;
	snprintf(prio, sizeof(prio), "%d", level);
	log_field_add(dgram, sizeof(dgram), &used, "MESSAGE", msg);
	log_field_add(dgram, sizeof(dgram), &used, "PRIORITY", prio);
	log_field_add(dgram, sizeof(dgram), &used, "SYSLOG_IDENTIFIER", log_state.ident);
	if (vm != NULL)
		log_field_add(dgram, sizeof(dgram), &used, "VM", vm);
	log_field_add(dgram, sizeof(dgram), &used, "VNUMAD_ACTION", action);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", log_state.journal_socket);
	if (sendto(log_state.journal_fd, dgram, used, MSG_NOSIGNAL, (struct sockaddr *)&sa,
	           sizeof(sa)) != (ssize_t)used)
		return -1;
	return 0;
}

static void log_action_emit_locked(const char *vm, const char *action, const char *suffix,
                                   const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* An action's line: to the journal with its fields, else (or when that fails) as any line. */
static void
log_action_emit_locked(const char *vm, const char *action, const char *suffix, const char *fmt,
                       va_list ap)
{
	char msg[LOG_LINE_MAX];
	va_list copy;

	va_copy(copy, ap);
	vsnprintf(msg, sizeof(msg), fmt, copy);
	va_end(copy);
	if (strlen(msg) + strlen(suffix) < sizeof(msg))
		strcat(msg, suffix);
	if (log_state.journal && log_journal_send_locked(LOG_LEVEL_INFO, vm, action, msg) == 0)
		return;
	log_emit_locked_text(LOG_LEVEL_INFO, msg);
}

/* Whether this VM's action may be logged now (its burst not spent); the suffix to add. */
static bool
log_action_allowed_locked(int vm_id, double now_s, char *suffix, size_t len)
{
	struct log_vm_slot *slot;
	bool fresh;

	suffix[0] = '\0';
	if (vm_id < 0)
		return true;
	slot = log_vm_slot_get(vm_id, &fresh);
	if (fresh || now_s < slot->action_start_s ||
	    now_s - slot->action_start_s >= LOG_VM_INTERVAL_S) {
		slot->action_start_s = now_s;
		slot->action_lines = 0;
	}
	slot->seen_s = now_s > slot->seen_s ? now_s : slot->seen_s;
	if (slot->action_lines >= LOG_ACTION_BURST) {
		slot->action_left_out++;
		return false;
	}
	slot->action_lines++;
	if (slot->action_left_out > 0)
		snprintf(suffix, len,
		         " (%lu earlier action%s of this VM not logged: see vnumactl events)",
		         slot->action_left_out, slot->action_left_out == 1 ? "" : "s");
	slot->action_left_out = 0;
	return true;
}

void
log_vm_action(int vm_id, const char *vm, const char *action, double now_s, const char *fmt, ...)
{
	int saved = errno;
	char suffix[96];
	va_list ap;

	pthread_mutex_lock(&log_state.lock);
	if (LOG_LEVEL_INFO <= log_state.level &&
	    log_action_allowed_locked(vm_id, now_s, suffix, sizeof(suffix))) {
		va_start(ap, fmt);
		log_action_emit_locked(vm, action, suffix, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&log_state.lock);
	errno = saved;
}
