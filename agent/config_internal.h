/*
 * config_internal.h - what config.c (the table, the lines, the error report) and config_value.c
 * (the value parsers) share: a row of the key table, a parsed value, and quoting for messages.
 * Nothing here is for other modules: they use config.h.
 */
#ifndef VNUMAD_AGENT_CONFIG_INTERNAL_H
#define VNUMAD_AGENT_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "agent/config.h"

/* Characters of an offending value quoted in a message before it is cut with "...". */
#define CONFIG_QUOTE_CHARS 40

/* Bytes of a quoted value: CONFIG_QUOTE_CHARS characters of up to 4 bytes each, and "...". */
#define QUOTE_BUF (CONFIG_QUOTE_CHARS * 4 + 8)

enum config_type {
	CONFIG_DURATION, /* "500ms", "2.5s", "1min"; stored in seconds */
	CONFIG_MODE,     /* octal file mode with a leading 0: "0660" */
	CONFIG_BOOL,     /* yes|no, true|false, on|off */
	CONFIG_ENUM,     /* one of the row's choices */
	CONFIG_PATH,     /* absolute path of at most max_len bytes */
	CONFIG_GROUP,    /* group name, [a-z_][a-z0-9_-]*; existence is checked at start-up */
	CONFIG_RATE,     /* "1024MiB/s" (KiB/s, MiB/s, GiB/s); stored in MiB/s */
	CONFIG_PERCENT,  /* "0.5%"; stored in percent */
	CONFIG_LISTEN,   /* "127.0.0.1:9464", "[::1]:9464", "9464" (loopback) */
};

union config_value {
	double num;      /* duration in s, rate in MiB/s */
	mode_t mode;     /* permission bits */
	bool yes;        /* boolean */
	int choice;      /* index into the row's choices */
	const char *str; /* path, group or address; points into the caller's text */
};

struct config_key {
	const char *name;
	enum config_type type;
	double min, max;            /* duration (s), rate (MiB/s), mode: inclusive bounds */
	bool min_exclusive;         /* the value must be above min, not at it */
	const char *range;          /* the bounds as a user writes them, for messages */
	const char *const *choices; /* CONFIG_ENUM: NULL-terminated */
	size_t max_len;             /* CONFIG_PATH, CONFIG_GROUP: longest value in bytes */
	bool empty_ok;              /* an empty value is accepted (and means "none") */
	const char *def;            /* the default, as written in the file */
	void (*set)(struct config *cfg, const union config_value *v);
	const char *doc;
};

/* config_value.c: quote s for a message (see there); returns buf. */
const char *config_quote(const char *s, char *buf, size_t len);
/* config_value.c: parse text (not empty) as row's value; 0, or -EINVAL with a message in msg. */
int config_value_parse(const struct config_key *row, const char *text, union config_value *v,
                       char *msg, size_t msglen);

#endif
