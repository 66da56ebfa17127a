#!/bin/sh
# System test, end to end: vnumad --connect qemu:///system inside the emulated 2-node NUMA host
# of numa-host.sh (2 x 1.5 GiB, 4 CPUs), with libvirtd running there and two QEMU TCG domains
# whose policies are in their <metadata>:
#   A  nodes='1'  its RAM (64 MiB, allocated at start) first touched on node 0: its emulator
#                 threads start pinned to node 0's CPUs (<emulatorpin>, not a <vcpupin>, so
#                 the domain stays vnumad's to place)
#   B  nodes='0'  the other way round: RAM first touched on node 1
# Each domain boots a 36-byte multiboot kernel whose vCPUs halt (libvirt-lib.sh): under TCG
# inside TCG a real guest would need minutes of CPU; vnumad places vCPU threads and moves RAM
# whatever the guest runs.  Checked, with kernel.numa_balancing=0 in the emulated host:
#   1. vnumad pins every vCPU of each domain to its policy's node through libvirt (virsh
#      vcpupin; the emulator threads with them: virsh emulatorpin; vnumactl vminfo agrees);
#   2. it moves their RAM: >= 90 % of A's guest RAM on node 1 and of B's on node 0
#      (/proc/PID/numa_maps of each QEMU), and counts the pages it moved;
#   3. `vnumactl policy A --nodes 0` lands in A's live metadata, and A's vCPUs and >= 90 % of
#      its RAM come back to node 0;
#   4. `vnumactl policy B --nodes 1 --rate 2MiB/s` starts a slow move of B's RAM; `virsh
#      destroy B` while it is pending is routine: B leaves vnumactl list, vnumad keeps running
#      (status answers, rounds advance), no error event;
#   4b. placement at start and live memory binding (issue 16, levers 2 and 1): a third domain
#      C with <numatune><memory mode='restrictive' placement='auto'/> starts after vnumad,
#      its emulator threads on the node vnumad does not advise: libvirt asks "numad"
#      (vnumad's shim, bind-mounted over /usr/bin/numad) and binds C to vnumad's advice, node
#      P; >= 90 % of C's RAM is on P from its first touch, none of it moved by vnumad.
#      `vnumactl policy C --nodes Q` (the other node) then moves it: vnumad widens C's live
#      nodeset to 0-1 (virsh numatune --live), moves its pages to Q with its own paced
#      migrator (all but at most the 16 MiB the narrowing leaves the kernel) and narrows
#      the set to Q; the pages the kernel moved are reported;
# then with kernel.numa_balancing=1 (the kernel's scanner may make A's idle RAM PROT_NONE for
# hinting faults, which move_pages(2) then reads as absent on 6.1):
#   5. vnumad samples A with fault statistics, and `vnumactl policy A --nodes 1` moves A's
#      vCPUs and >= 90 % of its RAM to node 1 again;
#   6. SIGTERM stops vnumad with status 0; C's live nodeset is back to P, as vnumad found
#      it; nothing on its stderr but its start and stop lines
#      (and the count of vCPU affinities it restored); A's vCPUs are back on every CPU, as
#      libvirt first put them, in virsh vcpupin and in the threads' own affinity, and its
#      emulator threads where its <emulatorpin> put them (node 0's CPUs).
# A failure in step 5 is reported after step 6 has run.  Prints the time each step took
# (seconds of the emulated host's clock) and the whole run's.  Skips (77) when QEMU, a
# kernel, libvirtd or its QEMU driver is missing.  Logs (vnumad's, libvirt's, the console,
# and on failure evidence-*.txt: vnumactl, virsh and numa_maps) are kept on failure and their
# directory named.
#
# `test_libvirt_nested.sh --guest` is the part that runs inside the emulated host.
set -u

# Seconds (of the emulated host's clock) each wait may take before the test fails.  The
# steps take a few seconds each when the machine is idle (vnumad decides every 2 s, a
# 64 MiB move takes about 0.5 s); these are ceilings for a busy 2-core machine, not targets.
PIN_WAIT_S=60
MOVE_WAIT_S=90
LEAVE_WAIT_S=30
# Guest RAM of each domain, MiB (allocated at start), and its vCPUs: two each, so that node 0
# (2 CPUs) is overcommitted in step 3, when both policies name it: a policy's nodes win over
# the CPUs free there.  A 2-vCPU domain also has a vCPU that never runs (its halt kernel
# starts no second CPU): vnumad must pin it though the CPU it last ran on is its home's.
# VNUMAD_TEST_VCPUS=1 runs the test with one each.
DOM_MEM_MIB=64
DOM_VCPUS=${VNUMAD_TEST_VCPUS:-2}
# The rate of B's last move: slow enough (64 MiB at 2 MiB/s: 32 s) to destroy B during it.
SLOW_RATE=2MiB/s
# C's guest RAM, MiB (a third domain: lever 1 and 2).
DOM_C_MEM_MIB=64
# Memory of the emulated host, MiB: two nodes of 1.5 GiB (libvirtd, two QEMUs with their
# TCG code buffers, and the page cache of the host's files read over 9p).
HOST_MEM_MIB=3072
# Seconds before the emulated host is stopped: libvirtd takes about 25 s to come up under
# TCG and each domain about 16 s to start; the whole run takes 3-4 minutes on a quiet
# machine, and up to 10 on one shared with other emulated hosts.  Under ctest's 900 s.
HOST_TIMEOUT_S=840

# ---- Inside the emulated host -------------------------------------------------------------

SYS=${VNUMAD_SRCDIR:?}/tests/system
. "$SYS/libvirt-lib.sh"

# libvirtd with the QEMU driver alone, and no private /dev per domain: under TCG each driver
# it loads (network, storage, nwfilter, lxc, libxl, ...) costs seconds at start, and so
# does each domain's /dev namespace.  The module is bind-mounted, not copied: libvirt keys its
# cache of QEMU's capabilities to the ctime of the modules it loaded.
guest_libvirt_trim() {
	for drv in /usr/lib/*/libvirt/connection-driver; do
		[ -e "$drv/libvirt_driver_qemu.so" ] && break
	done
	mkdir -p /run/lvt/drv
	: >/run/lvt/drv/libvirt_driver_qemu.so
	mount --bind "$drv/libvirt_driver_qemu.so" /run/lvt/drv/libvirt_driver_qemu.so &&
		mount --rbind /run/lvt/drv "$drv" ||
		lvt_fail "cannot leave libvirtd only the QEMU driver"
	{
		cat /etc/libvirt/qemu.conf
		echo 'namespaces = [ ]'
	} >/run/lvt/qemu.conf
	mount --bind /run/lvt/qemu.conf /etc/libvirt/qemu.conf ||
		lvt_fail "cannot give libvirtd its qemu.conf"
}

# libvirtd's state on tmpfs: the host's root is read-only here.
guest_mounts() {
	for d in /var/lib/libvirt /var/cache/libvirt /var/log/libvirt /etc/libvirt/qemu; do
		mount -t tmpfs tmpfs "$d" || lvt_fail "cannot mount a tmpfs on $d"
	done
	mount -t cgroup2 none /sys/fs/cgroup || lvt_fail "cannot mount cgroup2"
	echo "+cpuset +cpu +memory" >/sys/fs/cgroup/cgroup.subtree_control ||
		lvt_fail "cannot enable the cpuset, cpu and memory controllers"
	echo 0 >/proc/sys/kernel/numa_balancing || lvt_fail "cannot set kernel.numa_balancing=0"
}

ctl() { "$CTL" -c "$SOCK" "$@"; }
jctl() { "$CTL" -c "$SOCK" --json "$@"; }

# define_xml NAME POLICY-ATTRIBUTES FIRST-TOUCH-NODE: define a domain (not started).
define_xml() {
	tuning="  <memoryBacking><allocation mode='immediate'/></memoryBacking>
  <cputune><emulatorpin cpuset='$(lvt_node_cpus "$3")'/></cputune>"
	lvt_domain_xml NAME="$1" MEM_MIB=$DOM_MEM_MIB VCPUS="$DOM_VCPUS" \
		METADATA="$(lvt_policy "$2")" TUNING="$tuning" KERNEL="$BOOT/halt.bin" INITRD='' \
		CMDLINE='' CONSOLE='' EMULATOR="$(command -v qemu-system-x86_64)" >"$OUT/$1.xml" ||
		lvt_fail "cannot write $1's XML"
	out=$(lvt_virsh define "$OUT/$1.xml" 2>&1) || lvt_fail "virsh define $1: $out"
}

# define_c_xml NAME NODE: domain C (step 4b): restrictive placement='auto', its emulator
# threads (which allocate its RAM at start) on NODE's CPUs.
define_c_xml() {
	tuning="  <memoryBacking><allocation mode='immediate'/></memoryBacking>
  <cputune><emulatorpin cpuset='$(lvt_node_cpus "$2")'/></cputune>
  <numatune><memory mode='restrictive' placement='auto'/></numatune>"
	lvt_domain_xml NAME="$1" MEM_MIB=$DOM_C_MEM_MIB VCPUS=1 METADATA="$(lvt_policy "mode='auto'")" \
		TUNING="$tuning" KERNEL="$BOOT/halt.bin" INITRD='' CMDLINE='' CONSOLE='' \
		EMULATOR="$(command -v qemu-system-x86_64)" >"$OUT/$1.xml" ||
		lvt_fail "cannot write $1's XML"
	out=$(lvt_virsh define "$OUT/$1.xml" 2>&1) || lvt_fail "virsh define $1: $out"
}

# The live nodeset libvirt holds for NAME's memory (virsh numatune).
live_nodeset() {
	lvt_virsh numatune "$1" --live | awk '$1 == "numa_nodeset" { print $3 }'
}

# nodeset_is NAME NODES: the live nodeset of NAME is NODES.
nodeset_is() {
	n=$(live_nodeset "$1")
	[ "$n" = "$2" ] || {
		echo "virsh numatune $1 --live: nodeset '$n' (want $2)"
		return 1
	}
}

pgmigrated() {
	awk '$1 == "pgmigrate_success" { print $2 }' /proc/vmstat
}

# The node the shim last answered libvirt (numad.log, written by the wrapper of guest_main).
shim_answer() {
	sed -n 's/^numad -w [0-9:]*: //p' "$OUT/numad.log" 2>/dev/null | tail -n 1
}

# C settled where vnumad put it: one home node, nothing pending, the RAM there.
c_settled() {
	v=$(jctl vminfo "$C")
	h=$(printf '%s' "$v" | jq -r '.home')
	case $h in 0 | 1) ;; *) echo "vminfo $C: home '$h'" && return 1 ;; esac
	printf '%s' "$v" | jq -e '.state == "settled" and .pending_mib == 0' >/dev/null &&
		ram_on "$C" "$h" || {
		echo "vminfo $C: $(printf '%s' "$v" | jq -c '{home, state, pending_mib, resident_mib}')"
		return 1
	}
}

# Step 4b: C starts where vnumad advised; a policy change moves it through the live nodeset.
guest_placed_start() {
	t=$(lvt_uptime)
	# The advice for C's shape now; C's emulator threads go to the other node, so that RAM
	# found on the advised node is there by libvirt's binding, not by where QEMU ran.  vnumad
	# is paused meanwhile: the shim's question is answered, and nothing moves C before its RAM
	# is looked at.
	advice=$(ctl place --vcpus 1 --memory ${DOM_C_MEM_MIB}M | sed -n 's/^nodes: *//p')
	case $advice in 0 | 1) ;; *) lvt_fail "vnumactl place for C: nodes '$advice' (want one node)" ;; esac
	define_c_xml "$C" $((1 - advice))
	out=$(ctl pause 2>&1) || lvt_fail "vnumactl pause: $out"
	m0=$(pgmigrated)
	out=$(lvt_virsh start "$C" 2>&1) || lvt_fail "virsh start $C: $out"
	pid=$(lvt_qemu_pid "$C")
	ram0=$(lvt_ram_nodes "$pid")
	kmoved=$(($(pgmigrated) - m0))
	P=$(shim_answer)
	case $P in 0 | 1) ;; *) lvt_fail "vnumad's shim answered libvirt '$P' for $C, not one node \
(numad.log: $(tr '\n' '|' <"$OUT/numad.log"))" ;; esac
	nodeset_is "$C" "$P" >/dev/null ||
		lvt_fail "$C started with live nodeset '$(live_nodeset "$C")', not the shim's answer $P"
	pct=$(lvt_ram_pct "$pid" "$P")
	[ "${pct:-0}" -ge 90 ] || lvt_fail "$C's RAM at start: $ram0 (want >= 90 % on node $P, \
where libvirt bound it on vnumad's advice; its emulator threads ran on node $((1 - advice)))"
	T_C=$(lvt_since "$t")
	lvt_ok "$C started on vnumad's advice (node $P; asked before the start: $advice; emulator on \
node $((1 - advice))) in $T_C s: RAM from its first touch $ram0, pages migrated meanwhile $kmoved"
	out=$(ctl resume 2>&1) || lvt_fail "vnumactl resume: $out"
	lvt_wait_for $MOVE_WAIT_S "$C settled" c_settled
	H=$(jctl vminfo "$C" | jq -r .home)
	Q=$((1 - H))
	if [ "$H" = "$P" ]; then
		lvt_ok "$C settled on its advised node $P without a move"
	else
		# the engine's home for C is not what place advised: a wasted move, reported
		lvt_say "NOTE: vnumad re-homed $C from its advised node $P to $H after the start \
(place and the engine's home disagree); pages: $(jctl vminfo "$C" | jq .counters.pages_migrated)"
	fi
	t=$(lvt_uptime)
	m0=$(pgmigrated)
	p0=$(jctl vminfo "$C" | jq .counters.pages_migrated)
	out=$(ctl policy "$C" --nodes "$Q" 2>&1) || lvt_fail "vnumactl policy $C --nodes $Q: $out"
	lvt_wait_for $MOVE_WAIT_S ">= 90 % of $C's RAM on node $Q" ram_on "$C" "$Q"
	lvt_wait_for 30 "$C's live nodeset narrowed to $Q" nodeset_is "$C" "$Q"
	T_C0=$(lvt_since "$t")
	mine=$(($(jctl vminfo "$C" | jq .counters.pages_migrated) - p0))
	all=$(($(pgmigrated) - m0))
	# the narrowing leaves the kernel at most LVH_NARROW_MIB (16 MiB) to move, unpaced
	[ "$mine" -ge $(((DOM_C_MEM_MIB - 16) * 256)) ] || lvt_fail "vnumad moved $mine of \
$C's $((DOM_C_MEM_MIB * 256)) pages (want all but the 16 MiB the narrowing may leave the kernel)"
	lvt_check "$(jctl status)" '.host | test("live memory nodes: widened [1-9][0-9]*, narrowed [1-9]")' \
		"status: the widening and the narrowing counted"
	lvt_ok "vnumactl policy $C --nodes $Q: RAM on node $Q after $T_C0 s ($(lvt_ram_nodes \
"$(lvt_qemu_pid "$C")")), live nodeset $H -> 0-1 -> $Q; pages moved: $mine by vnumad, \
$((all - mine)) by the kernel (pgmigrate_success $all); $(jctl status | jq -r .host |
		grep -o 'live memory nodes: [^;]*')"
}

# start_all NAME...: start the domains at once (each takes about 16 s under nested TCG).
start_all() {
	pids=''
	for n in "$@"; do
		lvt_virsh start "$n" >"$OUT/start-$n.out" 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do
		wait "$p" || lvt_fail "virsh start failed: $(cat "$OUT"/start-*.out)"
	done
}

# The QEMU capabilities libvirtd probed in an earlier run (about 25 s under TCG), when the
# host side passed a directory of them: libvirtd checks them itself and probes again when
# the QEMU binary or libvirt changed.  After the run they are handed back in OUT/caps.
caps_seed() {
	c=/var/cache/libvirt/qemu/capabilities
	mkdir -p "$c" "$OUT/caps"
	[ -n "${LVT_CAPS_DIR:-}" ] && cp "$LVT_CAPS_DIR"/*.xml "$c/" 2>/dev/null &&
		lvt_say "seeded libvirt's QEMU capabilities cache from $LVT_CAPS_DIR"
	return 0
}

caps_save() {
	c=/var/cache/libvirt/qemu/capabilities
	if [ -n "${LVT_CAPS_DIR:-}" ] && [ -n "$(ls "$LVT_CAPS_DIR" 2>/dev/null)" ]; then
		if (cd "$LVT_CAPS_DIR" && md5sum ./*.xml) | (cd "$c" && md5sum -c --quiet) \
			>/dev/null 2>&1; then
			lvt_say "the seeded QEMU capabilities were used"
		else
			lvt_say "libvirtd probed QEMU again"
		fi
	fi
	cp "$c"/*.xml "$OUT/caps/" 2>/dev/null
}

# pins_want CPUS: what lvt_vcpupins says when each of the DOM_VCPUS vCPUs may run on CPUS.
pins_want() {
	pa='' i=0
	while [ $i -lt "$DOM_VCPUS" ]; do
		pa="$pa${pa:+ }$i:$1"
		i=$((i + 1))
	done
	echo "$pa"
}

# pinned NAME NODE: every vCPU of NAME and its emulator threads on NODE's CPUs, as libvirt
# says (virsh vcpupin, emulatorpin) and as vnumad says (vminfo: pinned, allowed NODE).
pinned() {
	c=$(lvt_node_cpus "$2")
	want=$(pins_want "$c")
	got=$(lvt_vcpupins "$1")
	[ "$got" = "$want" ] || {
		echo "virsh vcpupin $1: $got (want $want)"
		return 1
	}
	e=$(lvt_emulatorpin "$1")
	[ "$e" = "$c" ] || {
		echo "virsh emulatorpin $1: $e (want $c)"
		return 1
	}
	jctl vminfo "$1" | jq -e --arg n "$2" 'all(.vcpu[]; .allowed == $n and .pinned)' || {
		echo "vminfo $1: $(jctl vminfo "$1" | jq -c .vcpu)"
		return 1
	}
}

# pinned_some NAME NODE: vnumad has pinned at least one vCPU of NAME, and every vCPU it
# pinned, to NODE (vminfo), and libvirt agrees (virsh vcpupin).  What a step waits for before
# it looks at memory; `pinned` is checked after that.
pinned_some() {
	c=$(lvt_node_cpus "$2")
	v=$(jctl vminfo "$1")
	printf '%s' "$v" | jq -e --arg n "$2" '[.vcpu[] | select(.pinned)] |
		length > 0 and all(.[]; .allowed == $n)' >/dev/null || {
		echo "vminfo $1: $(printf '%s' "$v" | jq -c .vcpu)"
		return 1
	}
	for i in $(printf '%s' "$v" | jq '.vcpu[] | select(.pinned) | .vcpu'); do
		case " $(lvt_vcpupins "$1") " in
		*" $i:$c "*) ;;
		*)
			echo "virsh vcpupin $1: $(lvt_vcpupins "$1") (vCPU $i: want $c)"
			return 1
			;;
		esac
	done
}

# pins_once_check STEP: with both domains settled, no vCPU was pinned to the same node twice:
# a vCPU already pinned there needs no second pin (a halted vCPU does not run, so the CPU it
# last ran on stays where it was before the pin).  A miss is noted in LATE_FAIL.
pins_once_check() {
	sleep 8 # a few more rounds
	again=$(jctl events --limit 500 | jq -c '[.events[] | select(.kind == "pin") |
		{vm, pin: (.text | capture("^vCPU (?<v>[0-9]+) -> node (?<n>[0-9]+)"))}] |
		group_by(.) | map(select(length > 1) | {vm: .[0].vm, vcpu: .[0].pin.v,
		node: .[0].pin.n, pins: length})')
	if [ "$again" = "[]" ]; then
		lvt_ok "$1: each vCPU pinned once"
	else
		LATE_FAIL="$LATE_FAIL
    $1: vCPUs pinned to the node they were already pinned to, again and again: $again"
		guest_evidence "$(echo "$1" | tr ' ' '-')-pins"
		lvt_say "FAIL (noted, the test goes on): $1: repeated pins: $again"
	fi
}

# pins_all_check NAME NODE STEP: once a step's memory is in place, every vCPU and the emulator
# threads must be on NODE; a miss is noted in LATE_FAIL (with evidence) and the test goes on.
pins_all_check() {
	if out=$(pinned "$1" "$2"); then
		lvt_ok "$3: every vCPU of $1 and its emulator threads pinned to node $2"
	else
		LATE_FAIL="$LATE_FAIL
    $3: not every vCPU of $1 pinned to node $2 (policy nodes='$2'): $out"
		guest_evidence "$(echo "$3-$1" | tr ' ' '-')"
		lvt_say "FAIL (noted, the test goes on): $3: $out"
	fi
}

# ram_on NAME NODE: at least 90 % of NAME's guest RAM on NODE.
ram_on() {
	pid=$(lvt_qemu_pid "$1")
	pct=$(lvt_ram_pct "$pid" "$2")
	[ -n "$pct" ] && [ "$pct" -ge 90 ] || {
		echo "$1 (pid $pid): ${pct:-?} % on node $2: $(lvt_ram_nodes "$pid")"
		return 1
	}
}

# policy_nodes NAME NODES: vnumad's policy for NAME says nodes=NODES.
policy_nodes() {
	jctl policy "$1" | jq -e --arg n "$2" '.policy.nodes == $n and .policy_ok'
}

vnumad_start() {
	mkdir -p "$RUN/policy.d"
	cat >"$RUN/vnumad.conf" <<EOF
# written by test_libvirt_nested.sh
sample_period = 1s
rebalance_period = 2s
policy_dir = $RUN/policy.d
EOF
	"$VNUMAD" --connect "$LVT_URI" --foreground --socket "$SOCK" --state "$RUN/state.json" \
		-f "$RUN/vnumad.conf" >"$OUT/vnumad.out" 2>"$OUT/vnumad.err" &
	VPID=$!
	lvt_wait_for 60 "vnumad answering on its socket" vnumad_answers
	lvt_ok "vnumad --connect $LVT_URI answers after $LVT_WAITED s"
}

vnumad_answers() {
	kill -0 "$VPID" 2>/dev/null || lvt_fail "vnumad exited: $(cat "$OUT/vnumad.err")"
	ctl status >/dev/null 2>&1
}

both_listed() {
	jctl list | jq -e --arg a "$A" --arg b "$BB" \
		'[.vms[].name] | index($a) != null and index($b) != null'
}

# Both domains listed with their metadata policies.
guest_listed() {
	lvt_wait_for 30 "vnumactl list showing $A and $BB" both_listed
	lvt_check "$(jctl policy "$A")" '.source == "host" and .policy.nodes == "1" and
		.policy.mode == "auto"' "policy $A: nodes 1 from the metadata"
	lvt_check "$(jctl policy "$BB")" '.source == "host" and .policy.nodes == "0"' \
		"policy $BB: nodes 0 from the metadata"
	lvt_ok "vnumactl list shows both, with their metadata policies"
}

# Steps 1 and 2: pins and memory as the metadata policies say.
guest_first_placement() {
	t=$(lvt_uptime)
	lvt_wait_for $PIN_WAIT_S "vnumad pinning $A to node 1" pinned_some "$A" 1
	lvt_ok "$A: vCPUs pinned to node 1 ($(lvt_node_cpus 1)) after $(lvt_since "$t") s: \
$(lvt_vcpupins "$A")"
	lvt_wait_for $PIN_WAIT_S "vnumad pinning $BB to node 0" pinned_some "$BB" 0
	lvt_ok "$BB: vCPUs pinned to node 0 ($(lvt_node_cpus 0)) after $(lvt_since "$t") s: \
$(lvt_vcpupins "$BB")"
	lvt_wait_for $MOVE_WAIT_S ">= 90 % of $A's RAM on node 1" ram_on "$A" 1
	T_A1=$(lvt_since "$t")
	lvt_ok "$A's RAM on node 1 after $T_A1 s: $(lvt_ram_nodes "$(lvt_qemu_pid "$A")")"
	lvt_wait_for $MOVE_WAIT_S ">= 90 % of $BB's RAM on node 0" ram_on "$BB" 0
	lvt_ok "$BB's RAM on node 0 after $(lvt_since "$t") s: $(lvt_ram_nodes \
		"$(lvt_qemu_pid "$BB")")"
	for n in "$A" "$BB"; do
		lvt_check "$(jctl vminfo "$n")" ".counters.pages_migrated >= $((DOM_MEM_MIB * 256 / 2))" \
			"vminfo $n: vnumad counts the pages it moved"
	done
	lvt_ok "vnumad counts the pages: $A $(jctl vminfo "$A" | jq .counters.pages_migrated), \
$BB $(jctl vminfo "$BB" | jq .counters.pages_migrated)"
	pins_all_check "$A" 1 "step 1"
	pins_all_check "$BB" 0 "step 1"
	pins_once_check "step 1"
}

# Step 3: a policy change through vnumactl; A comes back to node 0.
guest_policy_change() {
	t=$(lvt_uptime)
	out=$(ctl policy "$A" --nodes 0 2>&1) || lvt_fail "vnumactl policy $A --nodes 0: $out"
	m=$(lvt_virsh metadata "$A" "$LVT_NS" 2>&1)
	case $m in
	*'nodes="0"'*) ;;
	*) lvt_fail "$A's live metadata after vnumactl policy --nodes 0: $m" ;;
	esac
	lvt_wait_for 10 "policy $A showing nodes 0" policy_nodes "$A" 0
	lvt_wait_for $PIN_WAIT_S "vnumad pinning $A to node 0" pinned_some "$A" 0
	lvt_ok "vnumactl policy $A --nodes 0: in its metadata; vCPUs on node 0 after \
$(lvt_since "$t") s"
	lvt_wait_for $MOVE_WAIT_S ">= 90 % of $A's RAM back on node 0" ram_on "$A" 0
	T_A0=$(lvt_since "$t")
	lvt_ok "$A's RAM back on node 0 after $T_A0 s: $(lvt_ram_nodes "$(lvt_qemu_pid "$A")")"
	pins_all_check "$A" 0 "step 3"
}

# B's move is under way: vnumad says B is moving, and part of B's RAM is on node 1 already.
# (vnumad moves at most a policy rate's worth of memory per round, so its pending_mib is 0
# between rounds: numa_maps tells how far the move got.)
b_moving() {
	pid=$(lvt_qemu_pid "$BB")
	pct=$(lvt_ram_pct "$pid" 1)
	st=$(jctl list | jq -r --arg b "$BB" '.vms[] | select(.name == $b) | .state')
	[ "$st" = moving ] && [ "${pct:-0}" -ge 1 ] && [ "${pct:-100}" -lt 90 ] || {
		echo "$BB: state $st; numa_maps: $(lvt_ram_nodes "$pid")"
		return 1
	}
}

b_gone() {
	jctl list | jq -e --arg a "$A" --arg b "$BB" \
		'[.vms[].name] | index($b) == null and index($a) != null'
}

# Step 4: B destroyed in the middle of a move.
guest_destroy_mid_move() {
	out=$(ctl policy "$BB" --nodes 1 --rate "$SLOW_RATE" 2>&1) ||
		lvt_fail "vnumactl policy $BB --nodes 1 --rate $SLOW_RATE: $out"
	lvt_wait_for 30 "$BB's move to node 1 under way" b_moving
	moving="$(lvt_ram_nodes "$(lvt_qemu_pid "$BB")")"
	r1=$(jctl status | jq .rounds)
	t=$(lvt_uptime)
	out=$(lvt_virsh destroy "$BB" 2>&1) || lvt_fail "virsh destroy $BB: $out"
	lvt_wait_for $LEAVE_WAIT_S "$BB leaving vnumactl list" b_gone
	lvt_ok "virsh destroy $BB during its move (RAM $moving): gone from vnumactl list after \
$(lvt_since "$t") s"
	sleep 4
	s=$(jctl status) || lvt_fail "vnumad stopped answering after $BB was destroyed"
	kill -0 "$VPID" 2>/dev/null || lvt_fail "vnumad exited after $BB was destroyed"
	r2=$(printf '%s' "$s" | jq .rounds)
	[ "$r2" -gt "$r1" ] || lvt_fail "rounds do not advance after the destroy ($r1 -> $r2)"
	e=$(jctl events --limit 500)
	printf '%s' "$e" >"$OUT/events.json"
	printf '%s' "$e" | jq -e --arg b "$BB" \
		'[.events[] | select(.vm == $b and .kind == "leave")] | length == 1' >/dev/null ||
		lvt_fail "no leave event for $BB: $(printf '%s' "$e" | jq -c .)"
	printf '%s' "$e" | jq -e '[.events[] | select(.kind == "error")] | length == 0' \
		>/dev/null || lvt_fail "error events: $(printf '%s' "$e" |
		jq -c '[.events[] | select(.kind == "error")]')"
	lvt_check "$(jctl list)" ".vms | length == 1" "list after the destroy: only $A"
	lvt_ok "vnumad keeps running: rounds $r1 -> $r2, a leave event for $BB, no error event"
}

a_sampled() {
	jctl vminfo "$A" | jq -e '.sampling_source == "fault-stats"'
}

pte_updates() {
	awk '$1 == "numa_pte_updates" { print $2 }' /proc/vmstat
}

# At least A's RAM's worth of pages made PROT_NONE by the NUMA scanner since u0.
scanned() {
	[ "$(pte_updates)" -ge $((u0 + DOM_MEM_MIB * 256)) ]
}

# Step 5: the kernel's NUMA balancing on; A moves to node 1 again.
guest_balancing_move() {
	echo 1 >/proc/sys/kernel/numa_balancing || lvt_fail "cannot set kernel.numa_balancing=1"
	t=$(lvt_uptime)
	lvt_wait_for 30 "vminfo $A: sampling from NUMA fault statistics" a_sampled
	lvt_ok "kernel.numa_balancing=1: vnumad samples $A's faults after $LVT_WAITED s"
	# Let the scanner go over A's RAM (256 MiB a pass, a pass a second at most).
	u0=$(pte_updates)
	# How far it got is only reported: a halted domain's QEMU seldom runs at a scheduler tick,
	# when the kernel's scanning happens, so it may take a while.
	i=0
	while ! scanned && [ $i -lt 40 ]; do
		sleep 0.5
		i=$((i + 1))
	done
	lvt_say "the NUMA scanner made $(($(pte_updates) - u0)) pages PROT_NONE in $(lvt_since "$t") s \
(A's RAM: $((DOM_MEM_MIB * 256)) pages)"
	t=$(lvt_uptime)
	out=$(ctl policy "$A" --nodes 1 2>&1) || lvt_fail "vnumactl policy $A --nodes 1: $out"
	lvt_wait_for $PIN_WAIT_S "vnumad pinning $A to node 1" pinned_some "$A" 1
	lvt_ok "vnumactl policy $A --nodes 1: vCPUs on node 1 after $(lvt_since "$t") s"
	if out=$(lvt_wait_for $MOVE_WAIT_S ">= 90 % of $A's idle RAM on node 1 with \
kernel.numa_balancing=1" ram_on "$A" 1); then
		T_A1B=$(lvt_since "$t")
		lvt_ok "$A's RAM on node 1 after $T_A1B s: $(lvt_ram_nodes "$(lvt_qemu_pid "$A")")"
	else
		LATE_FAIL="$LATE_FAIL
    step 5: $out
    vminfo $A: $(jctl vminfo "$A" | jq -c '{home, state, pending_mib, resident_mib,
		resident_source, resident_age_s, resident_err_mib, sampling_source, counters}')"
		guest_evidence step-5
		lvt_say "FAIL (noted, the test goes on): step 5: $out"
	fi
}

guest_stop() {
	lvt_vnumad_stop
	# Besides start and stop, only what vnumad did and who asked (vnumad(8), LOGGING): no
	# warning, no error event.
	noise=$(grep -v -E -e '^vnumad: vnumad [0-9.]* running on the libvirt host' \
		-e '^vnumad: stopping$' -e '^vnumad: restored the original affinity of [0-9]* vCPUs$' \
		-e '^vnumad: (arrive|leave|pin|move|bind|sampling|policy|pause|resume|reload|place): ' \
		-e '^vnumad: request [a-z]+ .* from uid [0-9]+ [(]pid [0-9]+[)]: done$' \
		"$OUT/vnumad.err")
	[ -z "$noise" ] || lvt_fail "vnumad's stderr has more than its start, stop and action lines: $noise"
	grep -q '^vnumad: request policy {"vm":"'"$A"'","nodes":"1"} from uid 0 (pid [0-9]*): done$' \
		"$OUT/vnumad.err" || lvt_fail "vnumad's log does not say who changed $A's policy"
	grep -q "^vnumad: move: $A: " "$OUT/vnumad.err" || lvt_fail "vnumad's log has no move of $A"
	lvt_ok "SIGTERM: vnumad exited 0; its stderr: $(tr '\n' '|' <"$OUT/vnumad.err")"
	restored_check
	nodeset_is "$C" "$P" >/dev/null ||
		lvt_fail "after SIGTERM: $C's live nodeset is '$(live_nodeset "$C")', not $P as vnumad found it"
	sleep 2 # the kernel's move back
	lvt_ok "SIGTERM: $C's live nodeset back to $P (RAM now $(lvt_ram_nodes "$(lvt_qemu_pid "$C")"))"
}

# After SIGTERM A's vCPUs are back where libvirt first put them (every CPU: the domains have
# no <vcpupin>), and libvirt knows it: vnumad put them back through libvirt, so virsh
# vcpupin and the threads' own affinity agree.
restored_check() {
	all=$(cat /sys/devices/system/cpu/online)
	want=$(pins_want "$all")
	got=$(lvt_vcpupins "$A")
	[ "$got" = "$want" ] ||
		lvt_fail "after SIGTERM: virsh vcpupin $A: $got (want $want, the original affinity)"
	pid=$(lvt_qemu_pid "$A")
	for task in /proc/"$pid"/task/*; do
		case $(cat "$task/comm") in
		'CPU '*)
			c=$(awk '/^Cpus_allowed_list:/ { print $2 }' "$task/status")
			[ "$c" = "$all" ] || lvt_fail "after SIGTERM: $A's thread $(cat "$task/comm") \
allowed on $c (virsh vcpupin says $got)"
			;;
		esac
	done
	lvt_ok "SIGTERM: $A's vCPUs back on CPUs $all, through libvirt (virsh vcpupin: $got)"
	e=$(lvt_emulatorpin "$A")
	[ "$e" = "$(lvt_node_cpus 0)" ] ||
		lvt_fail "after SIGTERM: virsh emulatorpin $A: $e (want $(lvt_node_cpus 0), its <emulatorpin>)"
	lvt_ok "SIGTERM: $A's emulator threads back on its <emulatorpin> (CPUs $e)"
}

# On failure: what vnumad, libvirt and the kernel said, into OUT/evidence-WHEN.txt.
guest_evidence() {
	{
		for c in status list events; do
			echo "--- vnumactl $c ---"
			ctl --json $c 2>&1
		done
		for n in $A $BB $C; do
			for c in vminfo explain stats; do
				echo "--- vnumactl $c $n ---"
				ctl --json $c "$n" 2>&1
			done
			echo "--- virsh vcpupin/emulatorpin/numatune/metadata $n ---"
			lvt_virsh vcpupin "$n" 2>&1
			lvt_virsh emulatorpin "$n" 2>&1
			lvt_virsh numatune "$n" 2>&1
			lvt_virsh metadata "$n" "$LVT_NS" 2>&1
			pid=$(lvt_qemu_pid "$n")
			[ -n "$pid" ] || continue
			echo "--- /proc/$pid/numa_maps ($n) ---"
			cat "/proc/$pid/numa_maps"
			echo "--- /proc/$pid/status ($n) ---"
			grep -E 'allowed|Threads' "/proc/$pid/status"
		done
		echo "--- /proc/vmstat (migrations) ---"
		grep -E 'pgmigrate|numa_' /proc/vmstat
		echo "--- nodes ---"
		grep -E 'MemFree|MemTotal' /sys/devices/system/node/node*/meminfo
	} >"$OUT/evidence-$1.txt" 2>&1
	lvt_say "evidence (vnumactl, virsh, numa_maps) in $OUT/evidence-$1.txt"
}

guest_cleanup() {
	rc=$?
	trap - EXIT
	[ $rc -ne 0 ] && [ -n "$VPID" ] && guest_evidence end
	[ -n "$VPID" ] && kill -9 "$VPID" 2>/dev/null
	cp /var/log/libvirt/qemu/*.log "$OUT/" 2>/dev/null
	for dom in $A $BB $C; do
		lvt_virsh destroy "$dom" >/dev/null 2>&1
		lvt_virsh undefine "$dom" >/dev/null 2>&1
	done
	lvt_libvirtd_stop
	exit $rc
}

guest_main() {
	OUT=${NUMA_HOST_OUT:?}
	RUN=/run/vnumad-test
	SOCK=$RUN/vnumad.sock
	BOOT=/var/lib/libvirt/boot/vnumad-test
	VNUMAD=${VNUMAD_BINDIR:?}/agent/vnumad
	CTL=$VNUMAD_BINDIR/agent/vnumactl
	A=vnumad-test-a
	BB=vnumad-test-b
	C=vnumad-test-c
	T_C=- T_C0=- P=
	VPID='' LATE_FAIL='' T_A1B=-
	trap guest_cleanup EXIT
	lvt_t0_set
	guest_mounts
	guest_libvirt_trim
	mkdir -p "$RUN" "$BOOT"
	# libvirtd asks /usr/bin/numad for placement='auto' domains: vnumad's shim answers (C)
	# (through a wrapper that logs each question and answer, and what vnumactl said, in
	# OUT/numad.log)
	[ -e /usr/bin/numad ] || lvt_fail "no /usr/bin/numad to put vnumad's shim over (numad)"
	cat >"$RUN/numad" <<EOF
#!/bin/sh
answer=\$("$VNUMAD_SRCDIR/packaging/vnumad-numad-shim" "\$@")
{
	echo "numad \$*: \$answer"
	"$CTL" -c "$SOCK" place --vcpus "\${2%%:*}" --memory "\${2#*:}M" 2>&1 | sed 's/^/  /'
} >>"$OUT/numad.log" 2>&1
echo "\$answer"
EOF
	chmod 755 "$RUN/numad" && mount --bind "$RUN/numad" /usr/bin/numad ||
		lvt_fail "cannot put vnumad's shim over /usr/bin/numad"
	export VNUMACTL="$CTL" VNUMAD_SOCKET="$SOCK"
	caps_seed
	lvt_libvirtd_start || lvt_fail "libvirtd did not come up"
	T_LIBVIRTD=$(lvt_since)
	caps_save
	lvt_halt_kernel "$BOOT/halt.bin" && chmod 644 "$BOOT/halt.bin" ||
		lvt_fail "cannot write the halt kernel"
	t=$(lvt_uptime)
	define_xml "$A" "nodes='1'" 0
	define_xml "$BB" "nodes='0'" 1
	start_all "$A" "$BB"
	T_DOMS=$(lvt_since "$t")
	lvt_ok "$A and $BB started in $T_DOMS s; RAM: $A $(lvt_ram_nodes "$(lvt_qemu_pid "$A")"), \
$BB $(lvt_ram_nodes "$(lvt_qemu_pid "$BB")")"
	[ "$(lvt_ram_pct "$(lvt_qemu_pid "$A")" 0)" -ge 90 ] ||
		lvt_fail "$A's RAM was not first touched on node 0: $(lvt_ram_nodes \
			"$(lvt_qemu_pid "$A")")"
	vnumad_start
	guest_listed
	guest_first_placement
	guest_policy_change
	guest_destroy_mid_move
	guest_placed_start
	guest_balancing_move
	guest_stop
	echo "time: libvirtd up at $T_LIBVIRTD s, domains started in $T_DOMS s, A's RAM to node 1 \
in $T_A1 s, back to node 0 in $T_A0 s, C started placed in $T_C s and moved in $T_C0 s, A to \
node 1 with NUMA balancing in $T_A1B s, guest part \
$(lvt_since) s"
	[ -z "$LATE_FAIL" ] || lvt_fail "earlier:$LATE_FAIL"
	echo "nested libvirt checks passed"
}

if [ "${1:-}" = --guest ]; then
	guest_main
	exit
fi

# ---- On the host --------------------------------------------------------------------------

. "$SYS/hostlib.sh"
sys_host_init " (cmd.log: the checks; vnumad.err: vnumad's log; *.log: libvirt's QEMU logs;" \
	"evidence-*.txt: vnumactl, virsh, numa_maps at each failure; console.log: the console)"

sh "$HARNESS" check || exit
missing=$(lvt_missing)
if [ -n "$missing" ]; then
	echo "SKIP: not installed: $missing (packaging/install-system-deps.sh installs them)"
	exit 77
fi
T_RUN=$(date +%s.%N)
# Where libvirt's QEMU capabilities are kept between runs (see caps_seed).
# shellcheck source=numa-host.sh
CAPS=$(NUMA_HOST_LIB=1 . "$HARNESS" && NH_OUT=$D nh_cache_dir)/libvirt-qemu-caps
sh "$HARNESS" run --nodes 2 --mem $HOST_MEM_MIB --timeout $HOST_TIMEOUT_S --out "$D" \
	--env LVT_CAPS_DIR="$CAPS" -- sh "$SYS/test_libvirt_nested.sh" --guest
rc=$?
if [ -n "$(ls "$D/caps" 2>/dev/null)" ] && mkdir -p "$CAPS" 2>/dev/null; then
	cp "$D"/caps/*.xml "$CAPS/" 2>/dev/null
fi
echo "time: the whole nested run took $(awk -v a="$T_RUN" -v b="$(date +%s.%N)" \
	'BEGIN { printf "%.1f", b - a }') s"
[ $rc -eq 0 ] || {
	echo "FAIL: the nested libvirt checks failed with status $rc (see $D/)"
	exit 1
}
echo "nested libvirt test passed"
