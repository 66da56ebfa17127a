#!/bin/sh
# test_daemon_state.sh - vnumad's state file (original vCPU affinities) through the real daemon
# on the simulated host, each run on a private socket and state file in a temporary directory:
# - a state file of a newer version (and a malformed one) is set aside, named in a warning,
#   and the daemon starts, keeping the entries it understands; so does --restore;
# - while no state file can be written nothing is pinned (counted, warned about once); once it
#   can, every pinned vCPU is in the file before a kill -9;
# - a start that fails (socket served by another daemon, control_group naming no group, which
#   vnumad -n reports) leaves the state file untouched;
# - an entry whose nodes the host does not have is put back on every node, with a warning.
# Pins back that fail are tested in tests/unit/test_daemon_state.c (the simulator's never do).
# Needs jq.  Logs are kept only on failure.
set -eu

B=${VNUMAD_BINDIR:?}
VNUMAD=$B/agent/vnumad
CTL=$B/agent/vnumactl
D=$(mktemp -d "${TMPDIR:-/tmp}/vnumad-dstate.XXXXXX")
PID=
T_PID_VARS=PID
. "$(dirname "$0")/lib.sh"

# A directory of its own for each case: DIR/vnumad.conf, DIR/state.json, DIR/sock.
case_dir() {
	C=$D/$1
	mkdir -p "$C"
	cat >"$C/vnumad.conf" <<EOF
sample_period = 1s
rebalance_period = 2s
state_file = $C/state.json
policy_dir = $C/policy.d
restore_on_exit = yes
log_level = info
EOF
	if [ $# -gt 1 ]; then printf '%s\n' "$2" >>"$C/vnumad.conf"; fi
}

# Start vnumad on case $C in the background; PID; wait until it answers.  Log: $C/daemon.log.
start() {
	"$VNUMAD" -f "$C/vnumad.conf" --simulate default --state "$C/state.json" --speed 10 --socket "$C/sock" \
		--foreground >>"$D/$(basename "$C").log" 2>&1 &
	PID=$!
	t_wait_answer "$C/sock" "$PID" "$D/$(basename "$C").log"
}

stop() {
	kill -TERM "$PID"
	wait "$PID" || fail "vnumad did not stop cleanly"
	PID=
}

log_of() { cat "$D/$(basename "$C").log"; }
# The time stamp of a file set aside, as a shell pattern: YYYYMMDDTHHMMSSZ.
D8='[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]'
STAMP="${D8}T[0-9][0-9][0-9][0-9][0-9][0-9]Z"
# The file of $C matching the shell pattern $1 (the last, if several); fails when none does.
set_aside() {
	found=
	for f in "$C"/$1; do
		if [ -e "$f" ]; then found=$f; fi
	done
	[ -n "$found" ] || fail "no $1 in $C: $(cd "$C" && echo *)"
	echo "$found"
}
jctl() { "$CTL" -c "$C/sock" --json "$@"; }
# jq_ok JSON EXPR DESCRIPTION (no output fails: jq -e takes no input as success)
jq_ok() {
	[ -n "$1" ] || fail "$3: the command printed nothing"
	printf '%s' "$1" | jq -e "$2" >/dev/null || fail "$3 (jq: $2) in: $(printf '%s' "$1" | head -c 400)"
}
# Wait (up to ~20 s) until the jq test WAIT_EXPR holds on a command's JSON.
wait_for() {
	i=0
	while :; do
		out=$(jctl "$@" 2>/dev/null || true)
		if printf '%s' "$out" | jq -e "$WAIT_EXPR" >/dev/null 2>&1; then return 0; fi
		i=$((i + 1))
		[ $i -lt 200 ] || fail "timed out waiting for '$WAIT_EXPR' on '$*': $out"
		sleep 0.1
	done
}
entries() { jq '.vcpus | length' "$C/state.json"; }

# ---- a newer version: set aside, the daemon starts with what it understands ----------------
case_dir newer
# db-orders vCPU 0 in version 1's shape (plus a field of the newer version); vCPU 1 not.
cat >"$C/state.json" <<EOF
{"version": 2, "written_by": "vnumad 9",
 "vcpus": [{"vm": "db-orders", "vm_id": 1000, "vcpu": 0, "tid": 1, "orig_nodes": "1",
            "orig_cpus": "16-31"},
           {"vm": "db-orders", "vcpu": 1, "orig_cpus": "16-31"}]}
EOF
cp "$C/state.json" "$D/newer.orig"
start
bad=$(set_aside "state.json.v2.$STAMP.bad")
cmp -s "$bad" "$D/newer.orig" || fail "the file set aside is not the original"
log_of | grep "warning" | grep -q "$bad" || fail "no warning naming $bad"
log_of | grep -q "1 of its 2 vCPU entries kept" || fail "the warning does not say what was kept"
[ "$(jq .version "$C/state.json")" -eq 1 ] || fail "the new state file is not version 1"
[ "$(jq '[.vcpus[] | select(.vm == "db-orders" and .vcpu == 0 and .orig_nodes == "1")] |
	length' "$C/state.json")" -eq 1 ] || fail "the entry of version 1's shape was not kept"
stop
# The orderly stop put db-orders vCPU 0 back on node 1 (what the newer file recorded), then
# every entry was done with.
[ "$(entries)" -eq 0 ] || fail "restore_on_exit left entries"
log_of | grep -q "restored the original affinity" || fail "no restore at the stop"

# --restore takes the same way: set aside, the understood entries put back.
case_dir newer-restore
cp "$D/newer.orig" "$C/state.json"
out=$("$VNUMAD" -f "$C/vnumad.conf" --simulate default --state "$C/state.json" --restore 2>"$D/newer-restore.log") ||
	fail "--restore with a newer state file failed: $out"
echo "$out" | grep -q "restored 1 vCPUs" || fail "--restore: $out"
set_aside "state.json.v2.$STAMP.bad" >/dev/null

# A malformed file: set aside without a version in its name; the daemon starts empty.
case_dir malformed
printf '{"version": 1, "vcpus": [{"vm": "db-orders",' >"$C/state.json"
start
set_aside "state.json.$STAMP.bad" >/dev/null
log_of | grep -q "not valid JSON: truncated; set aside as" || fail "malformed: no warning"
stop

# ---- the state directory cannot be written: nothing is pinned ------------------------------
case_dir unwritable
mkdir "$C/state.json.tmp" # open() refuses PATH.tmp, even to root: no state file can be written
start
sleep 2 # some 20 rounds of the simulated host
st=$(jctl stats)
jq_ok "$st" '.counters.pins_unrecorded > 0' "pins skipped are counted"
jq_ok "$st" '.counters.vcpu_moves == 0' "no vCPU moved while no state could be written"
[ "$(jctl events --limit 0 | jq '[.events[] | select(.kind == "pin")] | length')" -eq 0 ] ||
	fail "vCPUs were pinned while their original affinity could not be written"
n=$(log_of | grep -c 'state\.json\.tmp' || true)
if [ "$n" -lt 1 ] || [ "$n" -gt 2 ]; then
	fail "$n warnings about state.json.tmp in 20 rounds (want 1, rate-limited)"
fi
log_of | grep -q "vCPU pins skipped: their original affinity could not be recorded" ||
	fail "no warning that pins were skipped"
rmdir "$C/state.json.tmp"
WAIT_EXPR='.counters.vcpu_moves > 0'
wait_for stats
# Every vCPU pinned so far is in the file on disk: a SIGKILL loses nothing.
pins=$(jctl events --limit 0 | jq -c '[.events[] | select(.kind == "pin") |
	{vm, vcpu: (.text | capture("vCPU (?<n>[0-9]+)").n | tonumber)}] | unique')
kill -9 "$PID"
wait "$PID" 2>/dev/null || true
[ "$(printf '%s' "$pins" | jq length)" -gt 0 ] || fail "no pin events after the directory came back"
jq -e --argjson p "$pins" '. as $s | $p | all(. as $x | $s.vcpus |
	any(.vm == $x.vm and .vcpu == $x.vcpu))' "$C/state.json" >/dev/null ||
	fail "pinned vCPUs missing from the state file after kill -9: $pins"
out=$("$VNUMAD" -f "$C/vnumad.conf" --simulate default --state "$C/state.json" --restore 2>>"$D/unwritable.log")
echo "$out" | grep -q "restored [1-9][0-9]* vCPUs" || fail "--restore after kill -9: $out"

# ---- a start that fails leaves the state file as it was ------------------------------------
# Entries a crashed daemon left: the next start must keep them until it runs.
crashed_state() {
	cat >"$C/state.json" <<EOF
{"version": 1, "vcpus": [{"vm": "db-orders", "vm_id": 1000, "vcpu": 0, "tid": 1,
  "orig_nodes": "0-3"}, {"vm": "web1", "vm_id": 1001, "vcpu": 1, "tid": 2, "orig_nodes": "2"}]}
EOF
	cp "$C/state.json" "$C.orig"
}
case_dir running
start
running_sock=$C/sock
running_pid=$PID
# Another daemon answers on the socket: this one refuses to start, its state file untouched.
case_dir second
crashed_state
"$VNUMAD" -f "$C/vnumad.conf" --simulate default --state "$C/state.json" --socket "$running_sock" --foreground \
	>>"$D/second.log" 2>&1 && fail "a daemon started on a socket another one serves"
cmp -s "$C/state.json" "$C.orig" || fail "a start refused (socket served) changed the state file"
PID=$running_pid
C=$D/running
stop

# control_group naming no group: vnumad -n says so, with file:line, and a start fails as
# above, the state file untouched.
case_dir nogroup "control_group = vnumad-no-such-group"
crashed_state
"$VNUMAD" -n "$C/vnumad.conf" >"$D/nogroup.out" 2>&1 &&
	fail "vnumad -n accepted a control_group that names no group: $(cat "$D/nogroup.out")"
grep -q "vnumad.conf:[0-9]*: control_group: no group 'vnumad-no-such-group'" "$D/nogroup.out" ||
	fail "vnumad -n: $(cat "$D/nogroup.out")"
"$VNUMAD" -f "$C/vnumad.conf" --simulate default --state "$C/state.json" --socket "$C/sock" --foreground \
	>>"$D/nogroup.log" 2>&1 && fail "a daemon started with a control_group that names no group"
cmp -s "$C/state.json" "$C.orig" || fail "a start refused (control_group) changed the state file"

# ---- an entry recorded with nodes this host does not have goes back on every node ----------
case_dir foreign
cat >"$C/state.json" <<EOF
{"version": 1, "vcpus": [{"vm": "db-orders", "vm_id": 1000, "vcpu": 0, "tid": 1,
  "orig_nodes": "0-7"}]}
EOF
out=$("$VNUMAD" -f "$C/vnumad.conf" --simulate default --state "$C/state.json" --restore 2>"$D/foreign.log") ||
	fail "--restore of a foreign entry: $out"
echo "$out" | grep -q "restored 1 vCPUs" || fail "--restore of a foreign entry: $out"
grep -q "db-orders vCPU 0: its recorded nodes 0-7 are not all on this host (4 nodes): put back on every node" \
	"$D/foreign.log" || fail "no warning that a vCPU went back on every node"
[ "$(entries)" -eq 0 ] || fail "the foreign entry stayed"

# ---- scan tunables a crashed daemon saved (version 2) --------------------------------------
# The simulated host has no scan tunables: --restore says it could not put them back, exits
# 1, and keeps them in the state file for a host that has them; the vCPUs still go back.
case_dir scan
cat >"$C/state.json" <<EOF
{"version": 2, "vcpus": [{"vm": "db-orders", "vm_id": 1000, "vcpu": 0, "tid": 1,
  "orig_nodes": "0-3"}], "scan": {"delay_ms": 1000, "period_min_ms": 1000,
  "period_max_ms": 60000, "size_mb": 256}}
EOF
out=$("$VNUMAD" -f "$C/vnumad.conf" --simulate default --state "$C/state.json" --restore 2>"$D/scan.log") &&
	fail "--restore with scan tunables it cannot write exited 0: $out"
echo "$out" | grep -q "restored 1 vCPUs" || fail "--restore with scan tunables: $out"
echo "$out" | grep -q "could not restore the kernel's scan tunables: kept in the state file" ||
	fail "--restore did not say the scan tunables were kept: $out"
jq -e '.version == 2 and .scan.period_max_ms == 60000 and (.vcpus | length) == 0' \
	"$C/state.json" >/dev/null || fail "--restore: the state file: $(cat "$C/state.json")"

echo "daemon state: all checks passed"
