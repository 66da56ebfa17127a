#!/bin/sh
# A simulated daemon keeps away from the real daemon's files: without --socket and --state it
# serves in ${XDG_RUNTIME_DIR:-/tmp}/vnumad-sim-UID/ (0700, ours, no symbolic link), ignores
# the socket and state_file of its configuration (and says so), prints the VNUMAD_SOCKET line
# vnumactl takes; --socket/--state still win.  As root, the same again run as nobody (setpriv).
set -eu

B=${VNUMAD_BINDIR:?}
VNUMAD=$B/agent/vnumad
CTL=$B/agent/vnumactl
D=$(mktemp -d)
chmod 755 "$D"
PID=
T_PID_VARS="PID"
. "$(dirname "$0")/lib.sh"

# The real daemon's files, as a configuration names them: none may be created.
cat >"$D/vnumad.conf" <<EOF
sample_period = 1s
socket = $D/real/vnumad.sock
state_file = $D/real/state.json
policy_dir = $D/policy.d
log_level = info
EOF
mkdir "$D/real" "$D/policy.d"
chmod 777 "$D/real"
chmod 644 "$D/vnumad.conf"

# run_case WHO RUNDIR: as WHO (a command prefix, "" for us), start a simulated daemon with
# XDG_RUNTIME_DIR=RUNDIR and the configuration above; check where it serves and what it
# says; ask it through VNUMAD_SOCKET; stop it.
run_case() {
	who=$1
	run=$2
	log=$D/daemon-$(basename "$run").log
	uid=$($who id -u)
	sock=$run/vnumad-sim-$uid/vnumad.sock
	# shellcheck disable=SC2086
	XDG_RUNTIME_DIR=$run $who "$VNUMAD" -f "$D/vnumad.conf" --simulate --speed 10 \
		--foreground >"$log" 2>&1 &
	PID=$!
	i=0
	# shellcheck disable=SC2086
	until VNUMAD_SOCKET=$sock $who "$CTL" status >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 200 ] || fail "no simulated daemon answered on $sock: $(tail -n 3 "$log")"
		kill -0 "$PID" 2>/dev/null || fail "vnumad exited at start: $(tail -n 3 "$log")"
		sleep 0.1
	done
	[ -S "$sock" ] || fail "no socket at $sock"
	mode=$(stat -c %a "$run/vnumad-sim-$uid")
	[ "$mode" = 700 ] || fail "the simulated daemon's directory has mode $mode, not 700"
	# The simulated VMs arrive at its first tick: list until db-orders is there (20 s).
	i=0
	while :; do
		# shellcheck disable=SC2086
		out=$(VNUMAD_SOCKET=$sock $who "$CTL" list) || fail "VNUMAD_SOCKET=$sock vnumactl list failed"
		! echo "$out" | grep -q "db-orders" || break
		i=$((i + 1))
		[ $i -lt 200 ] || fail "vnumactl list via VNUMAD_SOCKET: $out"
		sleep 0.1
	done
	grep -q "export VNUMAD_SOCKET=$sock\$" "$log" || fail "no VNUMAD_SOCKET line: $(cat "$log")"
	grep -q "not using socket = $D/real/vnumad.sock of the configuration" "$log" ||
		fail "no notice about the configuration's socket: $(cat "$log")"
	grep -q "not using state_file = $D/real/state.json" "$log" ||
		fail "no notice about the configuration's state_file: $(cat "$log")"
	# The state file's lock is taken before the socket answers (the file itself is written
	# at the first pin, whenever that comes).
	[ -e "$run/vnumad-sim-$uid/state.json.lock" ] || fail "no state file in $run/vnumad-sim-$uid"
	kill -TERM "$PID"
	wait "$PID" || fail "vnumad did not stop cleanly: $(tail -n 3 "$log")"
	PID=
	[ -z "$(ls "$D/real")" ] ||
		fail "the simulated daemon wrote where the configuration says: $(ls "$D/real")"
}

mkdir "$D/run-self"
run_case "" "$D/run-self"
# A client without -c or VNUMAD_SOCKET asks the default socket, not the simulated one.
out=$(VNUMAD_SOCKET='' "$CTL" -c "$D/nothing.sock" status 2>&1) && fail "status on no socket answered"
echo "$out" | grep -q "$D/nothing.sock" || fail "-c does not win over VNUMAD_SOCKET: $out"

# --socket and --state win over the simulated directory, which is then not made.
mkdir "$D/run-explicit"
XDG_RUNTIME_DIR=$D/run-explicit "$VNUMAD" -f "$D/vnumad.conf" --simulate --speed 10 \
	--socket "$D/own.sock" --state "$D/own.json" --foreground >"$D/explicit.log" 2>&1 &
PID=$!
t_wait_answer "$D/own.sock" "$PID" "$D/explicit.log"
[ -e "$D/own.json.lock" ] || fail "--state was not used"
kill -TERM "$PID"
wait "$PID" || fail "vnumad --socket --state did not stop cleanly"
PID=
[ -z "$(ls "$D/run-explicit")" ] || fail "a simulated directory made though --socket and --state were given"

# A directory that is a symbolic link, or someone else's, or open to others, is refused.
mkdir "$D/run-link" "$D/elsewhere"
ln -s "$D/elsewhere" "$D/run-link/vnumad-sim-$(id -u)"
XDG_RUNTIME_DIR=$D/run-link "$VNUMAD" --simulate --foreground >"$D/link.log" 2>&1 &&
	fail "vnumad served in a symbolic link"
grep -q "is a symbolic link, not a directory" "$D/link.log" || fail "symlink: $(cat "$D/link.log")"
mkdir -p "$D/run-open/vnumad-sim-$(id -u)"
chmod 755 "$D/run-open/vnumad-sim-$(id -u)"
XDG_RUNTIME_DIR=$D/run-open "$VNUMAD" --simulate --foreground >"$D/open.log" 2>&1 &&
	fail "vnumad served in a directory open to others"
grep -q "has mode 0755, open to others" "$D/open.log" || fail "mode: $(cat "$D/open.log")"

if command -v setpriv >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	# Someone else's directory is refused to root too.
	mkdir -p "$D/run-foreign/vnumad-sim-0"
	chmod 700 "$D/run-foreign/vnumad-sim-0"
	chown 65534:65534 "$D/run-foreign/vnumad-sim-0"
	XDG_RUNTIME_DIR=$D/run-foreign "$VNUMAD" --simulate --foreground >"$D/foreign.log" 2>&1 &&
		fail "vnumad served in a directory of another user"
	grep -q "belongs to uid 65534, not to us" "$D/foreign.log" || fail "owner: $(cat "$D/foreign.log")"
	# The README's commands as a user who cannot write /run or /var/lib.
	mkdir "$D/run-nobody"
	chown 65534:65534 "$D/run-nobody"
	run_case "setpriv --reuid=65534 --regid=65534 --clear-groups --" "$D/run-nobody"
else
	echo "skip: the non-root daemon and the foreign directory need root and setpriv"
fi
echo "PASS: test_sim_paths"
