#!/bin/sh
# System smoke test: boot the emulated NUMA host (tests/system/numa-host.sh) with 2 nodes and
# with 4, and check inside what the guest kernel makes of it:
#   2 nodes: node0 and node1 in sysfs, distances 10 21 / 21 10, `numactl -H` agrees; a process
#            bound to node 1's memory and node 0's CPUs (tests/touch_mem) has its memory on
#            node 1, and with kernel.numa_balancing=1 its thread gets numa_faults lines with
#            faults counted in /proc/PID/task/TID/sched (the kernel's NUMA hinting faults work);
#            vnumad's page sampler, on 64 MiB laid out 5/8 on node 0 and 3/8 on node 1, gives
#            figures within their error bound of numa_maps (tests/unit/test_linux_resid_live.c);
#   4 nodes: four nodes, 21 to the neighbours and 31 to the far node on the ring;
#   lockup:  the harness boots a guest again, once, when its kernel locked up: a 1-node guest
#            that writes a soft lockup report to the console and resets on its first attempt,
#            and passes on the second, passes, with the first attempt's console in attempt-1/;
#            the second boot and the report are noted in VNUMAD_SYSTEM_RETRY_LOG; with
#            VNUMAD_SYSTEM_RETRY=0 the same guest fails (status 125) after one attempt;
#   stall:   a guest whose heartbeat stops (its first attempt stops /init's heartbeat loop) is
#            stopped after VNUMAD_SYSTEM_STALL_S (20 here) and booted again, once.
# Skips (77) when QEMU or a kernel is missing.  Prints the time each boot took.  Logs (console,
# command output) are kept on failure and their directory named.
#
# `test_numa_smoke.sh --guest N` is the part that runs inside the guest.
set -u

# How long the guest waits for the first numa_faults line, seconds of guest time.  The kernel
# starts scanning a task scan_delay_ms (1 s by default) after it starts and samples more of its
# memory each scan_period (1 s minimum); a few seconds are enough, this is only a ceiling.
FAULTS_WAIT_S=60
# Memory the touching process keeps writing to, MiB.
TOUCH_MIB=64

fail() {
	echo "FAIL: $*"
	exit 1
}
# "ok: WHAT", after the guest's uptime in seconds.
ok() { echo "[$(cut -d' ' -f1 /proc/uptime)] ok: $*"; }

# ---- Inside the guest -------------------------------------------------------------------

# Node directories in sysfs, e.g. "node0 node1".
guest_nodes() {
	(cd /sys/devices/system/node && echo node[0-9]*)
}

guest_topology() {
	n=$1
	want=$(i=0 && while [ $i -lt "$n" ]; do printf 'node%d ' $i && i=$((i + 1)); done)
	[ "$(guest_nodes)" = "${want% }" ] || fail "sysfs nodes are '$(guest_nodes)', not '${want% }'"
	ok "sysfs has $(guest_nodes)"
	numactl -H | grep -q "^available: $n nodes (0-$((n - 1)))" ||
		fail "numactl -H does not show $n nodes: $(numactl -H | head -n 1)"
	ok "numactl -H: $(numactl -H | head -n 1)"
}

guest_distances() {
	i=0
	for want in "$@"; do
		got=$(cat /sys/devices/system/node/node$i/distance)
		[ "$got" = "$want" ] || fail "node$i distance is '$got', not '$want'"
		ok "node$i distance $got"
		i=$((i + 1))
	done
}

# touch_mem's block in numa_maps (the one anonymous mapping of at least TOUCH_MIB MiB; the
# kernel may have merged it with a neighbour): bound to node 1 and all of it there.
guest_check_placement() {
	line=$(awk -v pages=$((TOUCH_MIB * 256)) '{
		for (i = 2; i <= NF; i++)
			if ($i ~ /^anon=/ && substr($i, 6) + 0 >= pages)
				print
	}' "/proc/$1/numa_maps")
	[ -n "$line" ] || fail "no $TOUCH_MIB MiB anonymous mapping in /proc/$1/numa_maps"
	anon=$(echo "$line" | sed -n 's/.* anon=\([0-9]*\) .*/\1/p')
	case $line in
	*" bind"*":1 "*" N1=$anon "*) ;;
	*) fail "touch_mem's memory is not all on node 1: $line" ;;
	esac
	ok "touch_mem's $TOUCH_MIB MiB are bound to and on node 1: $line"
}

# Guest uptime in whole tenths of a second.
guest_uptime_ds() {
	awk '{ printf "%d", $1 * 10 }' /proc/uptime
}

# Wait until touch_mem's thread has counted NUMA faults on some node (its sched file lists
# every node from the start, with zeros until the first placement); print them and how long
# that took.
guest_wait_faults() {
	sched=/proc/$1/task/$1/sched
	t0=$(guest_uptime_ds)
	until grep '^numa_faults node=' "$sched" | grep -q '_private=[1-9]\|_shared=[1-9]'; do
		kill -0 "$1" 2>/dev/null || fail "touch_mem ended before any NUMA fault was counted"
		[ $(($(guest_uptime_ds) - t0)) -lt $((FAULTS_WAIT_S * 10)) ] ||
			fail "no NUMA faults counted after $FAULTS_WAIT_S s: $(grep numa "$sched")"
		sleep 0.2
	done
	t1=$(guest_uptime_ds)
	ok "NUMA faults counted in $sched after $(((t1 - t0) / 10)).$(((t1 - t0) % 10)) s:"
	grep 'numa' "$sched" | sed 's/^/    /'
	grep '^numa_hint_faults' /proc/vmstat | sed 's/^/    vmstat /'
}

guest_balancing() {
	tm=${VNUMAD_BINDIR:?}/tests/touch_mem
	[ -x "$tm" ] || fail "$tm is not built"
	echo 1 >/proc/sys/kernel/numa_balancing || fail "cannot enable kernel.numa_balancing"
	ok "kernel.numa_balancing=$(cat /proc/sys/kernel/numa_balancing)"
	dbg=/sys/kernel/debug/sched/numa_balancing
	[ -r $dbg/scan_delay_ms ] || fail "$dbg is missing (debugfs not mounted?)"
	ok "debugfs: scan_delay_ms=$(cat $dbg/scan_delay_ms) scan_period_min_ms=$(cat \
		$dbg/scan_period_min_ms)"
	out=$TMPDIR/touch_mem.out
	# --balancing (MPOL_F_NUMA_BALANCING): without it the kernel does not scan memory under
	# an explicit policy such as --membind, and no hinting fault is ever taken.
	numactl --balancing --membind=1 --cpunodebind=0 "$tm" -m $TOUCH_MIB \
		-s $((FAULTS_WAIT_S + 30)) >"$out" &
	pid=$!
	until grep -q ready "$out"; do
		kill -0 $pid 2>/dev/null || fail "touch_mem died: $(cat "$out")"
		sleep 0.1
	done
	guest_check_placement $pid
	guest_wait_faults $pid
	kill $pid
	wait $pid 2>/dev/null
	return 0
}

# On the harness's second attempt (it set the first one's files aside): pass at once.
guest_second_attempt() {
	[ -d "${NUMA_HOST_OUT:?}/attempt-1" ] || return 0
	echo "attempt 2: passes"
	exit 0
}

# vnumad's page sampler (host/linux/residency.c) on a known two-node layout, its figure and
# error bound against numa_maps (tests/unit/test_linux_resid_live.c), with kernel.numa_balancing
# as guest_balancing left it.
guest_resid_sampler() {
	t=${VNUMAD_BINDIR:?}/tests/test_linux_resid_live
	[ -x "$t" ] || fail "$t is not built"
	out=$("$t" 2>&1) || fail "the page sampler against numa_maps: $out"
	line=$(echo "$out" | grep '^resid-live: nodes=2 ') ||
		fail "the page sampler was not checked on two nodes: $out"
	ok "the page sampler's bound holds against numa_maps: ${line#resid-live: }"
}

guest_main() {
	case $1 in
	2)
		guest_topology 2
		guest_distances "10 21" "21 10"
		guest_balancing
		guest_resid_sampler
		;;
	4)
		guest_topology 4
		guest_distances "10 21 31 21" "21 10 21 31" "31 21 10 21" "21 31 21 10"
		numactl -H | grep -q ' 31 ' || fail "numactl -H shows no distance 31"
		ok "numactl -H shows the far distance 31"
		;;
	lockup)
		guest_second_attempt
		echo "attempt 1: a fake soft lockup, then a reset"
		echo "<0>watchdog: BUG: soft lockup - CPU#0 stuck for 0s! [test_numa_smoke: a fake]" \
			>/dev/kmsg
		sync
		echo b >/proc/sysrq-trigger
		sleep 60
		fail "the guest did not reset"
		;;
	stall)
		guest_second_attempt
		# /init's heartbeat loop: a child of /init with /init's command line.
		init=$(tr '\0' ' ' </proc/1/cmdline)
		for p in /proc/[0-9]*; do
			[ "${p#/proc/}" != 1 ] && [ "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" = "$init" ] &&
				[ "$(awk '{ print $4 }' "$p/stat" 2>/dev/null)" = 1 ] &&
				kill -STOP "${p#/proc/}" && echo "attempt 1: stopped the heartbeat (${p#/proc/})"
		done
		sleep 600
		fail "the harness did not stop the guest"
		;;
	*) fail "--guest wants 2, 4, lockup or stall" ;;
	esac
	echo "guest checks passed"
}

if [ "${1:-}" = --guest ]; then
	guest_main "${2:-}"
	exit
fi

# ---- On the host ------------------------------------------------------------------------

SYS=${VNUMAD_SRCDIR:?}/tests/system
. "$SYS/hostlib.sh"
sys_host_init " (console.log: the guest's console; cmd.log: the checks)"

sh "$HARNESS" check || exit

# boot N: run the guest checks on an N-node host; print the wall time.
boot() {
	t0=$(date +%s.%N)
	sh "$HARNESS" run --nodes "$1" --out "$D/nodes$1" -- sh "$SYS/test_numa_smoke.sh" --guest "$1"
	rc=$?
	t1=$(date +%s.%N)
	echo "time: $1-node boot and checks took $(awk -v a="$t0" -v b="$t1" \
		'BEGIN { printf "%.1f", b - a }') s"
	[ $rc -eq 0 ] || fail "$1-node guest checks failed with status $rc (see $D/nodes$1/)"
}

# lockup_retry: the harness's second attempt after a (fake) lockup of the guest kernel.
lockup_retry() {
	# Each run notes its second boot in a log of its own, not make check's.
	o=$D/lockup
	VNUMAD_SYSTEM_RETRY_LOG=$o.retries sh "$HARNESS" run --nodes 1 --out "$o" -- \
		sh "$SYS/test_numa_smoke.sh" --guest lockup >"$o.out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "the guest that locked up once: status $rc, not 0 (see $o.out)"
	grep -q 'booting again, attempt 2 of 2' "$o.out" ||
		fail "the harness did not say it booted again (see $o.out)"
	grep -q 'booting again, attempt 2 of 2' "$o.retries" &&
		grep -q 'lockup: .*soft lockup.*a fake' "$o.retries" ||
		fail "the second boot and the lockup report are not in VNUMAD_SYSTEM_RETRY_LOG"
	grep -q 'soft lockup.*a fake' "$o/attempt-1/console.log" ||
		fail "the first attempt's console is not in $o/attempt-1/"
	grep -q 'attempt 2: passes' "$o/cmd.log" || fail "cmd.log is not the second attempt's"
	echo "ok: a guest whose kernel locked up is booted again once, and says so"
	o=$D/lockup-noretry
	VNUMAD_SYSTEM_RETRY=0 VNUMAD_SYSTEM_RETRY_LOG=$o.retries sh "$HARNESS" run --nodes 1 \
		--out "$o" -- sh "$SYS/test_numa_smoke.sh" --guest lockup >"$o.out" 2>&1
	rc=$?
	[ $rc -eq 125 ] || fail "with VNUMAD_SYSTEM_RETRY=0: status $rc, not 125 (see $o.out)"
	grep -q 'not booting again' "$o.out" ||
		fail "with VNUMAD_SYSTEM_RETRY=0 the harness did not say why it stopped (see $o.out)"
	[ ! -e "$o.retries" ] || fail "with VNUMAD_SYSTEM_RETRY=0 a second boot was logged"
	echo "ok: with VNUMAD_SYSTEM_RETRY=0 it is not"
	o=$D/stall
	VNUMAD_SYSTEM_STALL_S=20 VNUMAD_SYSTEM_RETRY_LOG=$o.retries sh "$HARNESS" run --nodes 1 \
		--out "$o" -- sh "$SYS/test_numa_smoke.sh" --guest stall >"$o.out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "the guest that stopped once: status $rc, not 0 (see $o.out)"
	grep -q 'no heartbeat for 20 s' "$o.out" &&
		grep -q 'booting again, attempt 2 of 2' "$o.out" ||
		fail "the harness did not say it stopped the guest and booted again (see $o.out)"
	grep -q 'attempt 1: stopped the heartbeat' "$o/attempt-1/cmd.log" ||
		fail "the first attempt did not stop the heartbeat (see $o/attempt-1/cmd.log)"
	echo "ok: a guest that stops (no heartbeat) is stopped and booted again once"
}

boot 2
boot 4
lockup_retry
echo "numa smoke test passed"
