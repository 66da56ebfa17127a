#!/bin/sh
# libvirt-lib.sh - helpers of the libvirt system tests, sourced (POSIX sh) by
# test_libvirt_host.sh on this machine and by test_libvirt_nested.sh inside the emulated NUMA
# host of numa-host.sh.  Nothing runs when it is sourced.
#
# libvirtd.  lvt_missing names what is not installed (libvirtd, virtlogd, virsh, QEMU, the
# QEMU driver, jq); lvt_libvirtd_start uses the system libvirtd at qemu:///system when one
# answers, and otherwise starts virtlogd and libvirtd (as without systemd: `-d`, pid files in
# /run) and waits until virsh gets an answer; lvt_libvirtd_stop ends only what it started, by
# the pids their pid files held.
#
# Domains.  lvt_domain_xml fills in tests/system/libvirt/domain.xml.in; lvt_halt_kernel writes
# a 36-byte multiboot kernel whose CPU halts at once (a domain that costs no CPU time once
# QEMU is up); lvt_initramfs builds an initramfs from a static busybox whose /init mounts /proc
# and sleeps forever (for a real Linux guest that stays up).  lvt_qemu_pid, lvt_vcpupins and
# lvt_emulatorpin read what libvirt did; lvt_ram_nodes and lvt_ram_pct read where a QEMU's
# guest RAM is from /proc/PID/numa_maps.
#
# Checks.  lvt_ok and lvt_fail print "[t] ok: ..." and "[t] FAIL: ..." with t the seconds
# since LVT_T0 (lvt_fail exits 1); lvt_check tests a jq expression on a JSON text;
# lvt_wait_for polls a command until it succeeds or a deadline passes.

LVT_URI=qemu:///system
LVT_NS=http://vnumad.org/schemas/policy/1.0
# Seconds to wait for libvirtd to answer after it was started: 4-15 s here (the first
# connection probes QEMU), about 25 s under TCG in the emulated host; a ceiling, not a target.
LVT_LIBVIRTD_WAIT_S=180
# Seconds any one virsh call may take before it counts as hung (starting a domain under
# nested TCG takes about 16 s).
LVT_VIRSH_TIMEOUT_S=120
# Seconds to wait for a daemon to exit after SIGTERM before it is killed.
LVT_STOP_WAIT_S=15
LVT_LIB_DIR=$(dirname "$0")
LVT_TEMPLATE=${VNUMAD_SRCDIR:-$LVT_LIB_DIR/../..}/tests/system/libvirt/domain.xml.in
LVT_STARTED=''  # "name:pid" of the daemons lvt_libvirtd_start started
LVT_CONF_DIR='' # the qemu.conf copy of lvt_libvirtd_exec
LVT_T0=''

# Seconds since boot, with two decimals.
lvt_uptime() {
	read -r lvt_u _ </proc/uptime
	echo "$lvt_u"
}

lvt_t0_set() { LVT_T0=$(lvt_uptime); }

# Seconds since LVT_T0 (one decimal).
lvt_since() {
	awk -v a="${1:-$LVT_T0}" -v b="$(lvt_uptime)" 'BEGIN { printf "%.1f", b - a }'
}

lvt_say() { echo "[$(lvt_since)] $*"; }
lvt_ok() { lvt_say "ok: $*"; }
lvt_fail() {
	lvt_say "FAIL: $*"
	exit 1
}

# SIGTERM to vnumad (pid VPID): a failure unless it exits with status 0 within 15 s.
lvt_vnumad_stop() {
	kill -TERM "$VPID"
	i=0
	while kill -0 "$VPID" 2>/dev/null && [ $i -lt 150 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -0 "$VPID" 2>/dev/null && lvt_fail "vnumad did not stop within 15 s of SIGTERM"
	wait "$VPID"
	vrc=$?
	VPID=''
	[ $vrc -eq 0 ] || lvt_fail "vnumad exited with status $vrc after SIGTERM"
}

# What the tests need that is not installed, as a list of names; empty when all is there.
lvt_missing() {
	m=''
	for t in libvirtd virtlogd virsh "${VNUMAD_QEMU:-qemu-system-x86_64}" jq timeout; do
		command -v "$t" >/dev/null 2>&1 || m="$m $t"
	done
	# The QEMU driver is a module of its own (libvirt-daemon-driver-qemu).
	set -- /usr/lib/*/libvirt/connection-driver/libvirt_driver_qemu.so \
		/usr/lib*/libvirt/connection-driver/libvirt_driver_qemu.so
	found=no
	for f in "$@"; do [ -e "$f" ] && found=yes; done
	[ $found = yes ] || m="$m libvirt-daemon-driver-qemu"
	getent passwd libvirt-qemu >/dev/null 2>&1 || m="$m libvirt-daemon-system(user libvirt-qemu)"
	echo "${m# }"
}

lvt_virsh() { timeout "$LVT_VIRSH_TIMEOUT_S" virsh -q -c "$LVT_URI" "$@"; }

# Does a libvirtd answer at LVT_URI?
lvt_libvirtd_up() {
	timeout 20 virsh -q -c "$LVT_URI" version >/dev/null 2>&1
}

# A daemon started by us: wait for its pid file (it daemonizes), remember the pid.
lvt_started() {
	i=0
	while [ $i -lt 100 ]; do
		pid=$(cat "/run/$1.pid" 2>/dev/null)
		if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
			LVT_STARTED="$LVT_STARTED $1:$pid"
			return 0
		fi
		sleep 0.1
		i=$((i + 1))
	done
	lvt_say "$1 -d did not leave a live pid in /run/$1.pid"
	return 1
}

# Is the daemon of pid file /run/$1.pid running?
lvt_pidfile_live() {
	pid=$(cat "/run/$1.pid" 2>/dev/null) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# Can the QEMU user (libvirt-qemu) open /dev/kvm?  Where udev runs, /dev/kvm is root:kvm 0660
# and it can; on a machine without udev /dev/kvm may be root's alone.
lvt_kvm_for_qemu_user() {
	[ -e /dev/kvm ] || return 0
	setpriv --reuid=libvirt-qemu --regid=kvm --init-groups test -r /dev/kvm -a -w /dev/kvm \
		2>/dev/null
}

# Start libvirtd -d.  When /dev/kvm is there but only root may open it, libvirt probes QEMU
# as root (KVM works) and then finds KVM unusable for the QEMU user, so it takes every cached
# probe as stale and probes QEMU again (about 4 s) at each capability look-up: a `virsh
# define` takes a minute.  Then libvirtd runs in a mount namespace of its own, where a copy
# of qemu.conf runs QEMU as root (the domains here are TCG ones and never open /dev/kvm).
lvt_libvirtd_exec() {
	if lvt_kvm_for_qemu_user; then
		libvirtd -d
		return
	fi
	LVT_CONF_DIR=$(mktemp -d /run/vnumad-test-libvirt.XXXXXX) || return 1
	{
		cat /etc/libvirt/qemu.conf
		printf '\n# vnumad system tests: /dev/kvm is root'"'"'s alone here\n'
		printf 'user = "root"\ngroup = "root"\n'
	} >"$LVT_CONF_DIR/qemu.conf" || return 1
	lvt_say "/dev/kvm is root's alone: libvirtd runs QEMU as root (qemu.conf in a namespace)"
	unshare -m --propagation private sh -c \
		"mount --bind '$LVT_CONF_DIR/qemu.conf' /etc/libvirt/qemu.conf && exec libvirtd -d"
}

# Use the libvirtd that answers, or start virtlogd and libvirtd; wait until virsh gets an
# answer.  Prints how it went; returns 1 when libvirtd does not come up.
lvt_libvirtd_start() {
	if lvt_libvirtd_up; then
		lvt_say "using the running libvirtd at $LVT_URI"
		return 0
	fi
	t=$(lvt_uptime)
	if ! lvt_pidfile_live virtlogd; then
		virtlogd -d || return 1
		lvt_started virtlogd || return 1
	fi
	if ! lvt_pidfile_live libvirtd; then
		lvt_libvirtd_exec || return 1
		lvt_started libvirtd || return 1
	fi
	i=0
	until lvt_libvirtd_up; do
		[ $i -lt $((LVT_LIBVIRTD_WAIT_S * 2)) ] || {
			lvt_say "libvirtd did not answer at $LVT_URI within $LVT_LIBVIRTD_WAIT_S s"
			return 1
		}
		sleep 0.5
		i=$((i + 1))
	done
	lvt_say "time: started$(echo "$LVT_STARTED" | sed 's/:[0-9]*//g'); libvirtd answered after \
$(lvt_since "$t") s"
}

# End, newest first, the daemons lvt_libvirtd_start started (by pid, never by name).
lvt_libvirtd_stop() {
	for e in $(echo "$LVT_STARTED" | tr ' ' '\n' | sed '1!G;h;$!d'); do
		pid=${e#*:}
		kill "$pid" 2>/dev/null || continue
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt $((LVT_STOP_WAIT_S * 10)) ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -9 "$pid" 2>/dev/null || true
	done
	LVT_STARTED=''
	[ -n "$LVT_CONF_DIR" ] && rm -rf "$LVT_CONF_DIR"
	LVT_CONF_DIR=''
}

# lvt_domain_xml FIELD=VALUE...: the domain template with each @FIELD@ replaced by VALUE
# (literally: any character may appear in VALUE).  Fails when a field is left unfilled.
lvt_domain_xml() {
	xml=$(awk '
	BEGIN {
		for (i = 2; i < ARGC; i++) {
			eq = index(ARGV[i], "=")
			key[++n] = "@" substr(ARGV[i], 1, eq - 1) "@"
			val[n] = substr(ARGV[i], eq + 1)
			ARGV[i] = ""
		}
	}
	/^<!--/, /-->$/ { next }
	{
		line = $0
		for (j = 1; j <= n; j++) {
			out = ""
			while ((p = index(line, key[j])) > 0) {
				out = out substr(line, 1, p - 1) val[j]
				line = substr(line, p + length(key[j]))
			}
			line = out line
		}
		if (line !~ /^[ \t]*$/)
			print line
	}' "$LVT_TEMPLATE" "$@") || return 1
	case $xml in
	*@[A-Z]*@*)
		echo "lvt_domain_xml: unfilled field in: $xml" >&2
		return 1
		;;
	esac
	printf '%s\n' "$xml"
}

# vnumad's policy element with the given attributes, e.g. lvt_policy "mode='advisory'".
lvt_policy() {
	echo "    <vnuma:policy xmlns:vnuma='$LVT_NS' $*/>"
}

# A multiboot (version 1) kernel of 36 bytes, loaded at 1 MiB: the header (magic, flags with
# only bit 16, "the load addresses follow", set, checksum, header/load/load-end/bss-end
# addresses, entry at 0x100020), then cli; hlt; jmp back to the hlt.  QEMU boots it through its
# own multiboot loader; the vCPU then sleeps for good, so the domain costs no CPU time.
lvt_halt_kernel() {
	printf '\002\260\255\033\000\000\001\000\376\117\121\344' >"$1" &&
		printf '\000\000\020\000\000\000\020\000\000\000\000\000\000\000\000\000' >>"$1" &&
		printf '\040\000\020\000\372\364\353\375' >>"$1"
}

# lvt_initramfs FILE BUSYBOX: a gzip'd initramfs whose /init mounts /proc, says so on the
# console and sleeps forever: a Linux guest that stays up doing nothing.
lvt_initramfs() {
	st=$(mktemp -d) || return 1
	mkdir -p "$st/bin" "$st/proc" "$st/dev"
	cp "$2" "$st/bin/busybox" &&
		cat >"$st/init" <<'EOF' &&
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
echo "vnumad-test guest: up"
while :; do /bin/busybox sleep 3600; done
EOF
		chmod 755 "$st/init" &&
		(cd "$st" && find . | cpio -o -H newc --quiet | gzip -1) >"$1"
	rc=$?
	rm -rf "$st"
	return $rc
}

lvt_qemu_pid() {
	cat "/run/libvirt/qemu/$1.pid" 2>/dev/null
}

# "VCPU:CPULIST ..." as virsh vcpupin shows a running domain's vCPU affinities.
lvt_vcpupins() {
	lvt_virsh vcpupin "$1" | awk '$1 ~ /^[0-9]+$/ { printf "%s%s:%s", s, $1, $2; s = " " }'
}

# The emulator threads' CPU list, as virsh emulatorpin shows it ("*: 2-3", or "2-3" with -q).
lvt_emulatorpin() {
	lvt_virsh emulatorpin "$1" | awk 'NF { v = $NF } END { print v }'
}

# Node N's CPU list as sysfs gives it (e.g. 2-3).
lvt_node_cpus() {
	cat "/sys/devices/system/node/node$1/cpulist"
}

# Where QEMU PID's guest RAM is: "total=PAGES N0=PAGES N1=PAGES ...", from the anonymous
# mapping of /proc/PID/numa_maps with the most resident pages (a 64 MiB domain's RAM is one
# mapping; a huge page counts as its small pages there).
lvt_ram_nodes() {
	awk '
	/ anon=/ {
		t = 0
		for (i = 2; i <= NF; i++)
			if ($i ~ /^N[0-9]+=/)
				t += substr($i, index($i, "=") + 1)
		if (t > best) {
			best = t
			line = ""
			for (i = 2; i <= NF; i++)
				if ($i ~ /^N[0-9]+=/)
					line = line " " $i
		}
	}
	END { if (best > 0) print "total=" best line }' "/proc/$1/numa_maps" 2>/dev/null
}

# Percent (whole) of QEMU PID's guest RAM on node NODE; nothing when PID is gone.
lvt_ram_pct() {
	lvt_ram_nodes "$1" | awk -v n="N$2" '{
		split($1, t, "=")
		on = 0
		for (i = 2; i <= NF; i++) {
			split($i, f, "=")
			if (f[1] == n)
				on = f[2]
		}
		printf "%d\n", 100 * on / t[2]
	}'
}

# lvt_check JSON JQ-EXPR WHAT: fail unless the expression holds on the JSON text (no text
# fails too: jq -e takes no input as success).
lvt_check() {
	[ -n "$1" ] || lvt_fail "$3: the command printed nothing"
	printf '%s' "$1" | jq -e "$2" >/dev/null 2>&1 ||
		lvt_fail "$3 (jq: $2) in: $(printf '%s' "$1" | jq -c . 2>/dev/null | head -c 1500)"
}

# lvt_wait_for SECONDS WHAT COMMAND [ARG]...: run COMMAND every half second until it succeeds;
# fail naming WHAT (and COMMAND's last output) after SECONDS.  LVT_WAITED: seconds it took.
lvt_wait_for() {
	w_max=$1 w_what=$2
	shift 2
	w_t=$(lvt_uptime)
	while ! w_out=$("$@" 2>&1); do
		if [ "$(awk -v a="$w_t" -v b="$(lvt_uptime)" -v m="$w_max" \
			'BEGIN { print (b - a >= m) ? 1 : 0 }')" = 1 ]; then
			lvt_fail "$w_what: not after $w_max s; last: $(printf '%s' "$w_out" | tail -c 1500)"
		fi
		sleep 0.5
	done
	# shellcheck disable=SC2034 # read by the tests
	LVT_WAITED=$(lvt_since "$w_t")
}
