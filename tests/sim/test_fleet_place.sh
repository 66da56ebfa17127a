#!/bin/sh
# test_fleet_place.sh - packaging/examples/fleet-place.sh picks the host of a fleet that keeps a
# new VM local: three simulated daemons stand for three hosts (one full, one tight, one roomy)
# and a fourth host cannot be reached; the VM goes to the roomy one, the full one says it has
# no room, the unreachable one is listed and skipped.  Their metrics carry the same capacity.
set -u

: "${VNUMAD_BINDIR:?set VNUMAD_BINDIR to the build directory}"
: "${VNUMAD_SRCDIR:?set VNUMAD_SRCDIR to the source directory}"
VNUMAD=$VNUMAD_BINDIR/agent/vnumad
CTL=$VNUMAD_BINDIR/agent/vnumactl
PLACE=$VNUMAD_SRCDIR/packaging/examples/fleet-place.sh

D=$(mktemp -d "${TMPDIR:-/tmp}/vnumad-fleet.XXXXXX") || exit 1
T_PID_VARS="PIDS"
PIDS=""
. "$(dirname "$0")/lib.sh"
command -v jq >/dev/null 2>&1 || fail "jq is missing (packaging/install-deps.sh installs it)"

# scenario NAME VM_GIB...: a 2-node host (8 CPUs, 16 GiB a node), one 4-vCPU VM per size,
# their memory on alternate nodes.
scenario() {
	name=$1
	shift
	vms="" i=0
	for gib in "$@"; do
		vms="$vms${vms:+,}{\"name\":\"$name$i\",\"vcpus\":4,\"memory_gib\":$gib,\
\"workload\":\"private\",\"first_touch_node\":$((i % 2))}"
		i=$((i + 1))
	done
	printf '{"name":"%s","seed":1,"duration_s":3600,"host":{"nodes":2,"cpus_per_node":8,
"memory_per_node_gib":16},"vms":[%s]}\n' "$name" "$vms" >"$D/$name.json"
}

start() { # start NAME: a simulated daemon on $D/NAME.json, its socket $D/NAME.sock
	mkdir "$D/$1"
	t_sim_conf "$D/$1.conf"
	rm -rf "$D/policy.d"
	"$VNUMAD" --simulate "$D/$1.json" --foreground -f "$D/$1.conf" --socket "$D/$1.sock" \
		--state "$D/$1/state.json" >"$D/$1.log" 2>&1 &
	PIDS="$PIDS $!"
	t_wait_answer "$D/$1.sock" "$!" "$D/$1.log"
	i=0
	until [ "$("$CTL" -c "$D/$1.sock" --json status | jq -r .rounds)" -ge 2 ]; do
		i=$((i + 1))
		[ $i -lt 300 ] || fail "$1: no rounds"
		sleep 0.1
	done
}

scenario full 14 14
scenario tight 6 6
scenario roomy 2
for h in full tight roomy; do start $h; done

VNUMACTL_CMD="$CTL -c $D/{}.sock" sh "$PLACE" --vcpus 4 --memory 8G \
	tight full roomy gone >"$D/out.txt" 2>&1
rc=$?
cat "$D/out.txt"
[ $rc -eq 0 ] || fail "fleet-place.sh exited $rc"
[ "$(tail -n 1 "$D/out.txt")" = "best: roomy" ] || fail "the VM did not go to the roomy host"
grep -q '^roomy [0-9] 1 [0-9]' "$D/out.txt" || fail "roomy: not on one node"
grep -q '^tight [0-9] 1 [0-9]' "$D/out.txt" || fail "tight: not on one node"
grep -q '^full - - - ' "$D/out.txt" || fail "full: should have no room"
grep -q '^gone - - - ' "$D/out.txt" || fail "gone: should be listed as not answering"
# Nobody has room for a 40 GiB VM: exit status 1.
VNUMACTL_CMD="$CTL -c $D/{}.sock" sh "$PLACE" --vcpus 4 --memory 40G tight roomy \
	>"$D/out2.txt" 2>&1 && fail "a VM no host holds found a host: $(cat "$D/out2.txt")"
grep -q '^best: none' "$D/out2.txt" || fail "no 'best: none' line"
echo "PASS: test_fleet_place"
