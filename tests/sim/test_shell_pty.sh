#!/bin/sh
# test_shell_pty.sh - vnumactl's interactive shell on a terminal: tmux panes of 80x24 and then
# 200x50, against a simulated daemon on a private socket.  Up recalls the last command (and,
# in the second session, the first session's, from the history file); Tab completes a command
# prefix and a VM name (asked of the daemon; with no daemon or a stopped one, nothing and no
# message); Ctrl-C at the prompt drops the line and the shell goes on; Ctrl-C stops events
# --follow, top, a waiting migrate and simulate, and the shell goes on; Ctrl-D leaves with status 0;
# the history file is mode 0600; an unusable history file costs one warning and nothing else;
# VNUMACTL_HISTFILE set and empty writes no file.  Every wait polls the screen, up to 30 s.
# Skips (77) without tmux.
set -eu

command -v tmux >/dev/null 2>&1 || {
	echo "SKIP: no tmux"
	exit 77
}
B=${VNUMAD_BINDIR:?}
: "${VNUMAD_SRCDIR:?}"
VNUMAD=$B/agent/vnumad
CTL=$B/agent/vnumactl
D=$(mktemp -d)
SOCK=$D/sock
PID=
TMUX_PID=
T_PID_VARS="PID TMUX_PID"
. "$(dirname "$0")/lib.sh"

# A private tmux server per session (its socket in $D: a server being killed may still hold
# the last one's), with no user configuration.
TM_N=0
tm() { tmux -S "$D/tmux$TM_N.sock" -f /dev/null "$@"; }
screen() { tm capture-pane -p -J -S - -t vn; }
# fail_screen WHAT: fail, showing the pane first (the cleanup kills tmux before the logs).
fail_screen() {
	echo "--- screen ---" >&2
	screen >&2 2>/dev/null || true
	fail "$@"
}

# wait_for PATTERN COUNT WHAT: until COUNT lines of the pane and its scrollback match the
# extended regular expression PATTERN; fails after 30 s.
wait_for() {
	i=0
	until [ "$(screen | grep -Ec -- "$1")" -ge "$2" ]; do
		i=$((i + 1))
		[ $i -lt 300 ] || fail_screen "$3: no $2 lines matching '$1' after 30 s"
		sleep 0.1
	done
}
# wait_prompt WHAT: until the last line shown is an empty prompt.
wait_prompt() {
	i=0
	until screen | sed '/^$/d' | tail -n 1 | grep -Eqx 'vnumactl # ?'; do
		i=$((i + 1))
		[ $i -lt 300 ] || fail_screen "$1: no prompt after 30 s"
		sleep 0.1
	done
}

t_sim_conf "$D/vnumad.conf"
mkdir "$D/home"
"$VNUMAD" -f "$D/vnumad.conf" --simulate default --speed 20 --socket "$SOCK" --foreground \
	>"$D/daemon.log" 2>&1 &
PID=$!
t_wait_answer "$SOCK" "$PID" "$D/daemon.log"
"$CTL" -c "$SOCK" list | grep -q ' db-orders ' || fail "the simulated host has no db-orders"

HIST=$D/state/vnumactl/history
# session COLUMNS ROWS [ENV]: start the shell in a new pane of that size; ENV is more
# NAME=value words for env (quoted for the pane's sh).  The socket is $SHELL_SOCK if set.
session() {
	TM_N=$((TM_N + 1))
	tm new-session -d -s vn -x "$1" -y "$2" \
		"env -u VNUMACTL_HISTFILE HOME='$D/home' XDG_STATE_HOME='$D/state' TERM=xterm \
		${3:-} '$CTL' -c '${SHELL_SOCK:-$SOCK}'; echo \"shell-exited \$?\"; exec sleep 600"
	TMUX_PID=$(tm display-message -p '#{pid}')
	wait_prompt "the shell at $1x$2 did not start"
}
# status_runs N WHAT: type status and wait for the Nth answer of the session, then the prompt.
status_runs() {
	tm send-keys -t vn 'status' Enter
	wait_for '^rounds: ' "$1" "$2"
	wait_prompt "no prompt after status"
}
# interrupt N COMMAND RUNNING STOPPED: type COMMAND, wait until the screen shows RUNNING,
# Ctrl-C, wait for STOPPED (a pattern, or '' for nothing more than the prompt), and check that
# the shell goes on (the Nth status of the session).
interrupt() {
	tm send-keys -t vn "$2" Enter
	wait_for "$3" 1 "$2 showed no '$3'"
	tm send-keys -t vn C-c
	[ -z "$4" ] || wait_for "$4" 1 "Ctrl-C did not stop $2"
	wait_prompt "Ctrl-C did not bring the prompt back after $2"
	status_runs "$1" "the shell did not go on after Ctrl-C stopped $2"
}
# Ctrl-D leaves with status 0; then the pane is dropped.
leave() {
	tm send-keys -t vn C-d
	wait_for '^shell-exited 0$' 1 "Ctrl-D did not end the shell with status 0"
	tm kill-server
	TMUX_PID=
}

# ---- 80x24 --------------------------------------------------------------------------------
session 80 24
status_runs 1 "status did not answer"
tm send-keys -t vn Up
wait_for '^vnumactl # status$' 2 "Up did not recall 'status'"
tm send-keys -t vn Enter
wait_for '^rounds: ' 2 "the recalled status did not run"
wait_prompt "no prompt after the recalled status"

tm send-keys -t vn 'vmi' Tab
wait_for '^vnumactl # vminfo ?$' 1 "Tab did not complete 'vmi' to 'vminfo'"
tm send-keys -t vn 'db-o' Tab
wait_for '^vnumactl # vminfo db-orders ?$' 1 "Tab did not complete the VM name 'db-o'"
tm send-keys -t vn Enter
wait_for '^name: +db-orders$' 1 "the completed vminfo did not run"
wait_prompt "no prompt after vminfo"

# Keys typed after Ctrl-C before the shell saw it would be dropped with the line: wait for
# the ^C before typing on.
tm send-keys -t vn 'bogus-dropped' C-c
wait_for '\^C$' 1 "Ctrl-C at the prompt showed no ^C"
wait_prompt "no new prompt after Ctrl-C"
status_runs 3 "the shell did not go on after Ctrl-C at the prompt"
! screen | grep -q "unknown command 'bogus-dropped'" || fail "Ctrl-C ran the dropped line"

interrupt 4 'events --follow' ' seq ' ''
leave

[ -f "$HIST" ] || fail "no history file $HIST"
[ "$(stat -c %a "$HIST")" = 600 ] || fail "history file mode $(stat -c %a "$HIST"), not 600"
grep -q 'vminfo' "$HIST" || fail "vminfo is not in the history file"

# ---- 200x50: history from the first session --------------------------------------------
session 200 50
tm send-keys -t vn Up
wait_for '^vnumactl # status$' 1 "Up did not recall the last session's 'status'"
tm send-keys -t vn C-u 'nodei' Tab
wait_for '^vnumactl # nodeinfo ?$' 1 "Tab did not complete 'nodei' at 200x50"
tm send-keys -t vn C-u 'vminfo db-o' Tab Enter
wait_for '^name: +db-orders$' 1 "vminfo db-o<Tab> did not run at 200x50"
wait_prompt "no prompt after vminfo"
tm send-keys -t vn C-c
wait_for '\^C$' 1 "Ctrl-C on an empty line showed no ^C"
wait_prompt "no new prompt after Ctrl-C on an empty line"
status_runs 1 "the shell did not go on after Ctrl-C at 200x50"
# Ctrl-C stops top, a migrate that waits for the memory (hpc-wide does not fit node 3:
# --force, so it waits long), and simulate between two balancers (240 VMs: long enough to be
# stopped).
interrupt 2 'top' '^nodes [0-9]+  vms [0-9]+' ''
interrupt 3 'migrate hpc-wide --node 3 --force' '\] +[0-9]+%' \
	'stopped waiting; vnumad goes on moving hpc-wide'
interrupt 4 "simulate '$VNUMAD_SRCDIR/tests/sim/12-cloud-240vms.json'" 'simulating ' \
	'^error: interrupted$'
leave
[ "$(stat -c %a "$HIST")" = 600 ] || fail "history file mode $(stat -c %a "$HIST") after a rewrite"

# ---- a history file that cannot be used: one warning, and the shell goes on ---------------
: >"$D/not-a-dir"
session 80 24 "VNUMACTL_HISTFILE='$D/not-a-dir/history'"
wait_for 'warning: cannot read .*not-a-dir/history' 1 "no warning for an unusable history file"
status_runs 1 "status did not answer with an unusable history file"
status_runs 2 "status did not answer twice with an unusable history file"
[ "$(screen | grep -c 'warning:')" = 1 ] || fail_screen "not exactly one history warning"
leave

# ---- VNUMACTL_HISTFILE set and empty: no file at all -----------------------------------
rm -rf "$D/state"
session 80 24 "VNUMACTL_HISTFILE="
status_runs 1 "status did not answer without a history file"
leave
[ ! -e "$D/state" ] || fail "VNUMACTL_HISTFILE= still wrote $(find "$D/state")"
# ---- no daemon, and a daemon that does not answer (stopped): commands still complete, a VM
# completes to nothing, nothing is printed, and the shell does not hang on it ---------------
# no_vm_names WHAT
no_vm_names() {
	session 80 24
	tm send-keys -t vn 'vmi' Tab
	wait_for '^vnumactl # vminfo ?$' 1 "Tab did not complete 'vmi' with $1"
	tm send-keys -t vn 'd' Tab 'X'
	wait_for '^vnumactl # vminfo dX$' 1 "Tab on a VM with $1 changed the line"
	! screen | grep -Eq 'error|cannot|warning' || fail_screen "Tab with $1 printed an error"
	tm send-keys -t vn C-u
	leave
}
SHELL_SOCK=$D/no-daemon.sock
no_vm_names "no daemon"
SHELL_SOCK=
kill -STOP "$PID"
no_vm_names "a stopped daemon"
kill -CONT "$PID"
echo "ok: shell on a terminal at 80x24 and 200x50"
