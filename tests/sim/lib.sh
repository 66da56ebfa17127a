# lib.sh - what the tests of a simulated daemon share (sourced, not run: its name is not
# test_*.sh): fail, a cleanup that kills what the test started and shows its logs when it
# failed, waiting until a daemon answers on its socket, and a small daemon configuration.
#
# Before sourcing, a test sets D (its private directory, removed at exit) and may set:
#   T_PID_VARS   names of the variables that hold the pids it starts (each a list of pids);
#                their values are read at exit, so a variable emptied after `wait` is not
#                killed again (its pid may belong to someone else by then)
#   T_LOGS       the logs to show on failure, a glob (default: "$D"/*.log)
#   T_LOG_LINES  show only the last lines of each (default: all)
#   T_ON_FAIL    a function that shows more on failure (the soak's samples)
# Source it with: . "$(dirname "$0")/lib.sh"

t_cleanup() {
	rc=$?
	for v in ${T_PID_VARS:-}; do
		eval "pids=\${$v:-}"
		for p in $pids; do kill -9 "$p" 2>/dev/null || true; done
	done
	if [ $rc -ne 0 ]; then
		for f in ${T_LOGS:-"$D"/*.log}; do
			[ -e "$f" ] || continue
			echo "--- $f ---"
			if [ -n "${T_LOG_LINES:-}" ]; then tail -n "$T_LOG_LINES" "$f"; else cat "$f"; fi
		done
		[ -z "${T_ON_FAIL:-}" ] || "$T_ON_FAIL"
	fi
	rm -rf "$D"
	exit $rc
}
trap t_cleanup EXIT INT TERM

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# t_wait_answer SOCK PID [LOG]: until vnumactl gets an answer on SOCK (20 s of tries); fails
# at once when PID exits first, with LOG's last lines.
t_wait_answer() {
	i=0
	until "$CTL" -c "$1" status >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 200 ] || fail "vnumad did not answer on $1"
		kill -0 "$2" 2>/dev/null ||
			fail "vnumad exited at start${3:+: $(tail -n 3 "$3" 2>/dev/null)}"
		sleep 0.1
	done
}

# t_sim_conf FILE: a small daemon configuration with its state and policy directory in $D
# (made here), sampling every second, the socket for its owner only.
t_sim_conf() {
	cat >"$1" <<CONF
sample_period = 1s
socket_mode = 0600
state_file = $D/state.json
policy_dir = $D/policy.d
restore_on_exit = yes
log_level = warning
CONF
	mkdir "$D/policy.d"
}
