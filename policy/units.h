/*
 * units.h - the one parser of sizes ("8G", "512MiB", "1.5T") and of rates ("256MiB/s").
 *
 * Grammar, with no blanks anywhere:
 *
 *   size := number [unit]         a bare number is in the caller's unit (none: refused)
 *   rate := number unit "/s"      a rate always has its unit
 *   number := digits ["." digits]   at most UNITS_FRAC_DIGITS_MAX decimals; no sign, no exponent
 *   unit := "B" | "K" | "KiB" | "M" | "MiB" | "G" | "GiB" | "T" | "TiB"   (any case)
 *
 * Every unit is binary: K is KiB (1024 bytes), G is GiB (2^30 bytes), as vnumactl has always
 * read them.  "KB", "MB", "GB" and "TB" are refused, not guessed (some tools mean 1000^n by
 * them, libvirt among them).  The value is computed exactly in integers and rounded to the
 * nearest byte (halves up); more than 2^64 - 1 bytes (per second) is refused.
 *
 * Errors are -EINVAL with a message naming the value in err, e.g. "'8X': 'X' is not a unit
 * (use B, K, M, G or T, with or without iB)".  Callers apply their own bounds and rounding.
 */
#ifndef VNUMAD_POLICY_UNITS_H
#define VNUMAD_POLICY_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Decimals a number may have (finer than a byte of a TiB is noise; the exact sum fits 128 bits). */
#define UNITS_FRAC_DIGITS_MAX 9
/* Room for any units_*_parse() message, with the value quoted cut to fit. */
#define UNITS_ERR_MAX 160

#define UNITS_KIB ((uint64_t)1 << 10)
#define UNITS_MIB ((uint64_t)1 << 20)
#define UNITS_GIB ((uint64_t)1 << 30)

/* s as a size in bytes; bare_unit_bytes is a bare number's unit (0: a unit is required). */
int units_size_parse(const char *s, uint64_t bare_unit_bytes, uint64_t *bytes, char *err,
                     size_t errlen);
/* s as a rate in bytes per second. */
int units_rate_parse(const char *s, uint64_t *bytes_s, char *err, size_t errlen);

#endif
