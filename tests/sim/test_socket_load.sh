#!/bin/sh
# test_socket_load.sh - the control socket under load, on a private socket: 200 clients at
# once, 50 requests each (reads, malformed JSON, invalid UTF-8, deep nesting, wrong JSON types
# for the arguments of every command, a 1 MiB line), beside idle and half-line clients.
# Properties:
#   - every request on a connection the daemon kept gets its reply line (tests/tools/
#     vnumad_load.c); a connection beyond the daemon's limit gets one refusal line;
#   - the rounds keep their period: a round every simulated second (the simulated clock
#     waits for rounds, so this holds however slow the machine);
#   - descriptors return to the idle baseline once the clients are gone, and RSS (not under
#     ASan) to within SOCKET_RSS_SLACK_KIB of its level before the load.
# Needs jq.  Logs are kept only on failure.
set -eu

B=${VNUMAD_BINDIR:?}
VNUMAD=$B/agent/vnumad
CTL=$B/agent/vnumactl
LOAD=$B/tests/vnumad_load
RAW=$B/tests/vnumad_raw
SOCKET_RSS_SLACK_KIB=4096
D=$(mktemp -d "${TMPDIR:-/tmp}/vnumad-sload.XXXXXX")
SOCK=$D/sock
PID=
HOLD=
T_PID_VARS="PID HOLD"
T_LOG_LINES=40
. "$(dirname "$0")/lib.sh"
jctl() { "$CTL" -c "$SOCK" --json "$@"; }

t_sim_conf "$D/vnumad.conf"
"$VNUMAD" -f "$D/vnumad.conf" --simulate default --state "$D/state.json" --speed 20 --socket "$SOCK" --foreground \
	>"$D/daemon.log" 2>&1 &
PID=$!
t_wait_answer "$SOCK" "$PID" "$D/daemon.log"
sleep 1
fd0=$(ls "/proc/$PID/fd" | wc -l)
rss0=$(awk '/^VmRSS:/ { print $2 }' "/proc/$PID/status")
# Rounds and host time from one reply: at --speed 20 a second between two requests is 20
# simulated seconds, which a loaded machine easily puts there.
s=$(jctl status)
r0=$(echo "$s" | jq '.rounds')
t0=$(echo "$s" | jq '.host_time_s')

# Idle clients and clients stuck halfway through a line, beside the load.
for k in 1 2 3 4 5; do
	"$RAW" "$SOCK" --hold 20 &
	HOLD="$HOLD $!"
	printf '{"version":1,"cmd":"st' | "$RAW" "$SOCK" --wait 20 >/dev/null &
	HOLD="$HOLD $!"
done
sleep 0.3
out=$("$LOAD" "$SOCK" 200 50) || fail "requests went unanswered: $out"
echo "load: $out"
kill -0 "$PID" 2>/dev/null || fail "vnumad died under load"
jctl status >/dev/null || fail "vnumad does not answer after the load"
for p in $HOLD; do kill "$p" 2>/dev/null || true; done
for p in $HOLD; do wait "$p" 2>/dev/null || true; done
HOLD=
sleep 1

s=$(jctl status)
r1=$(echo "$s" | jq '.rounds')
t1=$(echo "$s" | jq '.host_time_s')
awk -v r=$((r1 - r0)) -v t0="$t0" -v t1="$t1" 'BEGIN { exit !(r >= 0.95 * (t1 - t0) - 1) }' ||
	fail "$((r1 - r0)) rounds in $t0..$t1 simulated seconds"
fd1=$(ls "/proc/$PID/fd" | wc -l)
[ "$fd1" -le "$fd0" ] || fail "descriptors: $fd0 before the load, $fd1 after"
rss1=$(awk '/^VmRSS:/ { print $2 }' "/proc/$PID/status")
if ldd "$VNUMAD" 2>/dev/null | grep -q libasan; then
	echo "socket load: built with ASan: RSS not bounded here (its quarantine keeps freed memory)"
else
	[ "$rss1" -le $((rss0 + SOCKET_RSS_SLACK_KIB)) ] ||
		fail "RSS: $rss0 KiB before the load, $rss1 KiB after"
fi
kill -TERM "$PID"
wait "$PID" || fail "vnumad did not stop cleanly"
PID=
echo "socket load: rounds $((r1 - r0)) in $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s, fds $fd0 -> $fd1, RSS $rss0 -> $rss1 KiB"
