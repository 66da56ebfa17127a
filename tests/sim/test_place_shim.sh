#!/bin/sh
# packaging/vnumad-numad-shim, the `numad -w` stand-in for libvirt's placement='auto': it
# prints what `vnumactl place --reserve` advises on a running vnumad (the simulated 4-node
# host), which vnumad holds for the domain about to start; every online node when vnumad
# cannot be asked (a domain must still start); and refuses other arguments.
set -u
B=${VNUMAD_BINDIR:?}
SHIM=${VNUMAD_SRCDIR:?}/packaging/vnumad-numad-shim
D=$(mktemp -d)
PID=

cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

export VNUMACTL=$B/agent/vnumactl VNUMAD_SOCKET=$D/sock
"$B/agent/vnumad" --simulate default --speed 20 --socket "$D/sock" --state "$D/state" \
	--foreground >"$D/log" 2>&1 &
PID=$!
i=0
until "$VNUMACTL" -c "$D/sock" status >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "vnumad did not start: $(cat "$D/log")"
	sleep 0.1
done

# same_as_place SHIM-ARGS PLACE-ARGS...: the shim's answer against vnumactl place's, asked
# just before it.  The simulated host moves on between two requests (VMs converge, arrive),
# and place's answer with it, so a differing answer is asked again a few times.  The shim
# reserves (place --reserve: the daemon logs the hold), so place asked after it may differ.
same_as_place() {
	shim_args=$1
	shift
	n=0
	while :; do
		before=$("$VNUMACTL" -c "$D/sock" --json place "$@" | jq -r .nodes)
		# shellcheck disable=SC2086 # split on purpose
		got=$(sh "$SHIM" $shim_args) || fail "the shim failed ($shim_args)"
		[ "$got" = "$before" ] && break
		n=$((n + 1))
		[ $n -lt 5 ] || fail "shim said '$got' for $shim_args, vnumactl place says '$before'"
	done
	grep -q "^vnumad: place: nodes* $got held for a VM of [0-9]* vCPUs" "$D/log" ||
		fail "no hold logged for the shim's answer $got: $(cat "$D/log")"
	echo "ok: $shim_args -> $got (held)"
}
same_as_place "-w 4:8192" --vcpus 4 --memory 8192M
same_as_place "-w 48" --vcpus 48 --memory 2M

for bad in "-w" "-w x:1" "-w 4:big" "-V" "-w 4:1 extra"; do
	# shellcheck disable=SC2086 # split on purpose
	sh "$SHIM" $bad >/dev/null 2>&1 && fail "the shim accepted '$bad'"
done
echo "ok: bad arguments refused"

kill "$PID"
wait "$PID" 2>/dev/null
PID=
got=$(sh "$SHIM" -w 4:8192) || fail "the shim failed with vnumad stopped"
[ "$got" = "$(cat /sys/devices/system/node/online)" ] ||
	fail "with vnumad stopped the shim said '$got', not every online node"
echo "ok: vnumad stopped -> every online node ($got)"
echo "numad shim test passed"
