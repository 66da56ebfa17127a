#!/bin/sh
# bench_observe.sh - what observing the host costs: vnumad --host linux beside numad, on
# stand-in VMs (vnuma-load) of several shapes, on this machine.
#
#   bench_observe.sh [--json] [--keep]
#   bench_observe.sh [--json] --report DIR    (the report again, from a run kept with --keep)
#
# Environment:
#   BENCH_OBSERVE_SECONDS   the measuring window per configuration (default 60)
#   BENCH_OBSERVE_CONFIGS   which configurations, comma-separated names (default: all, below)
#   BENCH_OBSERVE_JSON=1    the same as --json
#   BENCH_OBSERVE_SYSCALL_SECONDS  the window counting vnumad's system calls (default 10)
#   BENCH_OBSERVE_SETTLE_SECONDS  how long vnumad runs before the windows open (default 45: VMs
#                           it has just found are read every round for 30 s, then less often
#                           once settled; docs/linux-host.md, "Reading settled VMs less often")
#   BENCH_OBSERVE_CPU_CAP   vnumad's observe_cpu_cap (default: vnumad's own default)
#   BENCH_OBSERVE_PROCS     idle filler processes beside the VMs, standing for the host's other
#                           processes (default 100)
#   BENCH_OBSERVE_NUMAD_ARGS  numad's options besides -H 0 -l 6 (default "-i 15", Debian's)
#   BENCH_OBSERVE_PIDNS     host (default) or private: where vnumad, numad and the stand-ins
#                           run (below)
#   VNUMAD_BINDIR           the build directory (default build/ beside tests/)
#
# Per configuration it starts the stand-ins (each first-touches its RAM, then is stopped with
# SIGSTOP: stopped, it costs no CPU, and its page tables, /proc files and threads stay as they
# were), then vnumad (sample_period 1 s, private socket, state file and config) and numad side
# by side, and measures over the same window:
#   - each daemon's CPU time (the run time in /proc/PID/task/*/schedstat, ns; utime+stime of
#     /proc/PID/stat, 10-ms ticks, where schedstat is missing) over wall time: % of a core;
#   - vnumad's CPU ms per round (rounds from `vnumactl --json status`), numad's per scan
#     (its "Processes:" log lines at -l 6);
#   - vnumad's system calls and openat calls per round, over a second window after the first
#     (perf's syscall tracepoints, else strace -c -f, else not at all; the output says which);
#   - the mmap-lock proxy: how long one read of a VM's /proc/PID/numa_maps takes (the kernel
#     holds the VM's mmap read lock while it walks the page tables for it), 5 reads, max.
# Then it fits vnumad's CPU ms per round by least squares to a constant plus terms per VM, per
# vCPU, per GiB with THP, per GiB with 4 KiB pages and per other process, and extrapolates to
# 64 VMs x 16 GiB (512 vCPUs) at a 1-s round.
#
# Everything runs in a private mount and IPC namespace (unshare(1)): numad's pid file, log and
# message queue are private.  With BENCH_OBSERVE_PIDNS=host (the default) vnumad and numad run
# in the initial PID namespace, as a systemd service does, and see every process of the host
# besides the stand-ins and the fillers (counted as "other processes"); there vnumad learns of
# new and ended processes from the kernel's process events instead of listing /proc each round
# (docs/linux-host.md), which the kernel gives only in the initial namespaces; nothing else may
# run a QEMU or a vnuma-load meanwhile (it would count as a VM: the configuration then fails).
# With BENCH_OBSERVE_PIDNS=private a private PID namespace is added: they see only the
# stand-ins and the fillers, vnumad lists /proc every round, and when the namespace's first
# process ends the kernel kills whatever is left in it.  numad scans processes only on
# a host with two or more nodes, so it runs in a mount namespace of its own over a copy of
# /sys/devices/system/node that splits this machine's CPUs into two nodes; vnumad sees the
# real one.  numad is given -H 0 so it leaves khugepaged's scan period alone.
#
# A benchmark: it exits 0 whatever the numbers, and also, saying why, when it cannot run here
# (not root, no unshare); a missing numad, perf or strace leaves that column out with a note.
# 1 when a daemon or a stand-in failed.
set -u

SECONDS_DEFAULT=60
SYSCALL_SECONDS_DEFAULT=10
PROCS_DEFAULT=100
NUMAD_ARGS_DEFAULT="-i 15"
READS=5             # numa_maps reads per configuration, the max reported
START_TIMEOUT_S=600 # for all stand-ins of a configuration to have touched their RAM
WARMUP_ROUNDS=3     # vnumad rounds before the window opens (the first ones discover)
SETTLE_SECONDS=${BENCH_OBSERVE_SETTLE_SECONDS:-45}
MEM_SPARE_MIB=2048  # MemAvailable that must remain after a configuration's guest RAM
# The extrapolation: 64 VMs x 16 GiB, 8 vCPUs each, beside 1000 other processes.
EXT_VMS=64
EXT_GIB=1024
EXT_VCPUS=512
EXT_PROCS=1000

# The configurations: name, VMs, MiB per VM, vCPUs per VM, pages (thp: MADV_HUGEPAGE, 4k:
# left to the system's THP setting, which must then be madvise or never), filler processes
# on top of BENCH_OBSERVE_PROCS.  At most 12 GiB of guest RAM each (the machine has 24).
CONFIGS_ALL="none 16x512M-thp 16x512M-4k 64x128M-thp 16x128M-8v-thp 4x3G-4k 1x12G-4k procs+1000"
config_row() {
	case $1 in
	none) echo "0 0 0 thp 0" ;;
	16x512M-thp) echo "16 512 2 thp 0" ;;
	16x512M-4k) echo "16 512 2 4k 0" ;;
	64x128M-thp) echo "64 128 1 thp 0" ;;
	16x128M-8v-thp) echo "16 128 8 thp 0" ;;
	4x3G-4k) echo "4 3072 2 4k 0" ;;
	1x12G-4k) echo "1 12288 4 4k 0" ;;
	procs+1000) echo "0 0 0 thp 1000" ;;
	*) return 1 ;;
	esac
}

HERE=$(cd "$(dirname "$0")" && pwd -P)
SRCDIR=${VNUMAD_SRCDIR:-$(cd "$HERE/../.." && pwd -P)}
BINDIR=${VNUMAD_BINDIR:-$SRCDIR/build}
BINDIR=$(cd "$BINDIR" 2>/dev/null && pwd -P) || BINDIR=${VNUMAD_BINDIR:-$SRCDIR/build}
VNUMAD=$BINDIR/agent/vnumad
VNUMACTL=$BINDIR/agent/vnumactl
LOAD=$BINDIR/guest-tools/vnuma-load

say() { echo "bench_observe: $*" >&2; }

# ---- Inside the namespace ---------------------------------------------------------------

# cpu_ns PID: the process's CPU time so far, in ns (all its threads).
cpu_ns() {
	if [ "$CPU_SOURCE" = schedstat ]; then
		cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }'
	else
		sed 's/.*) //' /proc/"$1"/stat 2>/dev/null |
			awk -v hz="$CLK_TCK" '{ printf "%.0f", ($12 + $13) * 1e9 / hz }'
	fi
}

# stat_ns PID: utime + stime of /proc/PID/stat, in ns (the brief's measure, 10-ms ticks).
stat_ns() {
	sed 's/.*) //' /proc/"$1"/stat 2>/dev/null |
		awk -v hz="$CLK_TCK" '{ printf "%.0f", ($12 + $13) * 1e9 / hz }'
}

now_ns() { date +%s%N; }

# cpu_ticks: "BUSY TOTAL" jiffies of all CPUs from /proc/stat (busy: not idle, not iowait).
cpu_ticks() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t; exit }' /proc/stat; }

rounds() { "$VNUMACTL" -c "$T/sock" --json status 2>/dev/null | jq -r '.rounds // empty'; }
nr_vms() { "$VNUMACTL" -c "$T/sock" --json status 2>/dev/null | jq -r '.nr_vms // empty'; }
# walks: "WALKS OVER_5MS MAX_MS SKIPPED" of vnumad's numa_maps walks since it started (-1: unknown)
walks() {
	"$VNUMACTL" -c "$T/sock" --json status 2>/dev/null | jq -r '"\(.observe_walks_total // -1) \(.observe_walks_over_5ms_total // -1) \(.observe_walk_max_ms // -1) \(.observe_walks_skipped_total // -1)"'
}

# kill_wait PID...: SIGKILL and reap (a stopped process dies of SIGKILL too).
kill_wait() {
	for p in "$@"; do kill -9 "$p" 2>/dev/null; done
	for p in "$@"; do wait "$p" 2>/dev/null; done
}

# A copy of /sys/devices/system/node with this machine's CPUs split into two nodes, for numad.
numad_sys_make() {
	d=$T/numad-sys
	mkdir -p "$d/node0" "$d/node1"
	cpus=$(awk '/^processor/ { n++ } END { print n + 0 }' /proc/cpuinfo)
	half=$((cpus / 2))
	[ $half -ge 1 ] || half=1
	if [ $half -gt 1 ]; then echo "0-$((half - 1))"; else echo 0; fi >"$d/node0/cpulist"
	last=$((cpus - 1))
	[ $last -ge $half ] || last=$half
	if [ $last -gt $half ]; then echo "$half-$last"; else echo $half; fi >"$d/node1/cpulist"
	echo "10 21" >"$d/node0/distance"
	echo "21 10" >"$d/node1/distance"
	# the real first node's memory, halved, for each
	for n in 0 1; do
		awk -v n=$n '{ $2 = n; if ($NF == "kB") $4 = int($4 / 2); print }' \
			/sys/devices/system/node/node0/meminfo >"$d/node$n/meminfo"
	done
}

# numad_start: numad in a mount namespace of its own (2 nodes, private log and pid file);
# sets NPID (empty when it did not start).
numad_start() {
	NPID=
	[ -n "$NUMAD" ] || return 0
	rm -rf "$T/numad-log" "$T/numad-run"
	mkdir -p "$T/numad-log" "$T/numad-run"
	# shellcheck disable=SC2086 # NUMAD_ARGS is a list of options
	unshare --mount --propagation private sh -c '
		mount --bind "$1/numad-sys" /sys/devices/system/node &&
		mount --bind "$1/numad-log" /var/log &&
		mount --bind "$1/numad-run" /run || exit 1
		shift; exec "$@"' sh "$T" "$NUMAD" -H 0 -l 6 $NUMAD_ARGS \
		>"$T/numad.out" 2>&1
	i=0
	while [ ! -s "$T/numad-run/numad.pid" ]; do
		i=$((i + 1))
		[ $i -le 100 ] || { say "numad did not start: $(head -c 300 "$T/numad.out")"; return 0; }
		sleep 0.1
	done
	NPID=$(tr -dc 0-9 <"$T/numad-run/numad.pid")
}

numad_scans() { awk '/Processes:/ { n++ } END { print n + 0 }' "$T/numad-log/numad.log" 2>/dev/null || echo 0; }

# alive PID: the process exists and is not a zombie (numad, once daemonized, is a child of the
# namespace's first process, this shell, which reaps it only now and then).
alive() {
	st=$(sed 's/.*) //' /proc/"$1"/stat 2>/dev/null | cut -d' ' -f1)
	[ -n "$st" ] && [ "$st" != Z ]
}

# syscalls_count PID SECONDS: prints "SYSCALLS OPENATS" over SECONDS, or nothing.
syscalls_count() {
	case $SYSCALL_SOURCE in
	perf)
		perf stat -x, -e raw_syscalls:sys_enter,syscalls:sys_enter_openat -p "$1" \
			-o "$T/perf.out" -- sleep "$2" >/dev/null 2>&1
		awk -F, '$3 == "raw_syscalls:sys_enter" { s = $1 } $3 == "syscalls:sys_enter_openat" { o = $1 }
			END { if (s != "") print s, o + 0 }' "$T/perf.out"
		;;
	strace)
		strace -c -f -p "$1" -o "$T/strace.out" 2>/dev/null &
		spid=$!
		sleep "$2"
		kill -INT $spid 2>/dev/null
		wait $spid 2>/dev/null
		# columns: % time, seconds, usecs/call, calls, [errors], syscall
		awk '$NF == "total" { s = $4 } $NF == "openat" { o = $4 }
			END { if (s != "") print s, o + 0 }' "$T/strace.out"
		;;
	esac
}

# numa_maps_ms PID: the longest of READS whole reads of /proc/PID/numa_maps, in ms of wall
# time, and the most CPU time one took (python3 only; else -1).
numa_maps_ms() {
	if [ -n "$PYTHON" ]; then
		"$PYTHON" -c '
import sys, time
worst = cpu = 0.0
for _ in range(int(sys.argv[2])):
    t, c = time.perf_counter(), time.process_time()
    with open("/proc/%s/numa_maps" % sys.argv[1], "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass
    worst = max(worst, time.perf_counter() - t)
    cpu = max(cpu, time.process_time() - c)
print("%.2f %.2f" % (worst * 1e3, cpu * 1e3))' "$1" "$READS" 2>/dev/null
	else
		# without python3: cat, less the cost of running cat on an empty file
		worst=0
		i=0
		while [ $i -lt $READS ]; do
			t0=$(now_ns)
			cat /dev/null >/dev/null
			t1=$(now_ns)
			cat /proc/"$1"/numa_maps >/dev/null 2>&1
			t2=$(now_ns)
			worst=$(awk -v w="$worst" -v a=$((t1 - t0)) -v b=$((t2 - t1)) \
				'BEGIN { d = (b - a) / 1e6; if (d < 0) d = 0; print (d > w ? d : w) }')
			i=$((i + 1))
		done
		printf "%.2f -1\n" "$worst"
	fi
}

# run_config NAME: one configuration; appends a line to $T/results.
run_config() {
	name=$1
	# shellcheck disable=SC2046 # five words
	set -- $(config_row "$name")
	vms=$1 mib=$2 vcpus=$3 pages=$4 extra=$5
	guest_mib=$((vms * mib))
	avail_mib=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
	if [ $((guest_mib + MEM_SPARE_MIB)) -gt "$avail_mib" ]; then
		say "$name: SKIP: $guest_mib MiB of guest RAM, $avail_mib MiB available"
		echo "# skipped $name: $guest_mib MiB of guest RAM, $avail_mib MiB available" >>"$T/notes"
		return 0
	fi
	say "$name: $vms VM(s) x $mib MiB, $vcpus vCPU(s) each, $pages pages, $((PROCS + extra)) fillers"

	FILLERS=
	i=0
	while [ $i -lt $((PROCS + extra)) ]; do
		sleep 1000000 &
		FILLERS="$FILLERS $!"
		i=$((i + 1))
	done

	VLS=
	hp=--hugepages
	[ "$pages" = 4k ] && hp=--no-hugepages
	i=1
	while [ $i -le "$vms" ]; do
		"$LOAD" --name "obs$i" --vcpus "$vcpus" --memory "${mib}M" $hp --workload idle \
			--report 1 >"$T/vl$i.out" 2>&1 &
		VLS="$VLS $!"
		i=$((i + 1))
	done
	# Each stand-in reports once its RAM is touched and its vCPUs run; then it is stopped.
	t_start=$(date +%s)
	i=1
	for p in $VLS; do
		until grep -q '^t=' "$T/vl$i.out" 2>/dev/null; do
			kill -0 "$p" 2>/dev/null || {
				say "$name: vnuma-load obs$i exited: $(head -c 300 "$T/vl$i.out")"
				FAILED=1
				return 1
			}
			[ $(($(date +%s) - t_start)) -le $START_TIMEOUT_S ] || {
				say "$name: the stand-ins did not start within $START_TIMEOUT_S s"
				FAILED=1
				return 1
			}
			sleep 0.2
		done
		kill -STOP "$p"
		i=$((i + 1))
	done
	# resident guest memory and how much of it THP holds
	rss_kib=0 thp_kib=0
	for p in $VLS; do
		# shellcheck disable=SC2046 # two numbers
		set -- $(awk '/^Rss:/ { r = $2 } /^AnonHugePages:/ { h = $2 } END { print r + 0, h + 0 }' \
			/proc/"$p"/smaps_rollup)
		rss_kib=$((rss_kib + $1)) thp_kib=$((thp_kib + $2))
	done

	numad_start
	"$VNUMAD" --host linux -f "$T/vnumad.conf" --foreground >"$T/vnumad.log" 2>&1 &
	VPID=$!
	i=0
	until r=$(rounds) && [ -n "$r" ] && [ "$r" -ge $WARMUP_ROUNDS ] &&
		[ "$(nr_vms)" = "$vms" ]; do
		i=$((i + 1))
		kill -0 $VPID 2>/dev/null && [ $i -le 1200 ] || {
			say "$name: vnumad did not come up with $vms VM(s) (rounds '$r', VMs '$(nr_vms)')"
			sed -n '1,20p' "$T/vnumad.log" >&2
			FAILED=1
			return 1
		}
		sleep 0.1
	done
	sleep "$SETTLE_SECONDS"
	say "$name: vnumad's $("$VNUMACTL" -c "$T/sock" status 2>/dev/null | grep -o 'process events: [^;]*')"
	set -- /proc/[0-9]*
	nprocs=$#
	others=$((nprocs - vms))

	# the window: CPU, rounds, wall
	h0=$(cpu_ticks)
	wk0=$(walks)
	r0=$(rounds) w0=$(now_ns) c0=$(cpu_ns $VPID) s0=$(stat_ns $VPID)
	[ -n "$NPID" ] && nc0=$(cpu_ns "$NPID") ns0=$(numad_scans)
	sleep "$WINDOW"
	r1=$(rounds) w1=$(now_ns) c1=$(cpu_ns $VPID) s1=$(stat_ns $VPID)
	wk1=$(walks)
	h1=$(cpu_ticks)
	load1=$(cut -d' ' -f1 /proc/loadavg)
	nc1='' ns1=
	[ -n "$NPID" ] && nc1=$(cpu_ns "$NPID") ns1=$(numad_scans)
	kill -0 $VPID 2>/dev/null || { say "$name: vnumad exited"; FAILED=1; return 1; }

	# the system-call window
	sc=
	if [ "$SYSCALL_SOURCE" != none ]; then
		q0=$(rounds)
		sc=$(syscalls_count $VPID "$SYSCALL_WINDOW")
		q1=$(rounds)
	fi

	# the mmap-lock proxy: one VM of this size
	nm=
	first=${VLS# }
	first=${first%% *}
	[ -n "$first" ] && nm=$(numa_maps_ms "$first")

	kill -TERM $VPID 2>/dev/null
	wait $VPID 2>/dev/null
	if [ -n "$NPID" ]; then
		kill -TERM "$NPID" 2>/dev/null
		i=0
		while alive "$NPID" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
		kill -9 "$NPID" 2>/dev/null
	fi
	# shellcheck disable=SC2086
	kill_wait $VLS $FILLERS
	VLS='' FILLERS='' VPID='' NPID_DONE=$NPID NPID=

	awk -v name="$name" -v vms="$vms" -v vcpus=$((vms * vcpus)) -v rss="$rss_kib" \
		-v thp="$thp_kib" -v others="$others" -v r0="$r0" -v r1="$r1" -v w0="$w0" -v w1="$w1" \
		-v c0="$c0" -v c1="$c1" -v s0="$s0" -v s1="$s1" -v nc0="${nc0:-}" -v nc1="${nc1:-}" \
		-v ns0="${ns0:-}" -v ns1="${ns1:-}" -v sc="$sc" -v q0="${q0:-}" -v q1="${q1:-}" \
		-v nm="${nm:-}" -v npid="$NPID_DONE" -v h0="$h0" -v h1="$h1" -v load1="$load1" \
		-v wk0="${wk0:--1}" -v wk1="${wk1:--1}" 'BEGIN {
		wall = (w1 - w0) / 1e9; rd = r1 - r0
		gib_thp = thp / 1048576; gib_4k = (rss - thp) / 1048576
		v_pct = 100 * (c1 - c0) / 1e9 / wall
		v_stat_pct = 100 * (s1 - s0) / 1e9 / wall
		v_ms = rd > 0 ? (c1 - c0) / 1e6 / rd : -1
		n_pct = -1; n_ms = -1; n_scans = -1
		if (npid != "" && nc1 != "") {
			n_pct = 100 * (nc1 - nc0) / 1e9 / wall; n_scans = ns1 - ns0
			if (n_scans > 0) n_ms = (nc1 - nc0) / 1e6 / n_scans
		}
		sys_r = -1; open_r = -1
		if (sc != "" && q1 - q0 > 0) {
			split(sc, a, " "); sys_r = a[1] / (q1 - q0); open_r = a[2] / (q1 - q0)
		}
		if (nm == "") nm = "-1 -1"
		split(nm, q, " "); nm = q[1]; nm_cpu = q[2] == "" ? -1 : q[2]
		split(h0, a0, " "); split(h1, a1, " ")
		busy = a1[2] > a0[2] ? 100 * (a1[1] - a0[1]) / (a1[2] - a0[2]) : -1
		# walks in the window; over 5 ms, the longest and the first walks skipped since start
		split(wk0, k0, " "); split(wk1, k1, " ")
		wk_win = (k0[1] >= 0 && k1[1] >= 0) ? k1[1] - k0[1] : -1
		wk_over = k1[2] == "" ? -1 : k1[2]; wk_max = k1[3] == "" ? -1 : k1[3]
		wk_skip = k1[4] == "" ? -1 : k1[4]
		printf "%s %d %d %.4f %.4f %d %.2f %d %.3f %.3f %.3f %.3f %.3f %d %.1f %.1f %.2f %.1f %s %.2f %d %d %.1f %d\n",
			name, vms, vcpus, gib_thp, gib_4k, others, wall, rd, v_pct, v_stat_pct, v_ms,
			n_pct, n_ms, n_scans, sys_r, open_r, nm, busy, load1, nm_cpu, wk_win, wk_over,
			wk_max, wk_skip
	}' >>"$T/results"
}

inner_cleanup() {
	[ -n "${VPID:-}" ] && kill -9 "$VPID" 2>/dev/null
	[ -n "${NPID:-}" ] && kill -9 "$NPID" 2>/dev/null
	# shellcheck disable=SC2086
	[ -n "${VLS:-}${FILLERS:-}" ] && kill_wait ${VLS:-} ${FILLERS:-}
}

if [ "${1:-}" = --inner ]; then
	T=$2
	shift 2
	CPU_SOURCE=stat
	[ -r /proc/$$/schedstat ] && CPU_SOURCE=schedstat
	CLK_TCK=$(getconf CLK_TCK)
	VPID='' NPID='' VLS='' FILLERS='' FAILED=0
	trap inner_cleanup EXIT
	trap 'exit 1' HUP INT TERM
	[ -n "$NUMAD" ] && numad_sys_make
	cat >"$T/vnumad.conf" <<-EOF
		sample_period = 1s
		socket = $T/sock
		state_file = $T/state.json
		policy_dir = $T/policy.d
		log_target = stderr
	EOF
	[ -n "${BENCH_OBSERVE_CPU_CAP:-}" ] &&
		echo "observe_cpu_cap = $BENCH_OBSERVE_CPU_CAP" >>"$T/vnumad.conf"
	mkdir -p "$T/policy.d"
	: >"$T/results"
	: >"$T/notes"
	for c in $(echo "$CONFIGS" | tr ',' ' '); do
		run_config "$c" || break
	done
	echo "$CPU_SOURCE" >"$T/cpu_source"
	exit $FAILED
fi

# ---- The fit and the report ---------------------------------------------------------------

# report DIR: the table (or JSON) from DIR/meta and DIR/results.
# Least squares over the configurations: ms/round = k0 + k_vm VMs + k_vcpu vCPUs +
# k_thp GiB(THP) + k_4k GiB(4 KiB) + k_proc other processes.  A term the configurations do not
# vary (or cannot tell from another) is left out and shown as null.
report() {
	# shellcheck disable=SC1091 # written by this script
	. "$1/meta"
	awk -v json="$JSON" -v window="$WINDOW" -v scw="$SYSCALL_WINDOW" -v cpusrc="$CPU_SOURCE" \
		-v scsrc="$SYSCALL_SOURCE" -v numad="$NUMAD" -v numad_args="$NUMAD_ARGS" -v load="$LOADAVG" \
		-v procs="$PROCS" -v notes="$NOTES" -v skipped="$(grep -h '^# skipped' "$1/notes" | sed 's/^# skipped /skipped /' | tr '\n' '|')" \
		-v evms=$EXT_VMS -v egib=$EXT_GIB -v evcpus=$EXT_VCPUS -v eprocs=$EXT_PROCS -v reads=$READS '
function num(v, d) { return v < 0 ? "null" : sprintf("%." d "f", v) }
function col(v, d, w) { return v < 0 ? sprintf("%" w "s", "-") : sprintf("%" w "." d "f", v) }
{
	n++; name[n] = $1; x[n, 1] = 1; x[n, 2] = $2; x[n, 3] = $3; x[n, 4] = $4; x[n, 5] = $5
	x[n, 6] = $6; wall[n] = $7; rd[n] = $8; vpct[n] = $9; vspct[n] = $10; y[n] = $11
	npct[n] = $12; nms[n] = $13; nscans[n] = $14; sysr[n] = $15; openr[n] = $16; nm[n] = $17
	busy[n] = NF >= 18 ? $18 : -1; load1[n] = NF >= 19 ? $19 : -1; nmcpu[n] = NF >= 20 ? $20 : -1
	wkwin[n] = NF >= 24 ? $21 : -1; wkover[n] = NF >= 24 ? $22 : -1
	wkmax[n] = NF >= 24 ? $23 : -1; wkskip[n] = NF >= 24 ? $24 : -1
	# weights: the noise of a busy machine is about proportional to the value, so each
	# configuration counts by its relative error
	w[n] = 1 / ($11 > 1 ? $11 : 1) ^ 2
}
END {
	split("const vm vcpu gib_thp gib_4k proc", tn, " ")
	# keep the terms that vary, then drop any that the others already explain
	nt = 0
	for (j = 1; j <= 6; j++) {
		lo = hi = x[1, j]
		for (i = 2; i <= n; i++) { if (x[i, j] < lo) lo = x[i, j]; if (x[i, j] > hi) hi = x[i, j] }
		if (j == 1 || hi > lo) { nt++; t[nt] = j }
	}
	fitted = 0
	while (nt > 0 && n >= nt) {
		# normal equations A k = b, Gaussian elimination with partial pivoting
		for (a = 1; a <= nt; a++) {
			b[a] = 0
			for (c = 1; c <= nt; c++) A[a, c] = 0
			for (i = 1; i <= n; i++) {
				if (y[i] < 0) continue
				b[a] += w[i] * x[i, t[a]] * y[i]
				for (c = 1; c <= nt; c++) A[a, c] += w[i] * x[i, t[a]] * x[i, t[c]]
			}
		}
		sing = 0
		for (a = 1; a <= nt; a++) {
			p = a
			for (r = a + 1; r <= nt; r++) if ((A[r, a] < 0 ? -A[r, a] : A[r, a]) > (A[p, a] < 0 ? -A[p, a] : A[p, a])) p = r
			scale = 0
			for (r = 1; r <= nt; r++) scale += A[r, a] < 0 ? -A[r, a] : A[r, a]
			if ((A[p, a] < 0 ? -A[p, a] : A[p, a]) <= 1e-9 * (scale + 1e-300)) { sing = a; break }
			for (c = 1; c <= nt; c++) { tmp = A[a, c]; A[a, c] = A[p, c]; A[p, c] = tmp }
			tmp = b[a]; b[a] = b[p]; b[p] = tmp
			for (r = a + 1; r <= nt; r++) {
				f = A[r, a] / A[a, a]
				for (c = a; c <= nt; c++) A[r, c] -= f * A[a, c]
				b[r] -= f * b[a]
			}
		}
		if (!sing) { fitted = 1; break }
		# drop the last term that could not be told apart and try again
		for (a = sing; a < nt; a++) t[a] = t[a + 1]
		nt--
	}
	for (j = 1; j <= 6; j++) k[j] = "null"
	if (fitted) {
		for (a = nt; a >= 1; a--) {
			s = b[a]
			for (c = a + 1; c <= nt; c++) s -= A[a, c] * kk[c]
			kk[a] = s / A[a, a]
		}
		for (a = 1; a <= nt; a++) k[t[a]] = kk[a]
		# residuals
		rss = 0; m = 0
		for (i = 1; i <= n; i++) {
			if (y[i] < 0) continue
			f = 0
			for (a = 1; a <= nt; a++) f += kk[a] * x[i, t[a]]
			fit[i] = f; rss += w[i] * (y[i] - f) ^ 2; m++
		}
		# a negative term is noise (nothing observed costs less than nothing): 0 here
		for (j = 1; j <= 6; j++) kp[j] = (k[j] == "null" || k[j] < 0) ? 0 : k[j]
		base = kp[1] + kp[2] * evms + kp[3] * evcpus + kp[6] * eprocs
		ext_thp = k[4] != "null" ? base + kp[4] * egib : -1
		ext_4k = k[5] != "null" ? base + kp[5] * egib : -1
	}
	if (json) {
		printf "{\"benchmark\":\"observe\",\"window_s\":%d,\"syscall_window_s\":%d,", window, scw
		printf "\"cpu_source\":\"%s\",\"syscall_source\":\"%s\",\"filler_processes\":%d,", cpusrc, scsrc, procs
		printf "\"numad\":%s,\"loadavg\":\"%s\",\"configs\":[", numad == "" ? "null" : "\"numad -H 0 -l 6 " numad_args "\"", load
		for (i = 1; i <= n; i++) {
			printf "%s{\"name\":\"%s\",\"vms\":%d,\"vcpus\":%d,\"gib_thp\":%.3f,\"gib_4k\":%.3f,", (i > 1 ? "," : ""), name[i], x[i, 2], x[i, 3], x[i, 4], x[i, 5]
			printf "\"other_processes\":%d,\"wall_s\":%.2f,\"rounds\":%d,", x[i, 6], wall[i], rd[i]
			printf "\"host_busy_pct\":%s,\"loadavg_1min\":%s,", num(busy[i], 1), num(load1[i], 2)
			printf "\"vnumad\":{\"core_pct\":%s,\"core_pct_stat\":%s,\"cpu_ms_per_round\":%s,", num(vpct[i], 3), num(vspct[i], 3), num(y[i], 3)
			printf "\"syscalls_per_round\":%s,\"openat_per_round\":%s,\"numa_maps_read_ms_max\":%s,\"numa_maps_read_cpu_ms_max\":%s},", num(sysr[i], 1), num(openr[i], 1), num(nm[i], 2), num(nmcpu[i], 2)
			printf "\"walks_in_window\":%s,\"walks_over_5ms_total\":%s,\"walk_max_ms\":%s,\"walks_skipped_total\":%s,", num(wkwin[i], 0), num(wkover[i], 0), num(wkmax[i], 1), num(wkskip[i], 0)
			printf "\"numad\":{\"core_pct\":%s,\"cpu_ms_per_scan\":%s,\"scans\":%s}}", num(npct[i], 3), num(nms[i], 3), nscans[i] < 0 ? "null" : nscans[i]
		}
		printf "],\"fit_rms_relative\":%s,\"fit_exact\":%s,\"fit_ms_per_round\":{", fitted ? sprintf("%.4f", sqrt(rss / m)) : "null", fitted && m <= nt ? "true" : "false"
		for (j = 1; j <= 6; j++) printf "%s\"%s\":%s", (j > 1 ? "," : ""), tn[j], k[j] == "null" ? "null" : sprintf("%.5f", k[j])
		printf "},\"extrapolation\":{\"vms\":%d,\"gib\":%d,\"vcpus\":%d,\"other_processes\":%d,", evms, egib, evcpus, eprocs
		printf "\"round_s\":1,\"core_pct_thp\":%s,\"core_pct_4k\":%s}", fitted ? num(ext_thp / 10, 1) : "null", fitted ? num(ext_4k / 10, 1) : "null"
		printf ",\"notes\":["
		nn = split(notes skipped, nt_, "|"); first = 1
		for (i = 1; i <= nn; i++) if (nt_[i] != "") { gsub(/"/, "\\\"", nt_[i]); printf "%s\"%s\"", first ? "" : ",", nt_[i]; first = 0 }
		printf "]}\n"
		exit 0
	}
	printf "\nvnumad --host linux (sample_period 1 s) beside %s, %d-s window per configuration.\n", numad == "" ? "no numad" : "numad -H 0 -l 6 " numad_args, window
	printf "CPU time: %s; system calls: %s over %d s; numa_maps: longest of %d reads of one VM.\n", cpusrc == "schedstat" ? "run time of /proc/PID/task/*/schedstat" : "utime+stime of /proc/PID/stat", scsrc == "none" ? "not counted" : scsrc, scw, reads
	printf "Stand-ins stopped (SIGSTOP) after first-touching their RAM; %d idle filler processes; load average at the end %s.\n\n", procs, load
	printf "%-15s %4s %5s %7s %7s %5s | %7s %8s %8s %7s %9s | %7s %8s %5s | %5s %5s %6s %5s | %5s %5s\n", "config", "VMs", "vCPUs", "GiB_thp", "GiB_4k", "procs", "vnumad%", "ms/round", "sys/rnd", "open/rd", "nmaps_ms", "numad%", "ms/scan", "ratio", "walks", ">5ms", "max_ms", "skip", "host%", "load"
	for (i = 1; i <= n; i++)
		printf "%-15s %4d %5d %7.2f %7.2f %5d | %7s %8s %8s %7s %9s | %7s %8s %5s | %5s %5s %6s %5s | %5s %5s\n", name[i], x[i, 2], x[i, 3], x[i, 4], x[i, 5], x[i, 6], col(vpct[i], 2, 7), col(y[i], 2, 8), col(sysr[i], 0, 8), col(openr[i], 0, 7), col(nm[i], 1, 9), col(npct[i], 3, 7), col(nms[i], 2, 8), col(npct[i] > 0 && vpct[i] >= 0 ? vpct[i] / npct[i] : -1, 1, 5), col(wkwin[i], 0, 5), col(wkover[i], 0, 5), col(wkmax[i], 1, 6), col(wkskip[i], 0, 5), col(busy[i], 0, 5), col(load1[i], 1, 5)
	printf "(ratio: vnumad%% / numad%%; walks: vnumad'"'"'s numa_maps walks in the window; >5ms, max_ms, skip: since it\n"
	printf "started, the walks over 5 ms, the longest, the first walks skipped; host%%: the whole machine busy\n"
	printf "over the window, all CPUs; load: 1-min load average at its end)\n"
	if (!fitted) { printf "\nNot enough configurations to fit the terms of vnumad CPU per round.\n"; exit 0 }
	printf "\nFit of vnumad CPU ms per round (least squares over %d configurations, each weighted by\n1/value^2; rms relative residual %.1f %%):\n", m, 100 * sqrt(rss / m)
	lab[1] = "constant"; lab[2] = "per VM"; lab[3] = "per vCPU"; lab[4] = "per GiB, THP"; lab[5] = "per GiB, 4 KiB pages"; lab[6] = "per other process"
	for (j = 1; j <= 6; j++) printf "  %-22s %s\n", lab[j], k[j] == "null" ? "- (not varied)" : sprintf("%.4f ms%s", k[j], k[j] < 0 ? " (negative: noise, 0 in the extrapolation)" : "")
	if (m <= nt) printf "  (as many configurations as terms: the fit is exact, and nothing checks it; run more)\n"
	printf "Extrapolated to %d VMs x %d GiB (%d GiB, %d vCPUs, %d other processes), 1-s rounds:\n", evms, egib / evms, egib, evcpus, eprocs
	printf "  THP:         %s\n", ext_thp < 0 ? "- (no THP term fitted)" : sprintf("%.1f %% of a core (%.0f ms per round)", ext_thp / 10, ext_thp)
	printf "  4 KiB pages: %s\n", ext_4k < 0 ? "- (no 4 KiB term fitted)" : sprintf("%.1f %% of a core (%.0f ms per round)", ext_4k / 10, ext_4k)
	printf "  (linear, uncapped: settled VMs are read under observe_cpu_cap and walks within their own\n"
	printf "  budget, which this fit of runs below both does not model; docs/linux-host.md)\n"
	nn = split(notes skipped, nt_, "|")
	for (i = 1; i <= nn; i++) if (nt_[i] != "") printf "note: %s\n", nt_[i]
}' "$1/results"
}

# ---- On the host ------------------------------------------------------------------------

JSON=${BENCH_OBSERVE_JSON:-0}
KEEP=no
REPORT=
usage() {
	echo "usage: bench_observe.sh [--json] [--keep] | [--json] --report DIR" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--json) JSON=1 ;;
	--keep) KEEP=yes ;;
	--report) [ $# -ge 2 ] || usage && REPORT=$2 && shift ;;
	*) usage ;;
	esac
	shift
done
WINDOW=${BENCH_OBSERVE_SECONDS:-$SECONDS_DEFAULT}
SYSCALL_WINDOW=${BENCH_OBSERVE_SYSCALL_SECONDS:-$SYSCALL_SECONDS_DEFAULT}
PROCS=${BENCH_OBSERVE_PROCS:-$PROCS_DEFAULT}
NUMAD_ARGS=${BENCH_OBSERVE_NUMAD_ARGS:-$NUMAD_ARGS_DEFAULT}
CONFIGS=${BENCH_OBSERVE_CONFIGS:-$(echo "$CONFIGS_ALL" | tr ' ' ',')}
case $WINDOW$SYSCALL_WINDOW$PROCS in
'' | *[!0-9]*) echo "bench_observe: BENCH_OBSERVE_SECONDS, _SYSCALL_SECONDS and _PROCS are" \
	"whole numbers" >&2 && exit 2 ;;
esac
for c in $(echo "$CONFIGS" | tr ',' ' '); do
	config_row "$c" >/dev/null || {
		echo "bench_observe: unknown configuration '$c' (known: $CONFIGS_ALL)" >&2
		exit 2
	}
done

if [ -n "$REPORT" ]; then
	report "$REPORT"
	exit 0
fi

skip() {
	echo "bench_observe: SKIP: $*"
	exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (namespaces, other processes' numa_maps)"
command -v unshare >/dev/null 2>&1 || skip "no unshare (util-linux)"
command -v jq >/dev/null 2>&1 || skip "no jq (packaging/install-deps.sh installs it)"
for b in "$VNUMAD" "$VNUMACTL" "$LOAD"; do
	[ -x "$b" ] || {
		echo "bench_observe: $b is not built (make bench-observe builds it)" >&2
		exit 1
	}
done
PIDNS=${BENCH_OBSERVE_PIDNS:-host}
case $PIDNS in
host) unshare --mount --ipc true 2>/dev/null || skip "unshare cannot make a mount and IPC namespace here" ;;
private)
	unshare --pid --fork --mount-proc --mount --ipc true 2>/dev/null ||
		skip "unshare cannot make a PID, mount and IPC namespace here"
	;;
*)
	echo "bench_observe: BENCH_OBSERVE_PIDNS is host or private, not '$PIDNS'" >&2
	exit 2
	;;
esac
case $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null) in
*"[always]"*) echo "bench_observe: note: THP is 'always', so the 4k configurations get huge" \
	"pages too; their GiB are counted where they are (AnonHugePages)" >&2 ;;
esac

NOTES=
NUMAD=$(command -v numad 2>/dev/null || true)
[ -n "$NUMAD" ] || NOTES="$NOTES|no numad installed: its columns are left out (packaging/install-system-deps.sh installs it)"
if perf stat -e raw_syscalls:sys_enter,syscalls:sys_enter_openat true >/dev/null 2>&1; then
	SYSCALL_SOURCE=perf
elif command -v strace >/dev/null 2>&1; then
	SYSCALL_SOURCE=strace
else
	SYSCALL_SOURCE=none
	NOTES="$NOTES|neither perf's syscall tracepoints nor strace: no system-call columns"
fi
PYTHON=$(command -v python3 2>/dev/null || true)
export WINDOW SYSCALL_WINDOW PROCS NUMAD NUMAD_ARGS CONFIGS SYSCALL_SOURCE PYTHON VNUMAD \
	VNUMACTL LOAD

T=$(mktemp -d "${TMPDIR:-/tmp}/bench-observe.XXXXXX") || exit 1
UPID='' INTR=''
cleanup() {
	rc=$?
	if [ -n "$UPID" ] && [ "$PIDNS" = host ]; then
		# the inner script's own trap stops what it started
		kill -TERM "$UPID" 2>/dev/null
		wait "$UPID" 2>/dev/null
	elif [ -n "$UPID" ]; then
		# unshare ignores SIGTERM while it waits for its child, the namespace's first process:
		# that one is killed, and the kernel ends everything in the namespace with it
		for c in $({ cat /proc/"$UPID"/task/*/children; pgrep -P "$UPID"; } 2>/dev/null); do
			kill -KILL "$c" 2>/dev/null
		done
		wait "$UPID" 2>/dev/null
	fi
	# kept when asked for, or when something failed (not when interrupted)
	if [ $KEEP = yes ] || { [ $rc -ne 0 ] && [ -z "$INTR" ]; }; then
		say "logs kept in $T"
	else
		rm -rf "$T"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'INTR=1; exit 1' HUP INT TERM

nconf=$(echo "$CONFIGS" | tr ',' '\n' | grep -c .)
say "$nconf configuration(s), ${WINDOW}-s window each + ${SYSCALL_WINDOW} s of system calls;" \
	"CPU time of vnumad and numad; syscalls by $SYSCALL_SOURCE; PID namespace: $PIDNS"
t0=$(date +%s)
# --kill-child: should this script be stopped, unshare's end kills the namespace's first
# process, and with it everything in the namespace.
if [ "$PIDNS" = host ]; then
	unshare --mount --ipc --propagation private sh "$HERE/bench_observe.sh" --inner "$T" &
else
	unshare --pid --fork --kill-child --mount-proc --mount --ipc --propagation private \
		sh "$HERE/bench_observe.sh" --inner "$T" &
fi
UPID=$!
wait $UPID
rc=$?
UPID=
say "ran $(($(date +%s) - t0)) s"
[ $rc -eq 0 ] || { say "a configuration failed"; exit 1; }
{
	echo "WINDOW='$WINDOW' SYSCALL_WINDOW='$SYSCALL_WINDOW' PROCS='$PROCS'"
	echo "CPU_SOURCE='$(cat "$T/cpu_source" 2>/dev/null || echo stat)'"
	echo "SYSCALL_SOURCE='$SYSCALL_SOURCE' NUMAD='$NUMAD' NUMAD_ARGS='$NUMAD_ARGS'"
	echo "LOADAVG='$(cut -d' ' -f1-3 /proc/loadavg)' NOTES='$NOTES'"
} >"$T/meta"
report "$T"

