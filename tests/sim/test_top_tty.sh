#!/bin/sh
# test_top_tty.sh - vnumactl top on a real terminal: a private tmux server (its socket in the
# test's directory) runs top against vnumad on the simulated 4-node host with 32 VMs
# (13-4node-32vms.json), first at 80x24, then resized to 200x50.  Checks: the header, every VM
# row whole (as many words as the table's header), the marker counting the VMs that do not
# fit at 80x24 and none at 200x50, a sort key reordering the rows, '?' showing the key help,
# the resize redrawing at the new width, 'q' and Ctrl-C exiting 0 with the terminal's modes as
# before; and top exiting 1 with the terminal restored when vnumad goes away.  Waits by
# polling the screen (30 s at most for each thing).  Exit 77 (skip) without tmux.
set -eu

B=${VNUMAD_BINDIR:?}
S=${VNUMAD_SRCDIR:?}
VNUMAD=$B/agent/vnumad
CTL=$B/agent/vnumactl
command -v tmux >/dev/null 2>&1 || { echo "SKIP: tmux is not installed"; exit 77; }
D=$(mktemp -d)
SOCK=$D/sock
PID=
T_PID_VARS="PID"
. "$(dirname "$0")/lib.sh"
tm() { tmux -S "$D/tmux.sock" -f /dev/null "$@"; }
# The tmux server goes too, whatever happens (t_cleanup keeps the status it was called with).
top_cleanup() {
	rc=$?
	set +e # else the (exit $rc) below ends the trap before t_cleanup stops vnumad
	tm kill-server 2>/dev/null
	(exit $rc)
	t_cleanup
}
trap top_cleanup EXIT INT TERM

printf 'state_file = %s/state.json\npolicy_dir = %s/policy.d\n' "$D" "$D" >"$D/vnumad.conf"
"$VNUMAD" -f "$D/vnumad.conf" --simulate "$S/tests/sim/13-4node-32vms.json" --speed 20 \
	--socket "$SOCK" --foreground >"$D/daemon.log" 2>&1 &
PID=$!
t_wait_answer "$SOCK" "$PID" "$D/daemon.log"

# The pane's program: top, then its exit status and the terminal's modes, then waiting.  The
# shell survives a Ctrl-C meant for top (a trapped signal is back to default in top).
cat >"$D/run.sh" <<EOF
trap : INT
stty -g >"$D/stty.before"
TERM=screen "$CTL" -c "$SOCK" top --interval 0.5 2>"$D/top.log"
echo "top-exit=\$?"
stty -g >"$D/stty.after"
exec sleep 600
EOF

# wait_screen PATTERN WHAT: until a line of the screen matches PATTERN (grep -E).
wait_screen() {
	i=0
	until tm capture-pane -p -t top >"$D/screen" 2>/dev/null && grep -Eq -- "$1" "$D/screen"; do
		i=$((i + 1))
		[ $i -lt 300 ] || fail "$2: no '$1' on the screen:
$(cat "$D/screen")"
		sleep 0.1
	done
}

# rows_whole: every VM row (vmNN) has as many words as the table's header line.
rows_whole() {
	awk '/^ *(id|name) / { nf = NF; next }
	     nf && /^ *([0-9]+ +)?vm[0-9][0-9] / { rows++; if (NF != nf) { print "cut: " $0; bad = 1 } }
	     END { if (!nf || !rows) { print "no VM table"; bad = 1 } exit bad }' "$D/screen" ||
		fail "$1: VM rows not whole:
$(cat "$D/screen")"
}

# column_of NAME: the values of table column NAME, one per VM row, in screen order.
column_of() {
	awk -v col="$1" '/^ *(id|name) / { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
	                 c && /^ *([0-9]+ +)?vm[0-9][0-9] / { print $c }' "$D/screen"
}

# modes_restored WHEN: the pane's terminal modes after top (stty -g) are those from before.
modes_restored() {
	i=0
	until [ -s "$D/stty.after" ] || [ $i -ge 300 ]; do i=$((i + 1)); sleep 0.1; done
	cmp -s "$D/stty.before" "$D/stty.after" || fail "$1: terminal modes not restored"
}

tm new-session -d -s top -x 80 -y 24 "sh $D/run.sh"

# 80x24: the header and a table that does not fit: the marker counts the rest.
wait_screen '^nodes 4  vms [0-9]+  rounds [0-9]+  locality [0-9.]+  (running|PAUSED)' "header"
tm send-keys -t top p # no refresh from here on: the screen holds still for the checks
wait_screen 'refresh off' "p pauses the refresh"
wait_screen '^\.\.\. [0-9]+ more VMs below \(Down/PgDn\)' "marker at 80x24"
rows_whole "80x24"
[ "$(column_of name | head -n 1)" = vm00 ] || fail "not sorted by name at first"

# m: most memory first.  The header can show the new order before tmux has the redrawn
# table, so the order is polled too (30 s at most), not read from one capture.
by_memory() {
	column_of mem_gib >"$D/mem"
	[ -s "$D/mem" ] && sort -rn "$D/mem" | cmp -s - "$D/mem" &&
		[ "$(column_of name | head -n 1)" != vm00 ]
}
tm send-keys -t top m
wait_screen 'sort memory' "m sorts by memory"
i=0
until tm capture-pane -p -t top >"$D/screen" 2>/dev/null && by_memory; do
	i=$((i + 1))
	[ $i -lt 300 ] || fail "m: rows not by memory: $(tr '\n' ' ' <"$D/mem")"
	sleep 0.1
done
rows_whole "80x24, sorted by memory"

# ?: the key help.
tm send-keys -t top '?'
wait_screen '^keys:  n name  l locality' "? shows the key help"
wait_screen 'q quit' "? lists q"

# A resize to 200x50 redraws at the new size: the rich table, everything fits.
tm resize-window -t top -x 200 -y 50
wait_screen '  vcpu_nodes$' "the 200-column table after the resize"
wait_screen 'host time [0-9.]+ s$' "the whole header at 200 columns"
# (polled: the capture can fall between the redraw's first and last lines)
i=0
until tm capture-pane -p -t top >"$D/screen" 2>/dev/null && ! grep -q 'more VMs below' "$D/screen"; do
	i=$((i + 1))
	[ $i -lt 300 ] || fail "a marker at 200x50, where all 32 VMs fit"
	sleep 0.1
done
rows_whole "200x50"

# q: exit status 0, the terminal as it was.
tm send-keys -t top q
wait_screen '^top-exit=0$' "q exits 0"
! grep -q '^nodes 4' "$D/screen" || fail "top's screen is still there after q"
modes_restored "q"
[ ! -s "$D/top.log" ] || fail "top printed errors: $(cat "$D/top.log")"
tm kill-session -t top

# Ctrl-C: the same.
rm -f "$D/stty.before" "$D/stty.after"
tm new-session -d -s top -x 80 -y 24 "sh $D/run.sh"
wait_screen '^nodes 4' "header (Ctrl-C run)"
tm send-keys -t top C-c
wait_screen '^top-exit=0$' "Ctrl-C exits 0"
modes_restored "Ctrl-C"
tm kill-session -t top

# vnumad going away: top leaves the screen, says so and exits 1.
rm -f "$D/stty.before" "$D/stty.after"
tm new-session -d -s top -x 80 -y 24 "sh $D/run.sh"
wait_screen '^nodes 4' "header (second run)"
kill "$PID"
wait "$PID" || fail "vnumad did not stop cleanly"
PID=
wait_screen '^top-exit=1$' "top exits 1 when vnumad goes away"
grep -q 'error: lost vnumad' "$D/top.log" || fail "no 'lost vnumad' error: $(cat "$D/top.log")"
modes_restored "vnumad gone"
echo "ok: top at 80x24 and 200x50, keys, resize, q, Ctrl-C, vnumad gone"
