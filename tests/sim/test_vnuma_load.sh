#!/bin/sh
# test_vnuma_load.sh - vnuma-load looks like a QEMU guest and does its work.
#
# While it runs, a /proc scan finds it as vnumad's discovery would: comm "qemu-system-*",
# "-name guest=NAME" on the command line, one "CPU n/KVM" thread per vCPU.  Its report lines
# parse and every vCPU makes accesses; --node 0 places the RAM on node 0; every workload runs;
# SIGTERM ends it with status 0 and a summary; bad options exit 2 with a message; every option
# of --help is in the man page.  Its command line carries QEMU's -m with the size of its RAM;
# with --workload cells also the -object and -numa options for the cells, each cell is its own
# RAM mapping, and vnumad --host linux finds the VM with its cells policy.  Waits are bounded polls on the tool's own output,
# never timing.
set -u

: "${VNUMAD_BINDIR:?set VNUMAD_BINDIR to the build directory}"
: "${VNUMAD_SRCDIR:?set VNUMAD_SRCDIR to the source directory}"
LOAD=$VNUMAD_BINDIR/guest-tools/vnuma-load
MAN=$VNUMAD_SRCDIR/docs/vnuma-load.1
[ -x "$LOAD" ] || { echo "FAIL: no $LOAD" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vnuma-load-test.XXXXXX") || exit 1
PID=
DPID=
cleanup() {
	rc=$?
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	[ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
	if [ $rc -ne 0 ]; then
		for f in "$tmp"/*.out "$tmp"/*.err; do
			[ -s "$f" ] && { echo "--- $f"; head -40 "$f"; }
		done
	fi
	rm -rf "$tmp"
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# wait_for FILE PATTERN [N]: until N (default 1) lines of FILE match PATTERN (at most ~30 s).
wait_for() {
	i=0
	until n=$(grep -c "$2" "$1" 2>/dev/null); [ "${n:-0}" -ge "${3:-1}" ]; do
		i=$((i + 1))
		[ $i -le 300 ] || fail "no ${3:-1} lines matching '$2' in $1"
		kill -0 "$PID" 2>/dev/null || fail "vnuma-load exited early, waiting for '$2'"
		sleep 0.1
	done
}

# ---- 1. discoverable as QEMU while it runs; SIGTERM ends it -------------------------------

NAME=vl-test-$$
"$LOAD" --name "$NAME" --vcpus 2 --memory 64M --node 0 --report 0.5 \
	>"$tmp/run.out" 2>"$tmp/run.err" &
PID=$!
wait_for "$tmp/run.out" '^t=.* vcpu=total '

# Scan /proc as the daemon does: comm or argv[0] basename qemu-system-*, name from -name.
found=
for d in /proc/[0-9]*; do
	read -r comm 2>/dev/null <"$d/comm" || continue
	case "$comm" in qemu-system-*|qemu-kvm) ;; *) continue ;; esac
	tr '\0' '\n' <"$d/cmdline" 2>/dev/null >"$tmp/cmdline" || continue
	grep -qx -- "-name" "$tmp/cmdline" || continue
	grep -q "^guest=$NAME\(,\|\$\)" "$tmp/cmdline" && found=${d#/proc/}
done
[ "$found" = "$PID" ] || fail "a /proc scan found pid '$found' for guest=$NAME, want $PID"
tr '\0' '\n' <"/proc/$PID/cmdline" >"$tmp/cmdline"
[ "$(head -1 "$tmp/cmdline")" = qemu-system-x86_64 ] || fail "argv[0] is '$(head -1 "$tmp/cmdline")'"
# After -name: QEMU's -m with the size of the RAM mapped, as libvirt writes it.
[ "$(sed -n '4,5p' "$tmp/cmdline" | tr '\n' ' ')" = "-m size=65536k " ] ||
	fail "no -m size=65536k after -name: $(tr '\n' ' ' <"$tmp/cmdline")"
cat /proc/$PID/task/*/comm >"$tmp/threads"
grep -qx "CPU 0/KVM" "$tmp/threads" || fail "no thread 'CPU 0/KVM': $(tr '\n' ';' <"$tmp/threads")"
grep -qx "CPU 1/KVM" "$tmp/threads" || fail "no thread 'CPU 1/KVM'"
[ "$(grep -c '^CPU [0-9]*/KVM$' "$tmp/threads")" -eq 2 ] || fail "not exactly 2 vCPU threads"

# About 2 s of reports, then SIGTERM: status 0 and the summary.
wait_for "$tmp/run.out" '^t=.* vcpu=total ' 4
kill -TERM "$PID"
wait "$PID"
rc=$?
PID=
[ $rc -eq 0 ] || fail "SIGTERM: exit status $rc, want 0"
[ -s "$tmp/run.err" ] && fail "stderr not empty: $(head -3 "$tmp/run.err")"
grep -q '^summary vcpu=total accesses=[1-9]' "$tmp/run.out" || fail "SIGTERM: no final summary"

# ---- 2. the output parses --------------------------------------------------------------------

grep -q "^# vnuma-load .* name=$NAME .*vcpus=2 memory_mib=64 .*node=0 placement=affinity" \
	"$tmp/run.out" || fail "no header line"
# Every other line is "t=... vcpu=... acc_s=N[ cpu=N node=N]" or a summary.
bad=$(grep -v '^#' "$tmp/run.out" |
	grep -Ev '^t=[0-9]+\.[0-9] vcpu=([0-9]+ acc_s=[0-9]+ cpu=-?[0-9]+ node=-?[0-9]+|total acc_s=[0-9]+)$' |
	grep -Ev '^summary vcpu=[0-9]+ accesses=[0-9]+ acc_s=[0-9]+ cpu=-?[0-9]+ node=-?[0-9]+$' |
	grep -Ev '^summary vcpu=total accesses=[0-9]+ acc_s=[0-9]+ elapsed_s=[0-9.]+ touch_s=[0-9.]+ touch_nodes=[-0-9:.,]+ mem_nodes=[-0-9:.,]+$')
[ -z "$bad" ] || fail "lines that do not parse: $bad"
for v in 0 1; do
	busy=$(awk -v v="vcpu=$v" '$1 ~ /^t=/ && $2 == v { split($3, a, "="); if (a[2] > 0) n++ }
		END { print n + 0 }' "$tmp/run.out")
	[ "$busy" -gt 0 ] || fail "no report line with accesses for vCPU $v"
	grep -q "^summary vcpu=$v accesses=[1-9]" "$tmp/run.out" || fail "no accesses for vCPU $v"
done
grep -q '^t=.* vcpu=2 ' "$tmp/run.out" && fail "a report line for a third vCPU"
# --node 0: the RAM is on node 0 (the only node here), after the first touch and at the end.
grep -q '^summary vcpu=total .* touch_nodes=0:100.0 mem_nodes=0:' "$tmp/run.out" ||
	fail "RAM not reported on node 0: $(grep '^summary vcpu=total' "$tmp/run.out")"

# ---- 3. --duration ends it by itself -----------------------------------------------------------

"$LOAD" --name "$NAME-b" --memory 16 --report 0.2 --duration 1 >"$tmp/dur.out" 2>"$tmp/dur.err" ||
	fail "--duration 1: exit status $?"
grep -q '^t=.* vcpu=total ' "$tmp/dur.out" || fail "--duration 1: no report line"
grep -q '^summary vcpu=total accesses=[1-9]' "$tmp/dur.out" || fail "--duration 1: no summary"

# ---- 4. every workload runs --------------------------------------------------------------------

for w in private shared "cells --cells 2" "phased --phase 0.1" "adverse --phase 0.1" idle; do
	# shellcheck disable=SC2086
	"$LOAD" --name w --vcpus 2 --memory 8 --duration 0.3 --pin --workload $w \
		>"$tmp/w.out" 2>"$tmp/w.err" || fail "--workload $w exited $?"
	grep -q '^summary vcpu=total accesses=[1-9]' "$tmp/w.out" || fail "--workload $w: no accesses"
done

# ---- 5. bad options: status 2, a message, no output --------------------------------------------

check_usage_error() {
	"$LOAD" "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"
	rc=$?
	[ $rc -eq 2 ] || fail "'$*' exited $rc, want 2"
	grep -q '^vnuma-load: ' "$tmp/bad.err" || fail "'$*': no message on stderr"
	[ -s "$tmp/bad.out" ] && fail "'$*': wrote to stdout"
	return 0
}
check_usage_error --vcpus 2
check_usage_error --name x --vcpus 0
check_usage_error --name x --memory 12Q
check_usage_error --name x --memory 0.5
check_usage_error --name x --workload busy
check_usage_error --name x --workload cells
check_usage_error --name x --bogus
check_usage_error --name x --duration
check_usage_error --name x --mbind
check_usage_error --name x --node 1023
grep -q 'no such node' "$tmp/bad.err" || fail "--node 1023: $(cat "$tmp/bad.err")"
check_usage_error --name x --vcpus 300 --workload cells --cells 300 --memory 1

# ---- 6. the man page documents every option ------------------------------------------------------

"$LOAD" --help >"$tmp/help" || fail "--help failed"
"$LOAD" --version | grep -q '^vnuma-load [0-9]' || fail "--version"
grep -o -- '--[a-z-]*' "$tmp/help" | sort -u >"$tmp/opts"
[ "$(wc -l <"$tmp/opts")" -ge 14 ] || fail "too few options in --help"
while read -r opt; do
	roff=$(printf '%s' "$opt" | sed 's/-/\\-/g') # --no-x is written \-\-no\-x in roff
	grep -qF -- "$roff" "$MAN" || fail "option $opt is not in docs/vnuma-load.1"
done <"$tmp/opts"

# ---- 7. --workload cells: the cells as QEMU shows them, and vnumad's discovery --------------

# 4 vCPUs in 2 cells over 64 MiB: on the command line, -m and per cell a memory backend and a
# -numa node (as libvirt passes them); in the address space, one 32 MiB mapping per cell,
# mapped in cell order wherever the kernel puts it (as QEMU maps its memory backends), each
# followed by an inaccessible guard page as QEMU leaves after every RAM block.
NAMEC=$NAME-cells
"$LOAD" --name "$NAMEC" --vcpus 4 --memory 64M --workload cells --cells 2 --report 0.5 \
	>"$tmp/cells.out" 2>"$tmp/cells.err" &
PID=$!
wait_for "$tmp/cells.out" '^t=.* vcpu=total '
tr '\0' '\n' <"/proc/$PID/cmdline" | sed -n '4,13p' >"$tmp/cells.cmdline"
printf '%s\n' -m size=65536k \
	-object memory-backend-ram,id=cell0,size=33554432 -numa node,nodeid=0,cpus=0-1,memdev=cell0 \
	-object memory-backend-ram,id=cell1,size=33554432 -numa node,nodeid=1,cpus=2-3,memdev=cell1 \
	>"$tmp/cells.want"
cmp -s "$tmp/cells.cmdline" "$tmp/cells.want" ||
	fail "cells: QEMU options after -name: $(tr '\n' ' ' <"$tmp/cells.cmdline")"
# The RAM: rw-p anonymous mappings of exactly 32 MiB, each followed by a ---p guard page.
n=0 guard="" page=$(getconf PAGESIZE)
while read -r range perms _ _ inode path; do
	lo=$((0x${range%-*})) hi=$((0x${range#*-}))
	if [ -n "$guard" ]; then
		[ "$lo" -eq "$guard" ] && [ "$perms" = ---p ] && [ $((hi - lo)) -eq "$page" ] ||
			fail "cells: no guard page after the RAM mapping ending at $guard"
		guard=
	fi
	[ "$perms" = rw-p ] && [ "$inode" = 0 ] && [ -z "$path" ] || continue
	[ $((hi - lo)) -eq 33554432 ] || continue
	n=$((n + 1)) guard=$hi
done <"/proc/$PID/maps"
[ -z "$guard" ] || fail "cells: no guard page after the RAM mapping ending at $guard"
[ "$n" -eq 2 ] || fail "cells: $n anonymous 32 MiB mappings, want 2: $(cat "/proc/$PID/maps")"

# vnumad --host linux finds the VM (name, vCPUs, RAM from -m) and gives it its policy file's
# placement='cells'.  Every VM is advisory (default_mode), so it acts on no process here.
# vnumactl vminfo does not show guest cells; tests/unit/test_linux_qemu_numa.c checks that
# discovery reads them from a running vnuma-load.
VNUMAD=$VNUMAD_BINDIR/agent/vnumad
CTL=$VNUMAD_BINDIR/agent/vnumactl
mkdir "$tmp/policy.d"
printf '%s\n' "<vnuma:policy xmlns:vnuma='http://vnumad.org/schemas/policy/1.0' \
mode='advisory' placement='cells'/>" >"$tmp/policy.d/$NAMEC.xml"
printf '%s\n' "sample_period = 0.5s" "rebalance_period = 1s" "state_file = $tmp/state.json" \
	"policy_dir = $tmp/policy.d" "default_mode = advisory" >"$tmp/vnumad.conf"
"$VNUMAD" --host linux --foreground --socket "$tmp/sock" -f "$tmp/vnumad.conf" \
	>"$tmp/vnumad.out" 2>"$tmp/vnumad.err" &
DPID=$!
i=0
until "$CTL" -c "$tmp/sock" --json vminfo "$NAMEC" >"$tmp/vminfo.out" 2>"$tmp/vminfo.err"; do
	i=$((i + 1))
	if [ $i -gt 300 ] || ! kill -0 "$DPID" 2>/dev/null; then
		kill "$DPID" 2>/dev/null
		fail "vnumad --host linux: no vminfo for $NAMEC: $(cat "$tmp/vminfo.err" "$tmp/vnumad.err")"
	fi
	sleep 0.1
done
kill -TERM "$DPID"
wait "$DPID"
DPID=
for want in '"vcpus":4,' '"memory_mib":64,' '"placement":"cells",' '"policy_ok":true,'; do
	tr -d ' \n' <"$tmp/vminfo.out" | grep -qF "$want" ||
		fail "vminfo $NAMEC: no $want in $(tr -d ' \n' <"$tmp/vminfo.out" | head -c 400)"
done

# The summary has a line per cell: its vCPUs, its size and where its RAM lies.
kill -TERM "$PID"
wait "$PID"
rc=$?
PID=
[ $rc -eq 0 ] || fail "cells: exit status $rc"
grep -q '^summary cell=0 vcpus=0-1 memory_mib=32 mem_nodes=0:' "$tmp/cells.out" ||
	fail "cells: no summary line for cell 0"
grep -q '^summary cell=1 vcpus=2-3 memory_mib=32 mem_nodes=0:' "$tmp/cells.out" ||
	fail "cells: no summary line for cell 1"
[ "$(grep -c '^summary cell=' "$tmp/cells.out")" -eq 2 ] || fail "cells: not 2 cell lines"

echo "test_vnuma_load: ok"
