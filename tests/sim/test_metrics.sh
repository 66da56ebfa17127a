#!/bin/sh
# test_metrics.sh - vnumad's metrics from a simulated daemon, over HTTP and in the textfile.
#
#   - /metrics answers, and promtool passes the text it serves and the textfile;
#   - the Grafana dashboard (packaging/grafana/vnumad-dashboard.json) is valid JSON and names
#     only metrics that a real /metrics output has;
#   - a client that sent half a request and stalls, and one that sent garbage, never delay a
#     round: with both connected, the rounds go on and the control socket answers (counted in
#     rounds, not timed);
#   - the textfile is always whole: every copy taken while rounds rename new ones over it
#     passes promtool;
#   - SIGHUP moves the listener, refuses an address it cannot listen on (keeping the old
#     one), stops it; an unwritable textfile directory is logged and the daemon goes on.
set -u

: "${VNUMAD_BINDIR:?set VNUMAD_BINDIR to the build directory}"
: "${VNUMAD_SRCDIR:?set VNUMAD_SRCDIR to the source directory}"
VNUMAD=$VNUMAD_BINDIR/agent/vnumad
CTL=$VNUMAD_BINDIR/agent/vnumactl
HOLD=$VNUMAD_BINDIR/tests/http_hold
DASH=$VNUMAD_SRCDIR/packaging/grafana/vnumad-dashboard.json

D=$(mktemp -d "${TMPDIR:-/tmp}/vnumad-metrics.XXXXXX") || exit 1
T_PID_VARS="DPID HOLD1 HOLD2"
. "$(dirname "$0")/lib.sh"

for tool in promtool curl jq; do
	command -v $tool >/dev/null 2>&1 ||
		fail "$tool is missing (packaging/install-deps.sh installs curl, jq and prometheus)"
done

# status KEY: one field of `vnumactl status --json` (fails when the daemon does not answer).
status() {
	"$CTL" -c "$D/sock" --json status >"$D/status.json" 2>"$D/status.err" ||
		fail "the control socket did not answer: $(cat "$D/status.err")"
	jq -r ".$1" "$D/status.json"
}

# until_true TRIES CMD...: run CMD every 0.1 s until it succeeds, at most TRIES times.
until_true() {
	n=$1
	shift
	while ! "$@"; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		kill -0 "$DPID" 2>/dev/null || fail "vnumad exited: $(tail -n 5 "$D/vnumad.log")"
		sleep 0.1
	done
}

scrape() { curl -sf --max-time 10 -o "$2" "http://$1/metrics"; }

conf() { # conf LISTEN TEXTFILE: the daemon's configuration with these two keys
	{
		cat "$D/base.conf"
		echo "metrics_listen = \"$1\""
		echo "metrics_textfile = \"$2\""
	} >"$D/vnumad.conf"
}

mkdir "$D/out"
t_sim_conf "$D/base.conf"
conf 127.0.0.1:0 "$D/out/vnumad.prom"
"$VNUMAD" --simulate --speed 5 --foreground -f "$D/vnumad.conf" --socket "$D/sock" \
	--state "$D/state.json" \
	>"$D/vnumad.log" 2>&1 &
DPID=$!
t_wait_answer "$D/sock" "$DPID" "$D/vnumad.log"

addr=$(status metrics_listen)
case $addr in 127.0.0.1:[1-9]*) ;; *) fail "status: metrics_listen is '$addr'" ;; esac
[ "$(status metrics_textfile)" = "$D/out/vnumad.prom" ] || fail "status: metrics_textfile"

# ---- the text, checked by promtool, over HTTP and in the file ---------------------------
# Two rounds in, so that every family is there (the render time comes from the round before).
have_text() { scrape "$addr" "$D/m1.txt" && grep -q '^vnumad_metrics_render_seconds ' "$D/m1.txt"; }
until_true 300 have_text || fail "no complete /metrics text from $addr"
promtool check metrics <"$D/m1.txt" >"$D/promtool.log" 2>&1 ||
	fail "promtool check metrics refuses /metrics: $(cat "$D/promtool.log")"
grep -q '^vnumad_vm_locality_ratio{vm="db-orders"} ' "$D/m1.txt" ||
	fail "/metrics has no vnumad_vm_locality_ratio for db-orders"
grep -q '^vnumad_vm_memory_bytes{vm="db-orders",node="0"} ' "$D/m1.txt" ||
	fail "/metrics has no memory per node for db-orders"
[ -s "$D/out/vnumad.prom" ] || fail "no textfile $D/out/vnumad.prom"
promtool check metrics <"$D/out/vnumad.prom" >"$D/promtool.log" 2>&1 ||
	fail "promtool check metrics refuses the textfile: $(cat "$D/promtool.log")"
# Anything but GET /metrics is turned away, not served.
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/nothing")
[ "$code" = 404 ] || fail "GET /nothing answered $code, not 404"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://$addr/metrics")
[ "$code" = 405 ] || fail "POST /metrics answered $code, not 405"

# ---- the dashboard names only exported metrics ------------------------------------------
jq -e '.panels | length > 0' "$DASH" >/dev/null || fail "$DASH is not a dashboard's JSON"
awk '/^# TYPE/ { print $3; if ($4 == "histogram") { print $3 "_bucket"; print $3 "_sum";
	print $3 "_count" } }' "$D/m1.txt" | sort -u >"$D/exported"
jq -r '.. | strings' "$DASH" | grep -o 'vnumad_[a-z0-9_]*' | sort -u >"$D/dashboard"
[ -s "$D/dashboard" ] || fail "the dashboard names no vnumad metric"
missing=$(comm -23 "$D/dashboard" "$D/exported")
[ -z "$missing" ] || fail "the dashboard names metrics /metrics does not have: $missing"

# ---- stalled and malformed clients never delay a round ----------------------------------
port=${addr##*:}
printf 'GET /metr' | "$HOLD" 127.0.0.1 "$port" 120 >"$D/hold1.out" 2>&1 &
HOLD1=$!
printf '\001\002 garbage \377\r\n\r\n' | "$HOLD" 127.0.0.1 "$port" 120 >"$D/hold2.out" 2>&1 &
HOLD2=$!
until_true 200 grep -q connected "$D/hold1.out" || fail "http_hold: $(cat "$D/hold1.out")"
until_true 200 grep -q connected "$D/hold2.out" || fail "http_hold: $(cat "$D/hold2.out")"
r0=$(status rounds)
# Each try is a control reply; the rounds must go 10 further while both clients sit there.
rounds_past() { [ "$(status rounds)" -ge $((r0 + 10)) ]; }
until_true 600 rounds_past || fail "rounds stopped at $(status rounds) (from $r0) with stalled clients"
grep -q "connected" "$D/hold1.out" && ! grep -q "closed" "$D/hold1.out" ||
	echo "note: the half request was already dropped (idle timeout)"
# A scrape meanwhile gets a later round's text.
scrape "$addr" "$D/m2.txt" || fail "no scrape with stalled clients connected"
r2=$(sed -n 's/^vnumad_rounds_total //p' "$D/m2.txt")
[ "$r2" -ge $((r0 + 1)) ] || fail "the scraped text is from round $r2, before $r0"
kill "$HOLD1" "$HOLD2" 2>/dev/null
wait "$HOLD1" "$HOLD2" 2>/dev/null
HOLD1= HOLD2=

# ---- the textfile is always whole -------------------------------------------------------
i=0
while [ $i -lt 20 ]; do
	cp "$D/out/vnumad.prom" "$D/copy.prom" || fail "the textfile went missing"
	promtool check metrics <"$D/copy.prom" >"$D/promtool.log" 2>&1 ||
		fail "copy $i of the textfile is not a whole text: $(cat "$D/promtool.log")"
	tail -n 1 "$D/copy.prom" | grep -q '^vnumad_vm_actions_unsupported_total{' ||
		fail "copy $i of the textfile ends early: $(tail -n 1 "$D/copy.prom")"
	i=$((i + 1))
done

# ---- reloads ----------------------------------------------------------------------------
# Moved to another loopback address (127.0.0.2 is one on Linux).
conf 127.0.0.2:0 "$D/out/vnumad.prom"
kill -HUP "$DPID"
moved() { case $(status metrics_listen) in 127.0.0.2:*) true ;; *) false ;; esac; }
until_true 300 moved || fail "SIGHUP did not move the listener: $(status metrics_listen)"
new=$(status metrics_listen)
scrape "$new" "$D/m3.txt" || fail "no /metrics on $new after the move"
! curl -s --max-time 5 -o /dev/null "http://$addr/metrics" || fail "$addr still answers"

# An address vnumad cannot listen on (TEST-NET-1, on no interface): refused, the old one stays.
conf 192.0.2.1:9464 "$D/out/vnumad.prom"
kill -HUP "$DPID"
refused() { grep -q "reload refused" "$D/vnumad.log"; }
until_true 300 refused || fail "a reload to 192.0.2.1:9464 was not refused"
grep -q "metrics_listen 192.0.2.1:9464: cannot listen there" "$D/vnumad.log" ||
	fail "the refusal does not say why: $(tail -n 3 "$D/vnumad.log")"
[ "$(status metrics_listen)" = "$new" ] || fail "the refused reload moved the listener"
scrape "$new" "$D/m4.txt" || fail "the old listener stopped after a refused reload"

# A textfile whose directory is missing: logged, the rounds go on; metrics_listen off.
conf "" "$D/missing/vnumad.prom"
kill -HUP "$DPID"
stopped() { [ -z "$(status metrics_listen)" ]; }
until_true 300 stopped || fail "an empty metrics_listen did not stop the listener"
said() { grep -q "metrics_textfile $D/missing/vnumad.prom: cannot create it" "$D/vnumad.log"; }
until_true 300 said || fail "an unwritable textfile was not logged"
r0=$(status rounds)
until_true 300 rounds_past || fail "rounds stopped with an unwritable textfile"
! curl -s --max-time 5 -o /dev/null "http://$new/metrics" || fail "$new still answers"

kill "$DPID"
wait "$DPID"
rc=$?
DPID=
[ $rc -eq 0 ] || fail "vnumad exited with $rc"
echo "PASS: test_metrics"
