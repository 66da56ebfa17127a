/*
 * lv_parse.h - value parsers shared by host/libvirt/ (internal to the module): unsigned
 * numbers and libvirt's scaled sizes as they appear in domain XML, and quoting of untrusted
 * text for error messages.
 */
#ifndef VNUMAD_HOST_LIBVIRT_LV_PARSE_H
#define VNUMAD_HOST_LIBVIRT_LV_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of an untrusted value quoted in an error message (longer ones end in "..."). */
#define LV_QUOTE_CHARS 40
/* A buffer that holds any lv_quote() result: each byte may become "\xNN", plus "...". */
#define LV_QUOTE_BUFLEN (4 * LV_QUOTE_CHARS + 8)

/*
 * Unsigned decimal, blanks allowed around it, no sign, at most max.  0 or -EINVAL with the
 * reason in *why.
 */
int lv_parse_u64(const char *text, uint64_t max, uint64_t *v, const char **why);

/*
 * A size in libvirt's scaled form: value in unit (NULL or "" = KiB, as libvirt's domain XML
 * defaults; b/bytes, k/KiB/KB, m/MiB/MB, ... up to e/EiB/EB, case-insensitive; "KB" is 1000),
 * rounded up to whole KiB as libvirt does.  0 or -EINVAL with the reason in *why.
 */
int lv_parse_size_kib(const char *value, const char *unit, uint64_t *kib, const char **why);

/* s, cut to LV_QUOTE_CHARS bytes with control and non-ASCII bytes escaped, into buf. */
const char *lv_quote(const char *s, char *buf, size_t len);

#endif
