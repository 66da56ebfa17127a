#!/bin/sh
# vmlib.sh - guest-side helpers of the system tests that balance vnuma-load VMs: sourced (POSIX
# sh: dash or busybox) inside the emulated NUMA host of numa-host.sh by test_vnumad_linux.sh and
# test_side_by_side.sh.  Nothing runs when it is sourced.
#
# VMs.  vl_vm_start NAME VCPUS MEM_MIB NODE [VNUMA-LOAD OPTION]... starts a vnuma-load "VM"
# ($VNUMAD_BINDIR/guest-tools/vnuma-load) whose RAM is first-touched on NODE and whose vCPUs
# float; vl_vms_wait waits until every VM has touched its RAM (vnuma-load starts its vCPU
# threads only after that); vl_vms_stop ends them all.
#
# Measuring.  A sample is one "vm" line per VM and one "host" line, of key=value fields:
#
#   vm t=12.0 name=a pid=142 ram_mib=400.0 ram=0:380.0,1:20.0 vcpu_cpus=0,3 vcpu_nodes=0,1
#      allowed=0+1/0+1 node=- on_node=0.000 locality=0.525
#   host t=12.0 locality=0.525 ram_mib=800.0 migrated=135709 numa_migrated=135709
#      hint_faults=3080 free=0:1200/1906,1:1980/2014 min_free_pct=62.9 whole=0 cpus=0:2,1:2
#
# - t: seconds since VL_T0 (guest uptime; vl_t0_set sets it).
# - ram: the VM's resident guest RAM per node, MiB, from /proc/PID/numa_maps: the anonymous
#   mapping holding the most resident pages, plus every other anonymous mapping holding at
#   least 1/VL_RAM_MAP_FRACTION of that (so a RAM mapping split in pieces still counts, and
#   thread stacks and heaps do not).  Pages come from the N<node>= fields (a transparent huge
#   page counts as its 512 small pages there).
# - vcpu_cpus / vcpu_nodes: per vCPU thread (comm "CPU n/KVM", in vCPU order), the CPU it last
#   ran on (field 39 of /proc/PID/task/TID/stat) and that CPU's node (nodeN/cpulist).
# - allowed: per vCPU, the nodes its Cpus_allowed_list touches, joined by +.
# - node: the node every vCPU last ran on, or - when they are on different nodes.  A VM started
#   with --cells K (K > 1; vCPU v in cell v * K / vcpus, as vnuma-load has it): the node each
#   cell's vCPUs last ran on, joined by + in cell order, when every cell's vCPUs share a node
#   and no two cells share one; else -.
# - on_node: the fraction of ram_mib on that node (on those nodes for a VM with cells; which
#   cell's RAM is where, vnuma-load's own summary says: vl_cells_check); 0 when node is -.
# - locality: for each vCPU the fraction of the VM's resident RAM on the node it last ran on,
#   averaged over the vCPUs: 1 when every vCPU sits with all of the RAM.  With K cells, the
#   RAM on that node against its cell's share (1/K of the VM's: vnuma-load's cells are equal),
#   at most 1: 1 when every cell's vCPUs sit with as much RAM as a cell has.
# - host locality: the VMs' locality averaged with their ram_mib as weights.
# - migrated / numa_migrated / hint_faults: /proc/vmstat pgmigrate_success (every page
#   migration: the kernel's balancing, move_pages and migrate_pages alike),
#   numa_pages_migrated (the kernel's balancing only) and numa_hint_faults, since boot.
# - free: MemFree/MemTotal per node in MiB (nodeN/meminfo); min_free_pct: the lowest
#   MemFree/MemTotal of any node, in percent.
# - whole: 1 when every VM is "whole": node is not - and on_node >= VL_WHOLE_FRACTION.
# - cpus: the number of CPUs of each node.
#
# With a daemon to watch (vl_vnumad_start, vl_numad_start), each sample also has a line
#
#   daemon t=12.0 pid=184 state=D cpu_s=1.54 wchan=synchronize_rcu_expedited
#      stack=synchronize_rcu_expedited<lru_cache_disable<kernel_move_pages<__x64_sys_move_pages
#
# (its state, CPU seconds, wait channel and the top of its kernel stack), which shows where a
# daemon that stops answering is stuck.
#
# vl_sampler_start FILE appends a sample to FILE every VL_SAMPLE_S seconds in the background
# and keeps FILE.status up to date ("T N": every VM has been whole since the sample at T, in
# the last N samples; "never 0"); vl_sampler_stop ends it; vl_sample prints one sample.
# vl_whole_since FILE computes FILE.status's "T N" from FILE; vl_vm_table FILE prints the last
# sample as a table; vl_series_summary FILE TIMES prints one key=value line of figures over a
# run (final locality, locality at TIMES, time to converge, pages migrated, whole VMs, the
# lowest free memory).
#
# Daemons: vl_vnumad_start/vl_vnumad_dump/vl_vnumad_stop run vnumad --host linux and save what
# vnumactl says about it; vl_numad_start/vl_numad_stop run Debian's numad.
#
# Cost.  Everything the tests do while the VMs run competes with the VMs' busy vCPU threads,
# and under TCG starting a program in a busy guest takes about 0.5 s of CPU: a sampler that
# started an awk every 2 s would eat most of a CPU, and numad, which only acts on nodes with
# idle CPU, would then never act.  So the sampler is one long-lived awk that vmstat wakes
# every VL_SAMPLE_S seconds, and the waiting loops use shell built-ins.

# shellcheck disable=SC2034 # VL_WHOLE_SINCE, VL_VNUMAD_RC...: for the scripts that source this

# Seconds between two samples of vl_sampler_start.
VL_SAMPLE_S=2
# A clock line that reaches the sampler less than this many seconds after its last sample
# ended was queued while that sample ran (uptime counts in hundredths): skipped.
VL_SAMPLE_STALE_S=0.05
# A mapping is guest RAM when it holds at least 1/VL_RAM_MAP_FRACTION of the largest anonymous
# mapping's resident pages: the rule vnumad's discovery uses, 8 by default.
VL_RAM_MAP_FRACTION=8
# A VM is "whole" when all its vCPUs last ran on one node and at least this fraction of its
# resident RAM is there (issue 5: >= 90 %).
VL_WHOLE_FRACTION=0.9
# Host locality that counts as converged (the side-by-side test's "time to converge").
VL_CONVERGED_LOCALITY=0.9
# Seconds to wait for the VMs to touch their RAM (under TCG about 50 MiB/s in all, so 1 GiB
# takes about 20 s; more when the machine is busy).
VL_TOUCH_WAIT_S=180
# How far ahead numad's monotonic clock runs (vl_numad_start), seconds: past numad's 300 s.
VL_NUMAD_CLOCK_S=3600
# Seconds to wait for vnumad's control socket to appear after it starts (2-10 s under TCG),
# and for its answer to the final `vnumactl stats`.
VL_DAEMON_WAIT_S=60

VL_DIR=${VL_DIR:-${TMPDIR:-/tmp}/vmlib}
VL_VMS=''     # "name:pid:mem_mib:cells" words, in start order
VL_SPEC=''    # "name pid cells task...;" per VM, once they are ready (vl_vms_wait)
VL_T0=0       # guest uptime at the start of the measured run (VL_T0_CS: in hundredths)
VL_T0_CS=0
VL_SAMPLER='' # pid of the background sampler (VL_SAMPLER_CLOCK: its vmstat)
VL_SAMPLER_CLOCK='' VL_WATCH=''
VL_AWK='awk'  # awk, with -W interactive for mawk (vl_init)
VL_VNUMAD_PID='' VL_VNUMAD_RC=0 VL_VNUMAD_DIR='' VL_SOCK='' VL_CTL_FAILS=0
VL_NUMAD_PID='' VL_THP_SLEEP=''

vl_say() { echo "[$(vl_now)] $*"; }
vl_die() {
	vl_say "FAIL: $*"
	exit 1
}

# Guest uptime in seconds, as /proc/uptime gives it (two decimals).
vl_now() {
	read -r vl_u _ </proc/uptime
	echo "$vl_u"
}

# Guest uptime in hundredths of a second, in VL_CS; or, given a time in seconds with two
# decimals (as /proc/uptime writes it), that time.
vl_cs() {
	if [ $# -gt 0 ]; then vl_u=$1; else read -r vl_u _ </proc/uptime; fi
	VL_CS=${vl_u%.*}${vl_u#*.}
	while :; do
		case $VL_CS in
		0?*) VL_CS=${VL_CS#0} ;;
		*) break ;;
		esac
	done
}

# Seconds (two decimals) from hundredths $1 to now.
vl_since() {
	vl_cs
	d=$((VL_CS - $1))
	printf '%d.%02d' $((d / 100)) $((d % 100))
}

# Make VL_DIR and learn the topology: VL_NODES ("0 1"), VL_CPU_NODE ("0:0 1:0 2:1 3:1").
vl_init() {
	mkdir -p "$VL_DIR" || vl_die "cannot create $VL_DIR"
	command -v vmstat >/dev/null 2>&1 || vl_die "vmstat (procps) is missing: the sampler needs it"
	# mawk reads a pipe in blocks unless told to read it line by line.
	VL_AWK='awk'
	awk -W version 2>&1 | grep -q mawk && VL_AWK='awk -W interactive'
	VL_NODES='' VL_CPU_NODE=''
	for d in /sys/devices/system/node/node[0-9]*; do
		n=${d##*node}
		VL_NODES="$VL_NODES $n"
		VL_CPU_NODE="$VL_CPU_NODE$(awk -v n="$n" '{
			k = split($0, r, ",")
			for (i = 1; i <= k; i++) {
				if (split(r[i], b, "-") == 1)
					b[2] = b[1]
				for (c = b[1]; c <= b[2]; c++)
					printf " %d:%d", c, n
			}
		}' "$d/cpulist")"
	done
	VL_NODES=${VL_NODES# } VL_CPU_NODE=${VL_CPU_NODE# }
	[ -n "$VL_NODES" ] || vl_die "no NUMA nodes in /sys/devices/system/node"
}

# vl_t0_set: the measured run starts now (VL_T0 in seconds, VL_T0_CS in hundredths).
vl_t0_set() {
	read -r VL_T0 _ </proc/uptime
	vl_cs "$VL_T0"
	VL_T0_CS=$VL_CS
}

# Sleep until $1 seconds after VL_T0 (not at all if that is past).
vl_sleep_until() {
	vl_cs
	d=$((VL_T0_CS + $1 * 100 - VL_CS))
	[ $d -le 0 ] || sleep "$((d / 100)).$((d / 10 % 10))$((d % 10))"
}

# kernel.numa_balancing := $1.
vl_balancing() {
	echo "$1" >/proc/sys/kernel/numa_balancing || vl_die "cannot set kernel.numa_balancing=$1"
}

# ---- VMs ----------------------------------------------------------------------------------

# vl_vm_start NAME VCPUS MEM_MIB NODE [OPTION]...: a vnuma-load VM, output in VL_DIR/NAME.out.
# "--cells K" among the options (with --workload cells) makes it a VM with K guest cells.
vl_vm_start() {
	name=$1 vcpus=$2 mem=$3 node=$4
	shift 4
	load=${VNUMAD_BINDIR:?}/guest-tools/vnuma-load
	[ -x "$load" ] || vl_die "$load is not built"
	cells=1 prev=''
	for o in "$@"; do
		[ "$prev" != --cells ] || cells=$o
		prev=$o
	done
	"$load" --name "$name" --vcpus "$vcpus" --memory "$mem" --node "$node" "$@" \
		>"$VL_DIR/$name.out" 2>&1 &
	VL_VMS="$VL_VMS $name:$!:$mem:$cells"
}

# The vCPU task directories of PID in vCPU order ("CPU 0/KVM" first), space-separated, in
# VL_TASKS; empty before vnuma-load has started its vCPUs.
vl_vcpu_tasks() {
	VL_TASKS='' nr=0
	for t in /proc/"$1"/task/*; do
		c=''
		read -r c 2>/dev/null <"$t/comm" || continue
		case $c in
		"CPU "*/KVM)
			i=${c#CPU }
			eval "vl_task_${i%/KVM}=\$t"
			nr=$((nr + 1))
			;;
		esac
	done
	i=0
	while [ $i -lt $nr ]; do
		eval "VL_TASKS=\"\$VL_TASKS \${vl_task_$i:-}\""
		i=$((i + 1))
	done
}

# Wait until every VM has its vCPU threads, then note them in VL_SPEC ("name pid cells
# task...;" per VM) for the sampler.
vl_vms_wait() {
	vl_cs
	t_start=$VL_CS
	VL_SPEC=''
	for v in $VL_VMS; do
		name=${v%%:*} pid=${v#*:}
		pid=${pid%%:*}
		while vl_vcpu_tasks "$pid" && [ -z "$VL_TASKS" ]; do
			kill -0 "$pid" 2>/dev/null ||
				vl_die "VM $name ended before touching its RAM: $(cat "$VL_DIR/$name.out")"
			vl_cs
			[ $((VL_CS - t_start)) -lt $((VL_TOUCH_WAIT_S * 100)) ] ||
				vl_die "VM $name has not touched its RAM after $VL_TOUCH_WAIT_S s"
			sleep 0.5
		done
		VL_SPEC="$VL_SPEC$name $pid ${v##*:}$VL_TASKS;"
	done
	vl_say "VMs ready after $(vl_since "$t_start") s:$VL_VMS"
}

# End every VM (SIGTERM: vnuma-load prints its summary) and wait for them.
vl_vms_stop() {
	for v in $VL_VMS; do
		pid=${v#*:}
		kill -TERM "${pid%%:*}" 2>/dev/null
	done
	for v in $VL_VMS; do
		pid=${v#*:}
		wait "${pid%%:*}" 2>/dev/null
	done
	VL_VMS='' VL_SPEC=''
}

# vl_cells_check NAME FILE: after vl_vms_stop, whether each guest cell of VM NAME has its RAM
# where its vCPUs are: the node of each cell in the last sample of FILE (node=A+B...), and
# >= VL_WHOLE_FRACTION of the cell's RAM there by vnuma-load's own summary (it asks the kernel
# where each page of each cell lies, so this does not depend on which mapping is which cell).
# One line per cell; status 1 when some cell is not whole.
vl_cells_check() {
	awk -v name="$1" -v whole=$VL_WHOLE_FRACTION -v out="$VL_DIR/$1.out" '
	$1 == "vm" && $0 ~ (" name=" name " ") {
		for (i = 2; i <= NF; i++)
			if ($i ~ /^node=/)
				node = substr($i, 6)
	}
	END {
		k = node == "-" || node == "" ? 0 : split(node, cn, "+")
		bad = 0
		ncell = 0
		while ((getline l < out) > 0) {
			if (l !~ /^summary cell=/)
				continue
			split(l, w, " ")
			c = substr(w[2], 6) + 0
			m = w[5]
			sub(/^mem_nodes=/, "", m)
			share = 0
			if (c + 1 <= k) {
				n = split(m, parts, ",")
				for (j = 1; j <= n; j++) {
					split(parts[j], nv, ":")
					if (nv[1] == cn[c + 1])
						share = nv[2] / 100
				}
			}
			ok = c + 1 <= k && share >= whole
			bad += !ok
			ncell++
			printf "VM %s cell %d: vCPUs %s on node %s, RAM per node (%%) %s: %s\n", name, c, substr(w[3], 7), c + 1 <= k ? cn[c + 1] : "- (its vCPUs apart, or with another cell)", m, ok ? "whole" : "NOT whole"
		}
		if (ncell == 0)
			print "VM " name ": no cell lines in its summary"
		exit (bad > 0 || ncell == 0)
	}' "$2"
}

# ---- Measuring ----------------------------------------------------------------------------

# The sampler's awk program: one sample (the lines of the header) for every input line that
# starts with a number (vmstat's); the "T N" whole status into the file `status` if set.
# Variables (-v): vms (VL_SPEC), cpunode, nodes, t0, frac, whole, status.
VL_SAMPLE_AWK='
function readline(f,    l) {
	l = ""
	if ((getline l < f) <= 0)
		l = ""
	close(f)
	return l
}
# Resident MiB per node of the guest RAM mappings of numa_maps file f, added into ram[node].
function ram_read(f, ram,    l, k, i, j, n, a, b, tot, big, pg, kb) {
	n = 0
	while ((getline l < f) > 0) {
		if (l ~ / file=/ || l !~ / anon=/ || l ~ / huge /)
			continue
		n++
		tot[n] = 0
		kb = 4
		if (match(l, /kernelpagesize_kB=[0-9]+/))
			kb = substr(l, RSTART + 18, RLENGTH - 18) + 0
		k = split(l, a, " ")
		for (i = 2; i <= k; i++)
			if (a[i] ~ /^N[0-9]+=/) {
				split(substr(a[i], 2), b, "=")
				pg[n, b[1]] = b[2] * kb / 1024
				tot[n] += b[2] * kb / 1024
			}
	}
	close(f)
	big = 0
	for (i = 1; i <= n; i++)
		if (tot[i] > big)
			big = tot[i]
	for (i = 1; i <= n; i++)
		if (big > 0 && tot[i] * frac >= big)
			for (j = 1; j <= nn; j++)
				if ((i, nodel[j]) in pg)
					ram[nodel[j]] += pg[i, nodel[j]]
}
# Nodes of a CPU list ("0-3", "0,2-3") joined by +.
function cpus_nodes(s,    k, r, i, b, c, seen, out, j) {
	k = split(s, r, ",")
	for (i = 1; i <= k; i++) {
		if (split(r[i], b, "-") == 1)
			b[2] = b[1]
		for (c = b[1] + 0; c <= b[2] + 0; c++)
			if (c in node_of)
				seen[node_of[c]] = 1
	}
	out = ""
	for (j = 1; j <= nn; j++)
		if (nodel[j] in seen)
			out = out (out == "" ? "" : "+") nodel[j]
	return out == "" ? "-" : out
}
# The nodes the vCPUs of each cell of a VM with K cells share, joined by + in cell order, or -
# (the vCPUs of a cell apart, or two cells on one node); vnode[1..n] are the nodes of the vCPUs.
function cells_node(vnode, n, K,    c, i, cn, used, out) {
	split("", cn)
	for (i = 1; i <= n; i++) {
		c = int((i - 1) * K / n)
		if (!(c in cn))
			cn[c] = vnode[i]
		else if (cn[c] != vnode[i])
			return "-"
	}
	out = ""
	split("", used)
	for (c = 0; c < K; c++) {
		if (!(c in cn) || cn[c] < 0 || (cn[c] in used))
			return "-"
		used[cn[c]] = 1
		out = out (c ? "+" : "") cn[c]
	}
	return out
}
function min1(x) {
	return x < 1 ? x : 1
}

# One vm line for VM spec s ("name pid cells task..."); returns its RAM MiB, its locality in
# vloc, whether it is whole in vwhole.
function vm_sample(s, t,    f, nf, ram, j, total, rs, cpus, vn, al, common, loc, nvc, i, st, x, cpu, node, allowed, fs, l, on, vnode, cn, k) {
	nf = split(s, f, " ")
	for (j = 1; j <= nn; j++)
		ram[nodel[j]] = 0
	ram_read("/proc/" f[2] "/numa_maps", ram)
	total = 0
	rs = ""
	for (j = 1; j <= nn; j++) {
		total += ram[nodel[j]]
		rs = rs (j > 1 ? "," : "") sprintf("%d:%.1f", nodel[j], ram[nodel[j]])
	}
	cpus = vn = al = common = ""
	loc = nvc = 0
	for (i = 4; i <= nf; i++) {
		st = readline(f[i] "/stat")
		cpu = -1
		if (st != "") {
			sub(/.*\) /, "", st)
			split(st, x, " ")
			cpu = x[37]
		}
		node = (cpu in node_of) ? node_of[cpu] : -1
		allowed = "-"
		fs = f[i] "/status"
		while ((getline l < fs) > 0)
			if (l ~ /^Cpus_allowed_list:/) {
				sub(/^Cpus_allowed_list:[ \t]*/, "", l)
				allowed = cpus_nodes(l)
			}
		close(fs)
		cpus = cpus (nvc ? "," : "") cpu
		vn = vn (nvc ? "," : "") node
		vnode[nvc + 1] = node
		al = al (nvc ? "/" : "") allowed
		if (nvc == 0)
			common = node
		else if (common != node)
			common = "-"
		if (total > 0 && node >= 0)
			loc += f[3] + 0 > 1 ? min1(ram[node] * f[3] / total) : ram[node] / total
		nvc++
	}
	if (nvc > 0)
		loc /= nvc
	if (common == "" || common == -1)
		common = "-"
	on = (common != "-" && total > 0) ? ram[common] / total : 0
	if (f[3] + 0 > 1) {
		common = cells_node(vnode, nvc, f[3] + 0)
		on = 0
		k = split(common, cn, "+")
		for (j = 1; common != "-" && j <= k && total > 0; j++)
			on += ram[cn[j]] / total
	}
	printf "vm t=%.1f name=%s pid=%s ram_mib=%.1f ram=%s vcpu_cpus=%s vcpu_nodes=%s allowed=%s node=%s on_node=%.3f locality=%.3f\n", t, f[1], f[2], total, rs, cpus, vn, al, common, on, loc
	vloc = loc
	vwhole = (common != "-" && on >= whole)
	return total
}
# A "daemon" line for the process whose pid is in the file `watch`, if any: its state, CPU
# seconds, wait channel and the top of its kernel stack (what it is blocked in).
function daemon_sample(t,    pid, st, x, wch, stack, l, k, fn) {
	if (watch == "")
		return
	pid = readline(watch)
	if (pid !~ /^[0-9]+$/)
		return
	st = readline("/proc/" pid "/stat")
	if (st == "")
		return
	sub(/.*\) /, "", st)
	split(st, x, " ")
	wch = readline("/proc/" pid "/wchan")
	stack = ""
	k = 0
	while (k < 4 && (getline l < ("/proc/" pid "/stack")) > 0) {
		fn = l
		sub(/^\[<[0-9a-f]+>\] /, "", fn)
		sub(/\+.*/, "", fn)
		stack = stack (k++ ? "<" : "") fn
	}
	close("/proc/" pid "/stack")
	printf "daemon t=%.1f pid=%s state=%s cpu_s=%.2f wchan=%s stack=%s\n", t, pid, x[1], (x[12] + x[13]) / 100, wch == "" ? "-" : wch, stack == "" ? "-" : stack
}
function sample(    t, a, v, hw, hsum, allwhole, r, vm, l, fr, minpct, j, mf, free, tot, hl) {
	split(readline("/proc/uptime"), a, " ")
	t = a[1] - t0
	hw = hsum = 0
	allwhole = nv > 0
	for (v = 1; v <= nv; v++) {
		r = vm_sample(vml[v], t)
		hw += r
		hsum += r * vloc
		if (!vwhole)
			allwhole = 0
	}
	while ((getline l < "/proc/vmstat") > 0) {
		split(l, a, " ")
		vm[a[1]] = a[2]
	}
	close("/proc/vmstat")
	fr = ""
	minpct = 100
	for (j = 1; j <= nn; j++) {
		mf = "/sys/devices/system/node/node" nodel[j] "/meminfo"
		free = tot = 0
		while ((getline l < mf) > 0) {
			split(l, a, " ")
			if (a[3] == "MemFree:")
				free = a[4] / 1024
			if (a[3] == "MemTotal:")
				tot = a[4] / 1024
		}
		close(mf)
		fr = fr (j > 1 ? "," : "") sprintf("%d:%d/%d", nodel[j], free, tot)
		if (tot > 0 && 100 * free / tot < minpct)
			minpct = 100 * free / tot
	}
	daemon_sample(t)
	hl = hw > 0 ? hsum / hw : 0
	printf "host t=%.1f locality=%.3f ram_mib=%.1f migrated=%d numa_migrated=%d hint_faults=%d free=%s min_free_pct=%.1f whole=%d cpus=%s\n", t, hl, hw, vm["pgmigrate_success"], vm["numa_pages_migrated"], vm["numa_hint_faults"], fr, minpct, allwhole, ncpus
	fflush()
	if (allwhole) {
		if (streak++ == 0)
			since = sprintf("%.1f", t)
	} else
		streak = 0
	if (status != "") {
		printf "%s %d\n", (streak ? since : "never"), streak > status
		close(status)
	}
}
BEGIN {
	k = split(cpunode, a, " ")
	for (i = 1; i <= k; i++) {
		split(a[i], b, ":")
		node_of[b[1]] = b[2]
	}
	nn = split(nodes, nodel, " ")
	for (c in node_of)
		cnt[node_of[c]]++
	ncpus = ""
	for (j = 1; j <= nn; j++)
		ncpus = ncpus (j > 1 ? "," : "") nodel[j] ":" (cnt[nodel[j]] + 0)
	nv = 0
	k = split(vms, a, ";")
	for (i = 1; i <= k; i++)
		if (a[i] ~ / /)
			vml[++nv] = a[i]
}
# A line read less than stale seconds after the last one was dealt with waited in the pipe
# while a sample ran: skipped, so that a sample slower than the vmstat period (seconds in a
# busy emulated guest) never builds a backlog that runs on after vmstat is stopped.
/^ *[0-9]/ {
	split(readline("/proc/uptime"), a, " ")
	if (nsampled++ == 0 || a[1] - done_at >= stale)
		sample()
	split(readline("/proc/uptime"), a, " ")
	done_at = a[1]
}'

# vl_sample_awk [STATUS [WATCH]]: the sampler's awk with its variables, reading stdin.
vl_sample_awk() {
	# shellcheck disable=SC2086 # VL_AWK is a command with its options
	$VL_AWK -v vms="$VL_SPEC" -v cpunode="$VL_CPU_NODE" -v nodes="$VL_NODES" -v t0="$VL_T0" \
		-v frac=$VL_RAM_MAP_FRACTION -v whole=$VL_WHOLE_FRACTION -v status="${1:-}" \
		-v watch="${2:-}" -v stale=$VL_SAMPLE_STALE_S "$VL_SAMPLE_AWK"
}

# One sample of every VM of VL_SPEC (vl_vms_wait) and of the host, on stdout.
vl_sample() {
	echo 0 | vl_sample_awk
}

# Append a sample to FILE now and every VL_SAMPLE_S seconds after, in the background, and keep
# FILE.status current; a pid written into FILE.watch (VL_WATCH; vl_vnumad_start and
# vl_numad_start do) adds a "daemon" line to every sample.  vmstat's lines are the clock (its first comes at once): stopping
# vmstat closes the pipe and the awk ends at its end.  Both run at nice -10 so that the busy
# vCPU threads do not delay the samples.
vl_sampler_start() {
	echo "never 0" >"$1.status"
	rm -f "$1.clock"
	VL_WATCH=$1.watch
	: >"$VL_WATCH"
	{
		vmstat -n "$VL_SAMPLE_S" &
		echo $! >"$1.clock"
		wait
	} | vl_sample_awk "$1.status" "$VL_WATCH" >>"$1" &
	VL_SAMPLER=$! VL_SAMPLER_CLOCK=''
	while [ -z "$VL_SAMPLER_CLOCK" ]; do
		read -r VL_SAMPLER_CLOCK 2>/dev/null <"$1.clock" || sleep 0.1
	done
	renice -n -10 -p "$VL_SAMPLER_CLOCK" $VL_SAMPLER >/dev/null 2>&1
}

vl_sampler_stop() {
	[ -n "$VL_SAMPLER" ] || return 0
	kill -TERM "$VL_SAMPLER_CLOCK" 2>/dev/null
	wait "$VL_SAMPLER" 2>/dev/null
	VL_SAMPLER='' VL_WATCH=''
}

# Read FILE.status into VL_WHOLE_SINCE ("never" or a time) and VL_WHOLE_N (samples).
vl_whole_status() {
	VL_WHOLE_SINCE=never VL_WHOLE_N=0
	read -r VL_WHOLE_SINCE VL_WHOLE_N 2>/dev/null <"$1.status" || :
	case $VL_WHOLE_N in
	'' | *[!0-9]*) VL_WHOLE_SINCE=never VL_WHOLE_N=0 ;;
	esac
}

# "T N" from the samples in FILE: every VM has been whole since the sample at T, in the last N
# samples; "never 0" when not in the last one.
vl_whole_since() {
	awk '
	$1 == "host" {
		w = 0
		for (i = 2; i <= NF; i++)
			if ($i == "whole=1")
				w = 1
		if (!w)
			n = 0
		else if (n++ == 0)
			since = substr($2, 3)
	}
	END { print (n ? since : "never"), n + 0 }' "$1"
}

# What the watched daemon was doing over the samples of FILE: how many samples, its CPU
# seconds, and per state and wait channel how many samples found it there (and the kernel
# stack it was most often blocked in).
vl_daemon_summary() {
	awk '
	$1 == "daemon" {
		n++
		for (i = 2; i <= NF; i++) {
			p = index($i, "=")
			f[substr($i, 1, p - 1)] = substr($i, p + 1)
		}
		w[f["state"] " " f["wchan"]]++
		if (f["state"] == "D")
			st[f["stack"]]++
		cpu = f["cpu_s"]
	}
	END {
		if (n == 0)
			exit
		printf "daemon in %d samples, %s s of CPU; state and wait channel:", n, cpu
		for (k in w)
			printf " [%s: %d]", k, w[k]
		print ""
		for (k in st)
			if (st[k] > best) {
				best = st[k]
				bs = k
			}
		if (best > 0)
			printf "blocked (state D) in %d samples, most often in %s\n", best, bs
	}' "$1"
}

# The last sample of FILE as a table: per VM its RAM per node, vCPU nodes, allowed nodes, node,
# fraction there, locality; then the host locality and free memory.
vl_vm_table() {
	awk '
	{
		split("", f)
		for (i = 2; i <= NF; i++) {
			p = index($i, "=")
			f[substr($i, 1, p - 1)] = substr($i, p + 1)
		}
	}
	$1 == "host" { ht = f["t"]; hl = f["locality"]; hf = f["min_free_pct"]; next }
	$1 == "vm" {
		if (f["t"] != vt) {
			vt = f["t"]
			nrow = 0
		}
		row[++nrow] = sprintf("%-8s %8s  %-24s %-12s %-12s %-4s %7.1f%% %8s", f["name"], f["ram_mib"], f["ram"], f["vcpu_nodes"], f["allowed"], f["node"], 100 * f["on_node"], f["locality"])
	}
	END {
		printf "%-8s %8s  %-24s %-12s %-12s %-4s %8s %8s\n", "VM", "RAM MiB", "RAM per node (MiB)", "vCPU nodes", "allowed", "node", "on node", "locality"
		for (i = 1; i <= nrow; i++)
			print row[i]
		printf "host locality %s at t=%s s; lowest free memory of any node %s %%\n", hl, ht, hf
	}' "$1"
}

# vl_series_summary FILE TIMES [WINDOW]: figures over a run, as one line of key=value fields:
#   final_locality  mean host locality over the samples of the last WINDOW seconds (default
#                   10: floating vCPUs make a single sample noisy);
#   loc_<T>         for each T of the space-separated TIMES, the host locality of the last
#                   sample at or before T seconds;
#   converge_s      the time of the first sample after which host locality stays >=
#                   VL_CONVERGED_LOCALITY up to the end, or never;
#   migrated, numa_migrated   vmstat deltas to the last sample from the "base" line
#                   (vl_vmstat_base) when FILE has one, else from the first sample (which, on
#                   a busy machine, can come seconds after the run started);
#   whole           VMs whole in the last sample, as k/n;
#   vcpu_load       per node, the vCPUs that last ran there / its CPUs, in the last sample
#                   (node:k/n,...): locality alone would not show VMs stacked on one node;
#   min_free_pct    the lowest free memory of any node in any sample, percent;
#   samples, end_s  how many samples, the time of the last.
vl_series_summary() {
	awk -v times="$2" -v window="${3:-10}" -v conv=$VL_CONVERGED_LOCALITY \
		-v whole=$VL_WHOLE_FRACTION '
	{
		split("", f)
		for (i = 2; i <= NF; i++) {
			p = index($i, "=")
			f[substr($i, 1, p - 1)] = substr($i, p + 1)
		}
	}
	$1 == "vm" {
		if (f["t"] != vt) {
			vt = f["t"]
			nvm = nwhole = 0
			split("", onnode)
		}
		nvm++
		if (f["node"] != "-" && f["on_node"] + 0 >= whole)
			nwhole++
		k = split(f["vcpu_nodes"], vn, ",")
		for (i = 1; i <= k; i++)
			onnode[vn[i]]++
		next
	}
	$1 == "base" {
		based = 1
		m0 = f["migrated"]
		n0 = f["numa_migrated"]
		next
	}
	$1 == "host" {
		s++
		t[s] = f["t"] + 0
		loc[s] = f["locality"] + 0
		if (s == 1 && !based) {
			m0 = f["migrated"]
			n0 = f["numa_migrated"]
		}
		m1 = f["migrated"]
		n1 = f["numa_migrated"]
		if (s == 1 || f["min_free_pct"] + 0 < minfree)
			minfree = f["min_free_pct"] + 0
		endwhole = nwhole "/" nvm
		vload = ""
		k = split(f["cpus"], cn, ",")
		for (i = 1; i <= k; i++) {
			split(cn[i], nc, ":")
			vload = vload (i > 1 ? "," : "") nc[1] ":" (onnode[nc[1]] + 0) "/" nc[2]
		}
	}
	END {
		if (s == 0) {
			print "samples=0"
			exit
		}
		sum = k = 0
		for (i = s; i >= 1 && (i == s || t[i] >= t[s] - window); i--) {
			sum += loc[i]
			k++
		}
		out = sprintf("final_locality=%.3f", sum / k)
		nt = split(times, tl, " ")
		for (j = 1; j <= nt; j++) {
			v = loc[1]
			for (i = 1; i <= s; i++)
				if (t[i] <= tl[j] + 0)
					v = loc[i]
			out = out sprintf(" loc_%s=%.3f", tl[j], v)
		}
		c = "never"
		for (i = s; i >= 1 && loc[i] >= conv; i--)
			c = sprintf("%.1f", t[i])
		out = out " converge_s=" c
		out = out sprintf(" migrated=%d numa_migrated=%d whole=%s vcpu_load=%s min_free_pct=%.1f samples=%d end_s=%.1f", m1 - m0, n1 - n0, endwhole, vload, minfree, s, t[s])
		print out
	}' "$1"
}

# vl_vmstat_base: a "base" line (t= seconds since VL_T0, migrated=, numa_migrated= as in a
# host line) of /proc/vmstat now, with shell built-ins only (no program to start in a busy
# guest): written into a samples file at t0, it is where vl_series_summary counts the run's
# migrations from.
vl_vmstat_base() {
	vl_m='' vl_n=''
	while read -r vl_k vl_v; do
		case $vl_k in
		pgmigrate_success) vl_m=$vl_v ;;
		numa_pages_migrated) vl_n=$vl_v ;;
		esac
	done </proc/vmstat
	echo "base t=$(vl_since "$VL_T0_CS") migrated=${vl_m:-0} numa_migrated=${vl_n:-0}"
}

# The VMs' accesses per second summed over them, from their summary lines (vl_vms_stop makes
# vnuma-load print them; each is the mean over the VM's run), into VL_DIR/NAME.out.
vl_vms_acc_s() {
	for v in "$@"; do cat "$VL_DIR/$v.out"; done |
		awk '/^summary vcpu=total / { for (i = 1; i <= NF; i++) if ($i ~ /^acc_s=/) s += substr($i, 7) }
		END { printf "%.0f\n", s }'
}

# ---- Daemons ------------------------------------------------------------------------------

# vl_vnumad_start DIR [CONFIG LINE]...: vnumad --host linux in the foreground, in the
# background, its config and log (vnumad.log) in DIR; its socket and state file in
# /run/vmlib-vnumad (a Unix socket cannot live on the 9p share).  Returns once the socket
# exists (vnumad binds it before its first round), 1 if vnumad ends first or takes more than
# VL_DAEMON_WAIT_S.  Whether the socket answers is for vl_ctl to find out: a daemon that is
# running but not answering is still measured.
vl_vnumad_start() {
	VL_VNUMAD_DIR=$1
	shift
	mkdir -p "$VL_VNUMAD_DIR" /run/vmlib-vnumad
	: >"$VL_VNUMAD_DIR/vnumad.conf"
	for l in "$@"; do printf '%s\n' "$l" >>"$VL_VNUMAD_DIR/vnumad.conf"; done
	VL_SOCK=/run/vmlib-vnumad/vnumad.sock VL_CTL_FAILS=0
	rm -f "$VL_SOCK" /run/vmlib-vnumad/state.json
	"${VNUMAD_BINDIR:?}/agent/vnumad" --host linux --foreground --socket "$VL_SOCK" \
		--state /run/vmlib-vnumad/state.json -f "$VL_VNUMAD_DIR/vnumad.conf" \
		>"$VL_VNUMAD_DIR/vnumad.log" 2>&1 &
	VL_VNUMAD_PID=$!
	[ -z "$VL_WATCH" ] || echo "$VL_VNUMAD_PID" >"$VL_WATCH"
	vl_cs
	t_start=$VL_CS
	until [ -S "$VL_SOCK" ]; do
		if ! kill -0 "$VL_VNUMAD_PID" 2>/dev/null; then
			wait "$VL_VNUMAD_PID"
			vl_say "vnumad exited with status $? at start:"
			sed 's/^/  vnumad: /' "$VL_VNUMAD_DIR/vnumad.log"
			VL_VNUMAD_PID=''
			return 1
		fi
		vl_cs
		if [ $((VL_CS - t_start)) -gt $((VL_DAEMON_WAIT_S * 100)) ]; then
			vl_say "vnumad has no socket after $VL_DAEMON_WAIT_S s"
			return 1
		fi
		sleep 0.2
	done
	vl_say "vnumad running (pid $VL_VNUMAD_PID), socket there after $(vl_since "$t_start") s"
}

# vnumactl against the running vnumad, JSON output.  A request that fails (vnumactl gives up
# after 10 s without a reply) is counted in VL_CTL_FAILS and its error is the output.
vl_ctl() {
	"${VNUMAD_BINDIR:?}/agent/vnumactl" -c "$VL_SOCK" --json "$@" ||
		{
			VL_CTL_FAILS=$((VL_CTL_FAILS + 1))
			return 1
		}
}

# vl_ctl_retry S ARG...: vl_ctl until it succeeds or S seconds have passed; the output is the
# last attempt's.
vl_ctl_retry() {
	vl_try_s=$1
	shift
	vl_cs
	vl_try_t0=$VL_CS
	until vl_ctl "$@" >"$VL_VNUMAD_DIR/ctl-try.out" 2>&1; do
		vl_cs
		if [ $((VL_CS - vl_try_t0)) -ge $((vl_try_s * 100)) ]; then
			cat "$VL_VNUMAD_DIR/ctl-try.out"
			return 1
		fi
		sleep 1
	done
	cat "$VL_VNUMAD_DIR/ctl-try.out"
}

# A number from vnumactl's JSON output on stdin: the first "KEY":N.
vl_json_num() {
	sed -n "s/^ *\"$1\": *\([-0-9.e]*\),*\$/\1/p" | head -n 1
}

# vl_vnumad_dump [brief]: save what vnumactl says into the vnumad directory (ctl-*.json):
# stats (retried for up to VL_DAEMON_WAIT_S; when it never answers, nothing else is asked
# and the status is 1) and list; unless brief, also status, nodeinfo, events, and vminfo and
# stats of every VM; and the state file.
vl_vnumad_dump() {
	d=$VL_VNUMAD_DIR
	cp /run/vmlib-vnumad/state.json "$d/" 2>/dev/null
	if ! vl_ctl_retry "$VL_DAEMON_WAIT_S" stats >"$d/ctl-stats.json" 2>&1; then
		vl_say "vnumad does not answer; the rest of vnumactl's output is skipped"
		return 1
	fi
	vl_ctl list >"$d/ctl-list.json" 2>&1
	[ "${1:-}" != brief ] || return 0
	for c in status nodeinfo; do vl_ctl "$c" >"$d/ctl-$c.json" 2>&1; done
	vl_ctl events --limit 1000 >"$d/ctl-events.json" 2>&1
	for v in $VL_VMS; do
		vl_ctl vminfo "${v%%:*}" >"$d/ctl-vminfo-${v%%:*}.json" 2>&1
		vl_ctl stats "${v%%:*}" >"$d/ctl-stats-${v%%:*}.json" 2>&1
	done
}

# SIGTERM to vnumad; its exit status in VL_VNUMAD_RC (0 expected).  A vnumad still there
# VL_DAEMON_WAIT_S later (blocked in a system call, say) is killed: status 137, and said.
vl_vnumad_stop() {
	VL_VNUMAD_RC=0
	[ -n "$VL_VNUMAD_PID" ] || return 0
	kill -TERM "$VL_VNUMAD_PID" 2>/dev/null
	vl_cs
	vl_stop_t0=$VL_CS
	while kill -0 "$VL_VNUMAD_PID" 2>/dev/null; do
		vl_cs
		if [ $((VL_CS - vl_stop_t0)) -gt $((VL_DAEMON_WAIT_S * 100)) ]; then
			vl_say "vnumad has not stopped $VL_DAEMON_WAIT_S s after SIGTERM: SIGKILL" \
				"(in $(cat "/proc/$VL_VNUMAD_PID/wchan" 2>/dev/null))"
			kill -KILL "$VL_VNUMAD_PID" 2>/dev/null
			break
		fi
		sleep 1
	done
	wait "$VL_VNUMAD_PID"
	VL_VNUMAD_RC=$?
	VL_VNUMAD_PID=''
}

# vl_numad_start [NUMAD OPTION]...: Debian's numad, with -v (log level 6, so that its log says
# what it moved) and the options given (numad.service passes -i 15: a scan every 5 to 15 s).
# numad writes /var/log/numad.log, a fixed path (a tmpfs is mounted on the read-only /var/log
# for it), and /var/run/numad.pid (/var/run is /run, a tmpfs); the parent returns before the
# daemon has written its pid file.
vl_numad_start() {
	if ! command -v numad >/dev/null 2>&1; then
		vl_say "numad is not installed (packaging/install-system-deps.sh installs it)"
		return 1
	fi
	if ! touch /var/log/numad.log 2>/dev/null; then
		mount -t tmpfs tmpfs /var/log || {
			vl_say "cannot mount a tmpfs on /var/log for numad"
			return 1
		}
	fi
	: >/var/log/numad.log
	rm -f /var/run/numad.pid
	read -r VL_THP_SLEEP </sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs
	# numad leaves every process alone until CLOCK_MONOTONIC passes 300 s (a process's last
	# bind time starts at 0 and must be 300 s old); the guest is younger than that, so numad
	# runs in a time namespace whose monotonic clock is VL_NUMAD_CLOCK_S ahead, as on a host
	# that has been up for a while.
	if unshare --time --monotonic $VL_NUMAD_CLOCK_S --fork true 2>/dev/null; then
		unshare --time --monotonic $VL_NUMAD_CLOCK_S --fork numad -v "$@"
	else
		vl_say "WARNING: no time namespace: numad acts only after 300 s of guest uptime"
		numad -v "$@"
	fi || {
		vl_say "numad did not start"
		return 1
	}
	VL_NUMAD_PID='' i=0
	while [ -z "$VL_NUMAD_PID" ] && [ $i -lt 100 ]; do
		read -r VL_NUMAD_PID 2>/dev/null </var/run/numad.pid || sleep 0.1
		i=$((i + 1))
	done
	if [ -z "$VL_NUMAD_PID" ] || ! kill -0 "$VL_NUMAD_PID" 2>/dev/null; then
		vl_say "numad is not running: $(cat /var/log/numad.log)"
		VL_NUMAD_PID=''
		return 1
	fi
	[ -z "$VL_WATCH" ] || echo "$VL_NUMAD_PID" >"$VL_WATCH"
	vl_say "numad running (pid $VL_NUMAD_PID): numad -v $*"
}

# numad -i 0 is its documented way to stop; SIGTERM if it is still there 10 s later.  The
# khugepaged scan interval numad changed is put back.
vl_numad_stop() {
	[ -n "$VL_NUMAD_PID" ] || return 0
	numad -i 0 >/dev/null 2>&1
	i=0
	while kill -0 "$VL_NUMAD_PID" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	kill -TERM "$VL_NUMAD_PID" 2>/dev/null
	[ -z "$VL_THP_SLEEP" ] ||
		echo "$VL_THP_SLEEP" >/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs
	VL_NUMAD_PID=''
}
