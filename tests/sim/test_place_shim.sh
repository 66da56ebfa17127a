#!/bin/sh
# packaging/vnumad-numad-shim, the `numad -w` stand-in for libvirt's placement='auto': it
# prints what `vnumactl place` advises on a running vnumad (the simulated 4-node host), every
# online node when vnumad cannot be asked (a domain must still start), and refuses other
# arguments.
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

want=$("$VNUMACTL" -c "$D/sock" --json place --vcpus 4 --memory 8192M | jq -r .nodes)
got=$(sh "$SHIM" -w 4:8192) || fail "the shim failed"
[ "$got" = "$want" ] || fail "shim said '$got', vnumactl place says '$want'"
echo "ok: -w 4:8192 -> $got"
want=$("$VNUMACTL" -c "$D/sock" --json place --vcpus 48 --memory 2M | jq -r .nodes)
got=$(sh "$SHIM" -w 48) || fail "the shim failed without a memory size"
[ "$got" = "$want" ] || fail "shim said '$got' for 48 vCPUs, vnumactl place says '$want'"
echo "ok: -w 48 -> $got"

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
