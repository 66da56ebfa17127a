#!/bin/sh
# System test (issue 5, item 7): the same 2-node host, in one boot, balanced four ways, side by
# side.  Each run starts the same vnuma-load VMs afresh with the same wrong placement (all their
# RAM first-touched on node 0, vCPUs floating), then lets one policy work for RUN_S seconds:
#
#   none    no daemon, kernel.numa_balancing=0: the start state, left alone
#   kernel  kernel.numa_balancing=1 alone: the kernel's automatic NUMA balancing
#   numad   Debian's numad (numad -i 15 -u 100), kernel.numa_balancing=0
#   vnumad  vnumad --host linux, kernel.numa_balancing=1 (vnumad reads its hinting faults);
#           started before the VMs and paused until the run starts (guest_policy_prepare)
#
# numad runs without the kernel's balancing, as its documentation asks, at Debian's interval
# (-i 15, as numad.service) and with -u 100: its man page's setting for workloads sized to fit
# a node exactly, which these are (a 2-vCPU VM on a 2-CPU node; at its default target of 85 %
# numad takes a busy 2-vCPU VM as too big for any node here).  numad also ignores every process
# until the system has been up for 300 s, longer than this guest lives, so it runs in a time
# namespace whose monotonic clock is an hour ahead (vmlib.sh, vl_numad_start).
#
# The VMs (vmlib.sh measures them every 2 s):  a: 2 vCPUs, 384 MiB;  b: 1 vCPU, 320 MiB; on
# 2 nodes x 2 CPUs x 2 GiB.  Three busy vCPU threads on four CPUs leave numad the free CPU it
# needs to act.  Each VM fits one node; the best placement puts a and b on different nodes,
# each with all its RAM: host locality 1.
#
# Output: a table, per policy: final host locality (the mean over the last 10 s of the run),
# locality at LOC_TIMES seconds, time to converge (the first sample after which host locality
# stays >= 0.9 to the end of the run, or never), pages migrated (pgmigrate_success delta in
# /proc/vmstat: the kernel's balancing, migrate_pages and move_pages alike), VMs whole at the
# end (all vCPUs on one node with >= 90 % of the RAM there), vCPUs per node at the end against
# the node's CPUs (locality alone does not show VMs stacked on one node), and the lowest free
# memory of any node.  Printed, and written with the raw samples to
# $VNUMAD_BINDIR/tests/system-results/side_by_side.{md,tsv,json}; the TSV and JSON also have
# the VMs' accesses per second (vnuma-load's mean over its run: emulated nodes are equally
# fast, so it shows CPU contention, and it moves with the load on the machine running QEMU).
#
# Fails (after printing the table) when vnumad's final locality is below the best other
# policy's final locality minus TOLERANCE, when no policy converges and vnumad neither, or when
# vnumad could not run.  Converging more than one sample period (the resolution of the times)
# later than the earliest other policy is printed as a NOTE and fails only with
# VNUMAD_SIDE_BY_SIDE_STRICT=1: the issue asks for "sooner", but on this emulated host the
# order of vnumad and the kernel's own balancing changes from run to run (vnumad 16-49 s,
# kernel 21 s and later), and a test that fails at random would only hide real failures.
# Skips (77) only when QEMU or the kernel is missing.  Takes about 6 minutes on a quiet
# 2-core machine; up to 15 on one that runs other jobs too.
#
# `test_side_by_side.sh --guest OUTDIR` is the part that runs inside the guest.
set -u

# Seconds each policy runs, from the moment the VMs have touched their RAM.
RUN_S=60
# Times (seconds into a run) at which the table shows the host locality.
LOC_TIMES="10 30 60"
# How far below the best other policy's final locality vnumad's may end and still pass.
TOLERANCE=0.02
# 1: converging later than a peer fails the test too (default 0: a NOTE).
STRICT=${VNUMAD_SIDE_BY_SIDE_STRICT:-0}
# Guest memory, MiB: 2 GiB per node, so that node 0 holds every VM's RAM with room to spare.
GUEST_MEM_MIB=4096
# QEMU is killed after this many seconds: four runs of RUN_S plus the VMs' start-up (15-25 s
# each under TCG) fit with room, also on a machine that runs other jobs.
GUEST_TIMEOUT_S=900
# The policies, in the order they run; VNUMAD_SIDE_BY_SIDE_POLICIES (passed into the guest as
# every VNUMAD_* variable is) runs a subset, for debugging: the verdict then compares vnumad
# with the policies that ran.
POLICIES=${VNUMAD_SIDE_BY_SIDE_POLICIES:-none kernel numad vnumad}
SCENARIO="VMs a (2 vCPUs, 384 MiB) and b (1 vCPU, 320 MiB), all RAM first-touched on node 0, vCPUs floating"

# ---- Inside the guest ---------------------------------------------------------------------

# The scenario: the same VMs for every policy.
guest_vms_start() {
	vl_vm_start a 2 384 0
	vl_vm_start b 1 320 0
}

# Start policy $1 (kernel.numa_balancing is 0 until then).
guest_policy_start() {
	case $1 in
	none) ;;
	kernel) vl_balancing 1 ;;
	numad) vl_numad_start -i 15 -u 100 ;;
	vnumad)
		# The sampler watches vnumad (its state and kernel stack in "daemon" lines): it
		# started before the sampler, which did not know it yet.
		[ -z "$VL_WATCH" ] || [ -z "$VL_VNUMAD_PID" ] || echo "$VL_VNUMAD_PID" >"$VL_WATCH"
		vl_balancing 1
		[ -n "$VL_VNUMAD_PID" ] && vl_ctl resume >/dev/null
		;;
	esac
}

# Before the VMs start: vnumad is started, and paused until t0 (it watches but does not act).
# An administrator's vnumad runs before the VMs do; started after them, it would lose seconds
# to the emulation (before the libvirt backend became a module, 60 shared libraries took 5-50
# s to load under TCG with the VMs running), time in which the kernel's balancing, on for
# vnumad's run, would work alone.
guest_policy_prepare() {
	case $1 in
	vnumad)
		vl_vnumad_start "$R/vnumad" "log_level = debug" &&
			vl_ctl_retry "$VL_DAEMON_WAIT_S" pause >/dev/null
		;;
	esac
}

guest_policy_stop() {
	case $1 in
	numad)
		vl_numad_stop
		cp /var/log/numad.log "$R/numad.log"
		;;
	vnumad)
		[ -z "$VL_VNUMAD_PID" ] || {
			vl_vnumad_dump brief
			POLICY_NOTE="vnumad_hint_faults=$(vl_json_num hint_faults <"$R/vnumad/ctl-stats.json")"
			POLICY_NOTE="$POLICY_NOTE vnumad_pages_migrated=$(vl_json_num pages_migrated \
				<"$R/vnumad/ctl-stats.json") ctl_failures=$VL_CTL_FAILS"
		}
		vl_vnumad_stop
		[ "$VL_VNUMAD_RC" -eq 0 ] || {
			vl_say "vnumad exited with status $VL_VNUMAD_RC"
			POLICY_NOTE="$POLICY_NOTE exit_status=$VL_VNUMAD_RC"
		}
		;;
	esac
	vl_balancing 0
}

# One run: fresh VMs, policy $1 for RUN_S seconds, samples in R/$1.samples, one summary line
# (vl_series_summary) appended to R/summary.
guest_run() {
	p=$1
	vl_say "---- run $p"
	vl_balancing 0
	ok=yes POLICY_NOTE=''
	guest_policy_prepare "$p" || ok=no
	guest_vms_start
	vl_vms_wait
	vl_t0_set
	vl_sampler_start "$R/$p.samples"
	guest_policy_start "$p" || ok=no
	# The run ends RUN_S seconds after t0, however long the policy took to start.
	vl_sleep_until $RUN_S
	vl_sampler_stop
	vl_sample >>"$R/$p.samples"
	guest_policy_stop "$p"
	vl_vm_table "$R/$p.samples"
	vl_vms_stop
	acc=$(vl_vms_acc_s a b)
	for v in a b; do mv "$VL_DIR/$v.out" "$R/$p-$v.out"; done
	sum="$(vl_series_summary "$R/$p.samples" "$LOC_TIMES") acc_s=$acc"
	[ $ok = yes ] || sum="$sum error=did_not_start"
	echo "policy=$p $sum${POLICY_NOTE:+ $POLICY_NOTE}" >>"$R/summary"
	vl_say "$p: $sum"
}

# The table from R/summary in format $1: md, tsv or json (one awk: starting programs in the
# guest is slow).
guest_table() {
	awk -v fmt="$1" -v times="$LOC_TIMES" -v run_s=$RUN_S -v conv="$VL_CONVERGED_LOCALITY" \
		-v tol=$TOLERANCE -v verdict="$VERDICT" -v reasons="$REASONS" -v scenario="$SCENARIO" '
	function bal(p) { return (p == "kernel" || p == "vnumad") ? 1 : 0 }
	function num(v) { return (v == "" || v == "never") ? "null" : v }
	BEGIN {
		nt = split(times, tl, " ")
		if (fmt == "md") {
			printf "| policy | kernel.numa_balancing | final locality |"
			for (j = 1; j <= nt; j++)
				printf " at %s s |", tl[j]
			printf " converged at (s) | pages migrated | VMs whole | vCPUs/CPUs per node | min free %% |\n|---|---|---|"
			for (j = 1; j <= nt; j++)
				printf "---|"
			printf "---|---|---|---|---|\n"
		} else if (fmt == "tsv") {
			printf "policy\tbalancing\tfinal_locality"
			for (j = 1; j <= nt; j++)
				printf "\tloc_%s", tl[j]
			printf "\tconverge_s\tpages_migrated\tnuma_pages_migrated\tvms_whole\tvcpu_load\tacc_s\tmin_free_pct\tsamples\tend_s\terror\n"
		} else {
			printf "{\n  \"test\": \"side_by_side\",\n  \"nodes\": 2,\n  \"run_s\": %s,\n", run_s
			printf "  \"scenario\": \"%s\",\n  \"converged_locality\": %s,\n", scenario, conv
			printf "  \"tolerance\": %s,\n  \"policies\": [\n", tol
		}
	}
	{
		split("", f)
		for (i = 1; i <= NF; i++) {
			p = index($i, "=")
			f[substr($i, 1, p - 1)] = substr($i, p + 1)
		}
		p = f["policy"]
		if (fmt == "md") {
			printf "| %s | %d | %s |", p, bal(p), f["final_locality"]
			for (j = 1; j <= nt; j++)
				printf " %s |", f["loc_" tl[j]]
			vl = f["vcpu_load"]
			gsub(/,/, " ", vl)
			printf " %s | %s | %s | %s | %s |%s\n", f["converge_s"], f["migrated"], f["whole"], vl, f["min_free_pct"], ("error" in f) ? " " f["error"] : ""
		} else if (fmt == "tsv") {
			printf "%s\t%d\t%s", p, bal(p), f["final_locality"]
			for (j = 1; j <= nt; j++)
				printf "\t%s", f["loc_" tl[j]]
			printf "\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f["converge_s"], f["migrated"], f["numa_migrated"], f["whole"], f["vcpu_load"], f["acc_s"], f["min_free_pct"], f["samples"], f["end_s"], f["error"]
		} else {
			printf "%s    {\"policy\": \"%s\", \"balancing\": %d, \"final_locality\": %s, \"locality_at\": {", sep, p, bal(p), num(f["final_locality"])
			for (j = 1; j <= nt; j++)
				printf "%s\"%s\": %s", (j > 1 ? ", " : ""), tl[j], num(f["loc_" tl[j]])
			printf "}, \"converge_s\": %s, \"pages_migrated\": %s, \"numa_pages_migrated\": %s, ", num(f["converge_s"]), num(f["migrated"]), num(f["numa_migrated"])
			printf "\"vms_whole\": \"%s\", \"vcpu_load\": \"%s\", \"acc_s\": %s, \"min_free_pct\": %s, \"samples\": %s, ", f["whole"], f["vcpu_load"], num(f["acc_s"]), num(f["min_free_pct"]), num(f["samples"])
			if ("ctl_failures" in f)
				printf "\"vnumad_hint_faults\": %s, \"vnumad_pages_migrated\": %s, \"ctl_failures\": %s, ", num(f["vnumad_hint_faults"]), num(f["vnumad_pages_migrated"]), f["ctl_failures"]
			printf "\"error\": %s}", ("error" in f) ? "\"" f["error"] "\"" : "null"
			sep = ",\n"
		}
	}
	END {
		if (fmt == "json")
			printf "\n  ],\n  \"verdict\": \"%s\",\n  \"reasons\": \"%s\"\n}\n", verdict, reasons
	}' "$R/summary"
}

# Notes under the table: vnumad's own counters, and how many vnumactl requests got no reply.
guest_notes() {
	awk '
	{
		split("", f)
		for (i = 1; i <= NF; i++) {
			p = index($i, "=")
			f[substr($i, 1, p - 1)] = substr($i, p + 1)
		}
	}
	f["policy"] == "vnumad" && ("ctl_failures" in f) {
		printf "vnumad counters (vnumactl stats): hint_faults %s, pages_migrated %s.\n", f["vnumad_hint_faults"], f["vnumad_pages_migrated"]
		if (f["ctl_failures"] > 0)
			printf "WARNING: %s vnumactl requests got no reply within 10 s.\n", f["ctl_failures"]
		if ("exit_status" in f)
			printf "WARNING: vnumad exited with status %s on SIGTERM.\n", f["exit_status"]
		print ""
	}' "$R/summary"
}

# The verdict: VERDICT pass or fail, REASONS why.
guest_verdict() {
	VERDICT=pass REASONS=''
	v=$(grep '^policy=vnumad ' "$R/summary")
	eval "$(awk -v tol=$TOLERANCE -v ctol="$VL_SAMPLE_S" '
	{
		split("", f)
		for (i = 1; i <= NF; i++) {
			p = index($i, "=")
			f[substr($i, 1, p - 1)] = substr($i, p + 1)
		}
		if (f["policy"] == "vnumad") {
			vf = f["final_locality"] + 0
			vc = f["converge_s"]
			verr = ("error" in f)
			next
		}
		if (bestf == "" || f["final_locality"] + 0 > bestf) {
			bestf = f["final_locality"] + 0
			bestfp = f["policy"]
		}
		if (f["converge_s"] != "never" && (bestc == "" || f["converge_s"] + 0 < bestc)) {
			bestc = f["converge_s"] + 0
			bestcp = f["policy"]
		}
	}
	END {
		r = ""
		if (verr || vc == "")
			r = r "vnumad did not run; "
		else {
			if (vf < bestf - tol)
				r = r sprintf("vnumad final locality %.3f < %s best %.3f - %s; ", vf, bestfp, bestf, tol)
			if (bestc == "" && vc == "never")
				r = r "no policy converged, vnumad neither; "
			else if (bestc != "" && (vc == "never" || vc + 0 > bestc + ctol))
				n = n sprintf("vnumad converged at %s s, later than %s at %.1f s (+%s s); ", vc, bestcp, bestc, ctol)
		}
		printf "REASONS=\"%s\"\nNOTES=\"%s\"\n", r, n
	}' "$R/summary")"
	[ -n "$v" ] || REASONS="no vnumad run; $REASONS"
	# Converging later than a peer fails only with STRICT=1 (see the header).
	[ "$STRICT" = 1 ] && REASONS="$REASONS$NOTES" && NOTES=''
	[ -z "$NOTES" ] || echo "NOTE: ${NOTES%; } (not a failure unless VNUMAD_SIDE_BY_SIDE_STRICT=1)"
	[ -z "$REASONS" ] || VERDICT=fail
	REASONS=${REASONS%; }
}

guest_main() {
	R=$1/results
	mkdir -p "$R" || exit 1
	: >"$R/summary"
	# shellcheck source=tests/system/vmlib.sh
	. "${VNUMAD_SRCDIR:?}/tests/system/vmlib.sh"
	VL_DIR=$TMPDIR/vmlib
	vl_init
	vl_say "nodes: $VL_NODES; CPUs: $VL_CPU_NODE"
	for p in $POLICIES; do guest_run "$p"; done
	guest_verdict
	{
		echo "# Side by side on an emulated 2-node host"
		echo
		echo "$SCENARIO; 2 nodes x 2 CPUs x 2 GiB under QEMU TCG."
		echo "Each policy ran $RUN_S s on fresh VMs; samples every $VL_SAMPLE_S s. Final locality:"
		echo "the mean over the last 10 s. Converged: host locality >= $VL_CONVERGED_LOCALITY from"
		echo "that sample to the end of the run. numad: \`numad -i 15 -u 100\`, its monotonic clock"
		echo "an hour ahead (it ignores processes during the first 300 s of uptime)."
		echo
		guest_table md
		echo
		guest_notes
		echo "Verdict: $VERDICT${REASONS:+ ($REASONS)}"
	} >"$R/side_by_side.md"
	guest_table tsv >"$R/side_by_side.tsv"
	guest_table json >"$R/side_by_side.json"
	echo
	cat "$R/side_by_side.md"
	[ $VERDICT = pass ]
}

if [ "${1:-}" = --guest ]; then
	guest_main "${2:?}"
	exit
fi

# ---- On the host --------------------------------------------------------------------------

SYS=${VNUMAD_SRCDIR:?}/tests/system
. "$SYS/hostlib.sh"
sys_host_init "/host (cmd.log: the guest's output; results/: samples, numad.log," \
	"vnumad/: vnumad.log and what vnumactl said)"
RESULTS=$VNUMAD_BINDIR/tests/system-results

sh "$HARNESS" check || exit
t0=$(date +%s)
sh "$HARNESS" run --nodes 2 --mem $GUEST_MEM_MIB --timeout $GUEST_TIMEOUT_S --out "$D/host" \
	-- sh "$SYS/test_side_by_side.sh" --guest "$D/host"
rc=$?
echo "time: the side-by-side boot took $(($(date +%s) - t0)) s"
if [ -f "$D/host/results/side_by_side.md" ] && mkdir -p "$RESULTS" &&
	cp "$D/host/results/side_by_side".* "$RESULTS/"; then
	for p in $POLICIES; do
		[ ! -f "$D/host/results/$p.samples" ] ||
			cp "$D/host/results/$p.samples" "$RESULTS/side_by_side-$p.samples"
	done
	echo "results in $RESULTS/side_by_side.{md,tsv,json} (raw samples: side_by_side-*.samples)"
else
	echo "no results written"
fi
[ $rc -eq 0 ] || echo "FAIL: the side-by-side run ended with status $rc"
exit $rc
