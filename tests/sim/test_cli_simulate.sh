#!/bin/sh
# test_cli_simulate.sh - `vnumactl simulate` end to end on a tiny scenario: bad scenario files
# and bad options exit 1 with an error naming the problem, --policy picks the results,
# --json is deterministic apart from the measured balancer_ms (under every profile), --plot
# writes an SVG.
set -u

: "${VNUMAD_BINDIR:?set VNUMAD_BINDIR to the build directory}"
: "${VNUMAD_SRCDIR:?set VNUMAD_SRCDIR to the source directory}"
VNUMACTL=$VNUMAD_BINDIR/agent/vnumactl
[ -x "$VNUMACTL" ] || { echo "FAIL: no $VNUMACTL" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vnumad-cli-simulate.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# run CMD...: run it with stdout in $tmp/out, stderr in $tmp/err, exit status in $status.
run() {
	status=0
	"$@" >"$tmp/out" 2>"$tmp/err" || status=$?
}

# expect_error PATTERN CMD...: exit status 1 and an "error: ..." line matching PATTERN.
expect_error() {
	pattern=$1
	shift
	run "$@"
	[ "$status" -eq 1 ] || fail "$*: exit status $status, want 1"
	grep -q "^error: .*$pattern" "$tmp/err" ||
		fail "$*: no 'error: ...$pattern' on stderr: $(cat "$tmp/err")"
}

# A scenario whose VM b is given as $1 (JSON members); the rest is fixed and valid.
scenario() {
	cat <<EOF
{
  "name": "tiny",
  "seed": 3,
  "duration_s": 60,
  "host": { "nodes": 2, "cpus_per_node": 4, "memory_per_node_gib": 8 },
  "vms": [
    { "name": "a", "vcpus": 2, "memory_gib": 2, "workload": "private" },
    { "name": "b", $1 }
  ]
}
EOF
}

scenario '"vcpus": 4, "memory_gib": 4, "workload": "cells",
      "cells": [ {"vcpus": [0,1], "memory_gib": 2}, {"vcpus": [2,3], "memory_gib": 2} ]' \
	>"$tmp/tiny.json"

# ---- bad scenario files: each names the field -------------------------------------------
scenario '"vcpus": 2, "memory_gib": 2, "colour": "red"' >"$tmp/unknown.json"
expect_error 'vms\[1\]\.colour' "$VNUMACTL" simulate "$tmp/unknown.json"

scenario '"vcpus": "two", "memory_gib": 2' >"$tmp/type.json"
expect_error 'vms\[1\]\.vcpus' "$VNUMACTL" simulate "$tmp/type.json"

scenario '"vcpus": 2, "memory_gib": 2, "mem_intensity": 1.5' >"$tmp/range.json"
expect_error 'vms\[1\]\.mem_intensity' "$VNUMACTL" simulate "$tmp/range.json"

scenario '"vcpus": 4, "memory_gib": 4, "workload": "cells",
      "cells": [ {"vcpus": [0,1], "memory_gib": 1}, {"vcpus": [2,3], "memory_gib": 2} ]' \
	>"$tmp/cells.json"
expect_error 'vms\[1\]\.cells' "$VNUMACTL" simulate "$tmp/cells.json"

echo '{ "name": "x", ' >"$tmp/syntax.json"
expect_error 'syntax.json' "$VNUMACTL" simulate "$tmp/syntax.json"
expect_error 'missing.json' "$VNUMACTL" simulate "$tmp/missing.json"

# ---- bad command lines -------------------------------------------------------------------
expect_error "unknown policy 'bogus'.*valid: none, autonuma, numad, static, vnumad, oracle" \
	"$VNUMACTL" simulate "$tmp/tiny.json" --policy none,bogus
expect_error "option '--policy' needs a value" "$VNUMACTL" simulate "$tmp/tiny.json" --policy
expect_error "unknown option '--frob'" "$VNUMACTL" simulate --frob "$tmp/tiny.json"
expect_error "unexpected argument" "$VNUMACTL" simulate "$tmp/tiny.json" "$tmp/tiny.json"
expect_error "unknown command 'simulat'" "$VNUMACTL" simulat
expect_error "cannot write $tmp/nodir/x.svg" \
	"$VNUMACTL" simulate "$tmp/tiny.json" --policy none --plot "$tmp/nodir/x.svg"

# ---- --policy and --json -----------------------------------------------------------------
run "$VNUMACTL" simulate "$tmp/tiny.json" --policy oracle,none --json
[ "$status" -eq 0 ] || fail "--json: exit status $status: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && fail "--json: unexpected stderr: $(cat "$tmp/err")"
grep '"policy":' "$tmp/out" | tr -d ' ,' >"$tmp/policies"
printf '"policy":"none"\n"policy":"oracle"\n' | cmp -s - "$tmp/policies" ||
	fail "--policy oracle,none --json gave: $(cat "$tmp/policies")"
for key in scenario duration_s results locality throughput vs_oracle converge_s migrated_gib \
	vcpu_moves max_node_fill oom balancer_ms; do
	grep -q "\"$key\":" "$tmp/out" || fail "--json: no \"$key\""
done
grep -q '"scenario":"tiny"' "$tmp/out" || fail "--json: wrong scenario name"
grep -q '"duration_s":60' "$tmp/out" || fail "--json: wrong duration_s"
grep -q '"vs_oracle":1.000' "$tmp/out" || fail "--json: oracle's vs_oracle is not 1"

# Same run, same bytes, except the measured wall-clock time.
grep -v '"balancer_ms"' "$tmp/out" >"$tmp/json1"
run "$VNUMACTL" --json simulate --policy=oracle,none "$tmp/tiny.json"
grep -v '"balancer_ms"' "$tmp/out" >"$tmp/json2"
cmp -s "$tmp/json1" "$tmp/json2" || fail "two identical runs differ"

# So under the real profiles, whose residency vnumad senses by sampling (host/sim/sim_resid.c).
for profile in linux libvirt; do
	suite=$VNUMAD_SRCDIR/tests/sim/04-shared-private.json
	run "$VNUMACTL" simulate "$suite" --json --host-profile "$profile"
	[ "$status" -eq 0 ] || fail "--host-profile $profile: exit status $status: $(cat "$tmp/err")"
	grep -v '"balancer_ms"' "$tmp/out" >"$tmp/json1"
	run "$VNUMACTL" simulate "$suite" --json --host-profile "$profile"
	grep -v '"balancer_ms"' "$tmp/out" >"$tmp/json2"
	cmp -s "$tmp/json1" "$tmp/json2" || fail "two identical runs under $profile differ"
done

# vs_oracle is measured against the oracle even when it is not reported.
run "$VNUMACTL" simulate "$tmp/tiny.json" --policy vnumad --json
[ "$status" -eq 0 ] || fail "--policy vnumad: exit status $status: $(cat "$tmp/err")"
[ "$(grep -c '"policy":' "$tmp/out")" -eq 1 ] || fail "--policy vnumad: not one result"
grep -q '"vs_oracle":0.000' "$tmp/out" && fail "--policy vnumad: vs_oracle not computed"

# ---- table and --plot --------------------------------------------------------------------
run "$VNUMACTL" simulate "$tmp/tiny.json" --plot "$tmp/chart.svg"
[ "$status" -eq 0 ] || fail "--plot: exit status $status: $(cat "$tmp/err")"
head -n 1 "$tmp/out" | grep -q '^scenario tiny: 2 nodes x 4 CPUs' || fail "table: no header"
for p in none autonuma numad static vnumad oracle; do
	grep -q "^$p " "$tmp/out" || fail "table: no row for $p"
	grep -q ">$p</text>" "$tmp/chart.svg" || fail "svg: no legend entry for $p"
done
head -c 4 "$tmp/chart.svg" | grep -q '^<svg' || fail "svg: does not start with <svg"
tail -n 1 "$tmp/chart.svg" | grep -q '^</svg>$' || fail "svg: does not end with </svg>"
[ "$(grep -c '<path' "$tmp/chart.svg")" -eq 6 ] || fail "svg: not one line per policy"
ls "$tmp" | grep -q 'chart\.svg\.' && fail "svg: temporary file left behind"

echo "PASS: test_cli_simulate"
