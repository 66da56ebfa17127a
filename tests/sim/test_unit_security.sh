#!/bin/sh
# packaging/vnumad.service stays as shut as it is: the overall exposure that
# `systemd-analyze security --offline=yes` prints for it must not grow past MAX_EXPOSURE, the
# score the unit reached when its last exposures were explained (its own comments list them).
# A property of the file alone; skipped (77) without systemd-analyze or on a systemd too old
# for --offline (before 250).  A lower score is welcome: lower MAX_EXPOSURE with it.
set -eu

S=${VNUMAD_SRCDIR:?}
UNIT=$S/packaging/vnumad.service
MAX_EXPOSURE=1.8

command -v systemd-analyze >/dev/null || {
	echo "SKIP: systemd-analyze is missing (packaging/install-deps.sh installs systemd)"
	exit 77
}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
# The unit's own name matters to the tool only in its output; a copy keeps the tree clean.
cp "$UNIT" "$D/vnumad.service"
if ! systemd-analyze security --offline=yes --no-pager "$D/vnumad.service" >"$D/out" 2>"$D/err"; then
	if grep -q -- '--offline' "$D/err"; then
		echo "SKIP: this systemd-analyze has no --offline"
		exit 77
	fi
	echo "FAIL: systemd-analyze security:" >&2
	cat "$D/err" >&2
	exit 1
fi
score=$(sed -n 's/.*[Oo]verall exposure level for [^:]*: *\([0-9][0-9.]*\).*/\1/p' "$D/out")
[ -n "$score" ] || {
	echo "FAIL: no overall exposure level in systemd-analyze's output:" >&2
	tail -n 3 "$D/out" >&2
	exit 1
}
if awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s > m) }'; then
	echo "FAIL: exposure of vnumad.service is $score, above $MAX_EXPOSURE; what counts now:" >&2
	grep '✗' "$D/out" >&2 || true
	exit 1
fi
echo "ok: exposure $score (at most $MAX_EXPOSURE)"
