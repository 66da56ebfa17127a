#!/bin/sh
# numa-host.sh - run a command on an emulated NUMA host: Debian's own kernel under QEMU TCG with
# 1 to 8 emulated NUMA nodes, the host's root filesystem shared in read-only over 9p, so the
# command runs the host's binaries (the build tree included) at the same absolute paths.
#
#   numa-host.sh run --nodes N --out DIR [--timeout S] [--mem MIB] [--kernel VMLINUZ]
#                    [--append ARGS] [--qemu-args ARGS] [--env NAME=VALUE]... [--quiet]
#                    -- COMMAND [ARG]...
#   numa-host.sh check          say whether a run is possible (exit 0) or what is missing (77)
#
# Each node has 2 CPUs and MIB/N of memory (default 2048 in all: 2 nodes x 1 GiB with 4 CPUs,
# 4 nodes x 512 MiB with 8 CPUs).  Node distances form a ring: 10 local, 21 to a neighbour, 31
# further away (2 nodes: 10 21 / 21 10).  DIR is shared writable at its own path; in the guest
# it holds:
#   cmd.log      COMMAND's stdout and stderr (written live)
#   console.log  the serial console: kernel messages and the guest /init's progress
#   qemu.log     QEMU's own messages
#   status       COMMAND's exit status, written by the guest when COMMAND ends
#   timing       guest uptime at /init, at COMMAND's start and end
#   heartbeat    guest uptime, rewritten by /init every NH_BEAT_S seconds while COMMAND runs
#   job.sh       the script the guest runs (environment, working directory, COMMAND)
# Inside, /proc, /sys (with debugfs at /sys/kernel/debug), /dev (+ /dev/pts, /dev/shm) and a
# tmpfs /run are the guest's own; everything else is the host's, read-only.  HOME and TMPDIR
# point into /run; PATH, VNUMAD_* and every --env are passed through; the working directory
# is the caller's.  cmd.log is copied to stdout at the end unless --quiet.
#
# Exit status: COMMAND's; 77 when QEMU, a kernel, a static busybox or cpio is missing (the
# message says which; packaging/install-system-deps.sh installs them); 124 on timeout (default
# 240 s, for all attempts together); 125 when the guest gave no status (boot failure, panic:
# see console.log); 2 on a usage error.
#
# A guest kernel that locks up (a soft lockup: every emulated CPU spinning in the kernel, seen
# under TCG in libvirtd and virsh before vnumad ran) panics at once (softlockup_panic=1, with
# every CPU's backtrace on the console) instead of spinning until the timeout.  A guest that
# stops altogether (no heartbeat for NH_STALL_S seconds: not even /init's shell loop runs or
# reaches the out share) is stopped.  Either way the run is then booted again, once, in what
# is left of --timeout, and says so; the first attempt's files are moved to DIR/attempt-1/.
# VNUMAD_SYSTEM_RETRY=0 turns the second attempt off; each second boot is also noted in
# $VNUMAD_SYSTEM_RETRY_LOG when that is set.
#
# As a library: `NUMA_HOST_LIB=1 . tests/system/numa-host.sh` defines the nh_* functions
# without running anything; nh_run takes the same arguments as `run` and runs in a subshell,
# so it changes none of the caller's variables.
#
# QEMU is $VNUMAD_QEMU, default qemu-system-x86_64 from PATH.  The kernel is looked for in
# --kernel or $VNUMAD_KERNEL (its modules in $VNUMAD_KERNEL_MODULES, ../lib/modules/<kver>
# beside it or /lib/modules/<kver>), then under kernel/ of $VNUMAD_SYSTEM_CACHE,
# /var/cache/vnumad-system and ~/.cache/vnumad-system (install-system-deps.sh unpacks one
# there), then in /boot.  The initramfs, and the vmlinux taken out of the kernel's bzImage for a
# faster boot, are made once and cached in images/ of $VNUMAD_SYSTEM_CACHE (default
# /var/cache/vnumad-system) or, where that is not writable, of ~/.cache/vnumad-system.
# Needs, besides: timeout, cpio, a static busybox ($VNUMAD_BUSYBOX, default /bin/busybox);
# xz and readelf for the faster boot.

NH_TIMEOUT_S_DEFAULT=240 # seconds before QEMU is killed: a stuck guest must not hang a test run
NH_MEM_MIB_DEFAULT=2048  # guest memory in MiB, split evenly between the nodes
NH_CPUS_PER_NODE=2       # vCPUs per node (one socket of 2 cores each)
NH_DIST_NEAR=21          # SLIT distance to a neighbouring node on the ring
NH_DIST_FAR=31           # SLIT distance to any other node
NH_MSIZE=262144          # 9p message size in bytes: larger reads and writes, fewer round trips
NH_RETRY_MIN_S=60        # a locked-up guest is booted again only with this much --timeout left
NH_BEAT_S=5              # the guest's /init writes DIR/heartbeat this often...
# ...and a guest whose heartbeat is this old (or never came) has stopped: minutes, where a
# heartbeat under load comes late by seconds.  $VNUMAD_SYSTEM_STALL_S sets it (for tests).
NH_STALL_S=${VNUMAD_SYSTEM_STALL_S:-180}
# The kernel's command line: warnings and backtraces on the console (quiet would hide the
# backtraces, logged at the default level), and a soft lockup is a panic, so the run ends.
NH_APPEND_BASE="console=ttyS0 loglevel=5 softlockup_panic=1 softlockup_all_cpu_backtrace=1 \
panic=-1"
# 9p over virtio, in load order; the ones a kernel has built in are skipped.
NH_MODULES="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci netfs \
fscache 9pnet 9pnet_virtio 9p"
NH_MODDIRS="drivers/virtio fs/netfs fs/fscache net/9p fs/9p"

nh_say() { echo "numa-host: $*" >&2; }
nh_skip() {
	nh_say "SKIP: $*"
	return 77
}

# Quote $1 for sh: 'it'\''s'.
nh_quote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

# Escape commas for a QEMU option value.
nh_qemu_escape() {
	printf '%s' "$1" | sed 's/,/,,/g'
}

# Is ROOT/boot/vmlinuz-KVER usable: readable, with the 9p module in ROOT/lib/modules/KVER?
# Sets NH_KERNEL and NH_MODDIR.  ROOT may be empty (the host's /).
nh_kernel_try() {
	[ -r "$1/boot/vmlinuz-$2" ] || return 1
	for lib in "$1/lib/modules/$2" "$1/usr/lib/modules/$2"; do
		if [ -n "$(find "$lib/kernel/fs/9p" -name '9p.ko*' 2>/dev/null)" ]; then
			NH_KERNEL=$1/boot/vmlinuz-$2
			NH_MODDIR=$lib/kernel
			return 0
		fi
	done
	return 1
}

# Newest usable kernel under ROOT/boot.
nh_kernel_in() {
	# shellcheck disable=SC2012 # kernel file names have no spaces
	for k in $(ls "$1"/boot/vmlinuz-* 2>/dev/null | sort -rV); do
		nh_kernel_try "$1" "${k##*/vmlinuz-}" && return 0
	done
	return 1
}

nh_kernel_find() {
	if [ -n "${NH_OPT_KERNEL:-}" ]; then
		[ -r "$NH_OPT_KERNEL" ] || nh_skip "kernel $NH_OPT_KERNEL is not readable" || return
		kver=${NH_OPT_KERNEL##*/}
		kver=${kver#vmlinu[xz]-}
		NH_KERNEL=$NH_OPT_KERNEL
		for NH_MODDIR in "${VNUMAD_KERNEL_MODULES:-}" \
			"${NH_OPT_KERNEL%/*}/../lib/modules/$kver/kernel" "/lib/modules/$kver/kernel"; do
			[ -d "$NH_MODDIR/fs/9p" ] && return 0
		done
		nh_skip "no modules (fs/9p) for $NH_OPT_KERNEL; set VNUMAD_KERNEL_MODULES"
		return
	fi
	for root in "${VNUMAD_SYSTEM_CACHE:-/var/cache/vnumad-system}" /var/cache/vnumad-system \
		"${HOME:-/nonexistent}/.cache/vnumad-system"; do
		nh_kernel_in "$root/kernel" && return 0
	done
	nh_kernel_in "" && return 0
	nh_skip "no kernel with 9p modules found (run packaging/install-system-deps.sh as root)"
}

# Everything a run needs from the host; 77 with a message naming what is missing.
nh_check() {
	NH_QEMU=${VNUMAD_QEMU:-qemu-system-x86_64}
	for t in "$NH_QEMU" cpio timeout; do
		command -v "$t" >/dev/null 2>&1 ||
			nh_skip "$t not found (run packaging/install-system-deps.sh as root)" || return
	done
	NH_BUSYBOX=${VNUMAD_BUSYBOX:-/bin/busybox}
	[ -x "$NH_BUSYBOX" ] ||
		nh_skip "$NH_BUSYBOX not found (install busybox-static)" || return
	if ldd "$NH_BUSYBOX" >/dev/null 2>&1; then
		nh_skip "$NH_BUSYBOX is dynamically linked (install busybox-static)"
		return
	fi
	nh_kernel_find
}

# The initramfs's /init (busybox sh): mount the shares, run DIR/job.sh chrooted into the host's
# root, then report its status in DIR/status and through isa-debug-exit (port 0xf4).
nh_init_script() {
	cat <<EOF
#!/bin/sh
# /init of the numa-host.sh initramfs
PATH=/bin
export PATH
up() { read -r s _ </proc/uptime; echo "\$s"; }
fail() {
	echo "numa-host-init: \$*"
	poweroff -f
	sleep 10
}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
t_init=\$(up)
echo "numa-host-init: /init at \${t_init} s"
for m in $NH_MODULES; do
	[ -e /lib/modules/\$m.ko ] || continue
	insmod /lib/modules/\$m.ko || fail "insmod \$m failed"
done
o=trans=virtio,version=9p2000.L,msize=$NH_MSIZE
mount -t 9p -o \$o out /out || fail "cannot mount the out share"
. /out/job.env || fail "cannot read job.env"
# cache=loose: the guest keeps what it read of the read-only root in its page cache, which
# halves the cost of starting a program; the host's files must not change during a run.
mount -t 9p -o \$o,ro,cache=loose hostroot /mnt || fail "cannot mount the host's root"
mount -t proc proc /mnt/proc || fail "cannot mount /proc"
mount -t sysfs sysfs /mnt/sys || fail "cannot mount /sys"
mount -t devtmpfs devtmpfs /mnt/dev || fail "cannot mount /dev"
mount -t tmpfs tmpfs /mnt/run || fail "cannot mount /run"
mkdir -p /mnt/dev/pts /mnt/dev/shm
mount -t debugfs debugfs /mnt/sys/kernel/debug || echo "numa-host-init: no debugfs"
mount -t devpts devpts /mnt/dev/pts || echo "numa-host-init: no /dev/pts"
mount -t tmpfs tmpfs /mnt/dev/shm || echo "numa-host-init: no /dev/shm"
mkdir -p /mnt/run/numa-host/home /mnt/run/numa-host/tmp "/mnt\$NH_OUT" 2>/dev/null
mount -o bind /out "/mnt\$NH_OUT" || fail "cannot bind the out share to \$NH_OUT"
t_start=\$(up)
echo "numa-host-init: running the command at \${t_start} s"
# The heartbeat: the harness stops a guest that no longer writes it (see NH_STALL_S).
while :; do
	up >/out/heartbeat
	sleep $NH_BEAT_S
done &
beat=\$!
chroot /mnt /bin/sh "\$NH_OUT/job.sh" </dev/null >/out/cmd.log 2>&1
rc=\$?
kill \$beat
t_end=\$(up)
echo "\$rc" >/out/status
printf 'init_s=%s\nstart_s=%s\nend_s=%s\n' "\$t_init" "\$t_start" "\$t_end" >/out/timing
echo "numa-host-init: command exited with status \$rc at \${t_end} s"
printf "\\\\\$(printf '%03o' "\$rc")" | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
fail "isa-debug-exit did not stop QEMU"
EOF
}

# Copy module NAME from NH_MODDIR into DEST as NAME.ko (decompressed); nothing if built in.
nh_module_copy() {
	for d in $NH_MODDIR_LIST; do
		for f in "$d/$1.ko" "$d/$1.ko.xz" "$d/$1.ko.zst" "$d/$1.ko.gz"; do
			[ -f "$f" ] || continue
			case $f in
			*.xz) xz -dc "$f" >"$2/$1.ko" ;;
			*.zst) zstd -qdc "$f" >"$2/$1.ko" ;;
			*.gz) gzip -dc "$f" >"$2/$1.ko" ;;
			*) cp "$f" "$2/$1.ko" ;;
			esac
			return
		done
	done
}

# A writable directory to cache boot images in.
nh_cache_dir() {
	for c in "${VNUMAD_SYSTEM_CACHE:-/var/cache/vnumad-system}/images" \
		"${HOME:-/nonexistent}/.cache/vnumad-system/images" "$NH_OUT/.images"; do
		mkdir -p "$c" 2>/dev/null && [ -w "$c" ] && echo "$c" && return 0
	done
	return 1
}

# Under TCG the firmware and the kernel's own xz decompression take about 6 s of every boot;
# the ELF vmlinux inside the bzImage, booted by QEMU through its PVH entry point, skips both.
# Extract it once into the cache (about 65 MB) and point NH_KERNEL at it; keep the bzImage when
# it is not xz-compressed, has no PVH entry point, or xz or readelf is missing.
nh_vmlinux() {
	head -c 4 "$NH_KERNEL" | grep -q ELF && return 0
	command -v xz >/dev/null 2>&1 && command -v readelf >/dev/null 2>&1 || return 0
	elf=$1/vmlinux-$2-$(cksum <"$NH_KERNEL" | cut -d' ' -f1)
	if [ ! -s "$elf" ]; then
		# shellcheck disable=SC2013 # byte offsets, one word each
		for off in $(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$NH_KERNEL" | cut -d: -f1); do
			tail -c +$((off + 1)) "$NH_KERNEL" | xz -dcq >"$elf.$$" 2>/dev/null
			head -c 4 "$elf.$$" | grep -q ELF && break
		done
		# XEN_ELFNOTE_PHYS32_ENTRY (18): the PVH entry point QEMU needs.
		if readelf -n "$elf.$$" 2>/dev/null | grep -Eiq 'PHYS32_ENTRY|type: \(0x0*12\)'; then
			mv -f "$elf.$$" "$elf"
		else
			nh_say "no PVH vmlinux in $NH_KERNEL; booting the bzImage (slower)"
			rm -f "$elf.$$"
			return 0
		fi
	fi
	NH_KERNEL=$elf
}

# Build (or reuse) the initramfs for NH_KERNEL; sets NH_INITRD (and NH_KERNEL, nh_vmlinux).
nh_initramfs() {
	NH_MODDIR_LIST=
	for d in $NH_MODDIRS; do NH_MODDIR_LIST="$NH_MODDIR_LIST $NH_MODDIR/$d"; done
	kver=${NH_KERNEL##*/}
	kver=${kver#vmlinu[xz]-}
	key=$({
		nh_init_script
		cat "$NH_BUSYBOX"
		for d in $NH_MODDIR_LIST; do ls -l "$d" 2>/dev/null; done
	} | cksum | cut -d' ' -f1)
	if ! cache=$(nh_cache_dir); then
		nh_say "no writable directory for the initramfs"
		return 125
	fi
	nh_vmlinux "$cache" "$kver"
	NH_INITRD=$cache/initramfs-$kver-$key.cpio
	[ -s "$NH_INITRD" ] && return 0
	st=$(mktemp -d) || return 125
	mkdir -p "$st/bin" "$st/lib/modules" "$st/proc" "$st/sys" "$st/dev" "$st/mnt" "$st/out"
	cp "$NH_BUSYBOX" "$st/bin/busybox" || {
		rm -rf "$st"
		return 125
	}
	for a in $("$NH_BUSYBOX" --list); do
		[ "$a" = busybox ] || ln -s busybox "$st/bin/$a"
	done
	mknod -m 600 "$st/dev/console" c 5 1 2>/dev/null || true
	for m in $NH_MODULES; do nh_module_copy "$m" "$st/lib/modules"; done
	nh_init_script >"$st/init"
	chmod 755 "$st/init"
	(cd "$st" && find . | cpio -o -H newc --quiet) >"$NH_INITRD.$$" &&
		mv -f "$NH_INITRD.$$" "$NH_INITRD"
	rc=$?
	rm -rf "$st" "$NH_INITRD.$$"
	[ $rc -eq 0 ] && return 0
	nh_say "building $NH_INITRD failed"
	return 125
}

# Write DIR/job.env (read by /init) and DIR/job.sh (COMMAND with its environment).
nh_job_write() {
	printf 'NH_OUT=%s\n' "$(nh_quote "$NH_OUT")" >"$NH_OUT/job.env"
	{
		echo "# written by numa-host.sh: run in the guest, chrooted into the host's root"
		printf 'export PATH=%s\n' "$(nh_quote "$PATH")"
		echo "export HOME=/run/numa-host/home TMPDIR=/run/numa-host/tmp"
		printf 'export NUMA_HOST_OUT=%s NUMA_HOST_NODES=%s\n' "$(nh_quote "$NH_OUT")" "$NH_OPT_NODES"
		for name in LANG LC_ALL $(env | sed -n 's/^\(VNUMAD_[A-Za-z0-9_]*\)=.*/\1/p'); do
			isset='' value=''
			eval "isset=\${$name+y} value=\${$name:-}"
			[ "$isset" = y ] && printf 'export %s=%s\n' "$name" "$(nh_quote "$value")"
		done
		printf '%s\n' "$NH_OPT_ENV"
		printf 'cd %s 2>/dev/null || cd /\n' "$(nh_quote "$(pwd -P)")"
		printf 'exec'
		for a in "$@"; do printf ' %s' "$(nh_quote "$a")"; done
		echo
	} >"$NH_OUT/job.sh"
}

nh_usage() {
	cat >&2 <<EOF
usage: numa-host.sh run --nodes N --out DIR [--timeout S] [--mem MIB] [--kernel VMLINUZ]
                        [--append ARGS] [--qemu-args ARGS] [--env NAME=VALUE]... [--quiet]
                        -- COMMAND [ARG]...
       numa-host.sh check
EOF
	return 2
}

# A usage error: say what, show the usage, return 2.
nh_bad() {
	nh_say "$*"
	nh_usage
}

nh_now() { date +%s.%N; }
nh_elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# Parse run's options into NH_OPT_*; NH_SHIFT is how many arguments they took, "--" included.
nh_parse() {
	NH_OPT_NODES='' NH_OPT_OUT='' NH_OPT_TIMEOUT=$NH_TIMEOUT_S_DEFAULT
	NH_OPT_MEM=$NH_MEM_MIB_DEFAULT NH_OPT_KERNEL=${VNUMAD_KERNEL:-} NH_OPT_APPEND=''
	NH_OPT_ENV='' NH_OPT_QEMU='' NH_OPT_QUIET=no NH_SHIFT=0
	while [ $# -gt 0 ]; do
		NH_SHIFT=$((NH_SHIFT + 1))
		case $1 in
		--) return 0 ;;
		--quiet) NH_OPT_QUIET=yes && shift && continue ;;
		--nodes | --out | --timeout | --mem | --kernel | --append | --env | --qemu-args)
			[ $# -ge 2 ] || { nh_bad "$1 wants a value"; return; } ;;
		*) nh_bad "unknown option $1"; return ;;
		esac
		case $1 in
		--nodes) NH_OPT_NODES=$2 ;;
		--out) NH_OPT_OUT=$2 ;;
		--timeout) NH_OPT_TIMEOUT=$2 ;;
		--mem) NH_OPT_MEM=$2 ;;
		--kernel) NH_OPT_KERNEL=$2 ;;
		--append) NH_OPT_APPEND=$2 ;;
		--qemu-args) NH_OPT_QEMU=$2 ;;
		--env)
			case $2 in
			[A-Za-z_]*=*) ;;
			*) nh_bad "--env wants NAME=VALUE, not $2"; return ;;
			esac
			NH_OPT_ENV="$NH_OPT_ENV
export ${2%%=*}=$(nh_quote "${2#*=}")"
			;;
		esac
		NH_SHIFT=$((NH_SHIFT + 1))
		shift 2
	done
	nh_bad "missing -- before COMMAND"
}

nh_validate() {
	case $NH_OPT_NODES in
	[1-8]) ;;
	*) nh_bad "--nodes wants 1 to 8, not '$NH_OPT_NODES'"; return ;;
	esac
	case $NH_OPT_TIMEOUT$NH_OPT_MEM in
	*[!0-9]*) nh_bad "--timeout and --mem want whole numbers"; return ;;
	esac
	case $NH_STALL_S in
	'' | *[!0-9]*) nh_bad "VNUMAD_SYSTEM_STALL_S wants whole seconds, not '$NH_STALL_S'"; return ;;
	esac
	[ -n "$NH_OPT_OUT" ] || { nh_bad "--out DIR is required"; return; }
	[ "$NH_OPT_MEM" -ge $((NH_OPT_NODES * 64)) ] ||
		{ nh_bad "--mem wants at least 64 MiB per node"; return; }
	mkdir -p "$NH_OPT_OUT" && NH_OUT=$(cd "$NH_OPT_OUT" && pwd -P) || return 2
	[ "$NH_OUT" != / ] || nh_bad "--out cannot be /"
}

# The guest's distance from node $1 to node $2: a ring of N nodes.
nh_distance() {
	d=$(($1 > $2 ? $1 - $2 : $2 - $1))
	[ $((NH_OPT_NODES - d)) -lt $d ] && d=$((NH_OPT_NODES - d))
	[ "$d" -le 1 ] && echo $NH_DIST_NEAR || echo $NH_DIST_FAR
}

# The last lines of the console, on stderr: why a guest gave no status.
nh_console_tail() {
	tail -n 15 "$NH_OUT/console.log" 2>/dev/null | sed 's/^/  console: /' >&2
}

# Turn QEMU's exit code (timeout's, rather) and DIR/status into the run's status.
nh_status() {
	q=$1
	st=$(cat "$NH_OUT/status" 2>/dev/null) || st=
	case $st in
	'' | *[!0-9]*) st= ;;
	esac
	if [ "${NH_STALLED:-no}" = yes ]; then
		nh_console_tail # nh_watch said why
		return 125
	fi
	case $q in
	124 | 137)
		nh_say "timed out after $NH_LEFT_S s (console: $NH_OUT/console.log)"
		return 124
		;;
	esac
	if [ $((q % 2)) -eq 1 ] && [ -n "$st" ]; then
		[ $((st % 128)) -eq $((q / 2)) ] ||
			nh_say "warning: status file says $st, isa-debug-exit said $((q / 2))"
		return "$st"
	fi
	if [ "$q" -eq 0 ]; then
		nh_say "the guest powered off without a status (console: $NH_OUT/console.log)"
	else
		nh_say "QEMU exited with $q and the guest gave no status (see $NH_OUT/qemu.log)"
		sed 's/^/  qemu: /' "$NH_OUT/qemu.log" >&2
	fi
	nh_console_tail
	return 125
}

# Sets the positional parameters to QEMU's arguments, then boots it under timeout.
nh_qemu() {
	n=$NH_OPT_NODES
	per=$((NH_OPT_MEM / n))
	cpus=$((n * NH_CPUS_PER_NODE))
	set -- -accel tcg -machine q35 -cpu max -m $((per * n)) -nodefaults -display none \
		-no-reboot -smp "$cpus,sockets=$n,cores=$NH_CPUS_PER_NODE,threads=1"
	i=0
	while [ $i -lt "$n" ]; do
		c=$((i * NH_CPUS_PER_NODE))
		set -- "$@" -object memory-backend-ram,id=m$i,size=${per}M \
			-numa node,nodeid=$i,cpus=$c-$((c + NH_CPUS_PER_NODE - 1)),memdev=m$i
		i=$((i + 1))
	done
	i=0
	while [ $i -lt "$n" ]; do
		j=$((i + 1))
		while [ $j -lt "$n" ]; do
			set -- "$@" -numa dist,src=$i,dst=$j,val="$(nh_distance $i $j)"
			j=$((j + 1))
		done
		i=$((i + 1))
	done
	set -- "$@" -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
		-chardev file,id=console,path="$(nh_qemu_escape "$NH_OUT/console.log")" \
		-serial chardev:console \
		-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
		-virtfs local,path="$(nh_qemu_escape "$NH_OUT")",mount_tag=out,security_model=none \
		-kernel "$NH_KERNEL" -initrd "$NH_INITRD" \
		-append "$NH_APPEND_BASE $NH_OPT_APPEND"
	# shellcheck disable=SC2086 # split on purpose: extra QEMU arguments, for debugging
	set -- "$@" $NH_OPT_QEMU
	timeout -k 10 "$NH_LEFT_S" "$NH_QEMU" "$@" </dev/null >"$NH_OUT/qemu.log" 2>&1 &
	nh_watch $!
}

# nh_watch PID: wait for QEMU's timeout (PID) and return its status; stop it, with
# NH_STALLED=yes, when the guest's heartbeat is NH_STALL_S seconds old (or has not come
# NH_STALL_S seconds after the boot began).
nh_watch() {
	NH_STALLED=no
	since=$(date +%s)
	while kill -0 "$1" 2>/dev/null; do
		sleep 1
		beat=$(stat -c %Y "$NH_OUT/heartbeat" 2>/dev/null) || beat=$since
		[ "$beat" -ge "$since" ] || beat=$since
		[ $(($(date +%s) - beat)) -ge "$NH_STALL_S" ] || continue
		NH_STALLED=yes
		nh_say "the guest stopped: no heartbeat for $NH_STALL_S s; stopping QEMU"
		kill "$1" 2>/dev/null
		break
	done
	wait "$1"
}

# nh_retry_log MESSAGE REPORT: append a second boot's notice, with the first lines of the
# lockup's report, to $VNUMAD_SYSTEM_RETRY_LOG when it is set (`make check` prints that file
# at its end, so a retry shows in the output of a run whose tests all passed).
nh_retry_log() {
	[ -n "${VNUMAD_SYSTEM_RETRY_LOG:-}" ] || return 0
	{
		echo "numa-host ($(date -u +%FT%TZ), $NH_OPT_NODES nodes): $1"
		head -n 40 "$2" 2>/dev/null
	} >>"$VNUMAD_SYSTEM_RETRY_LOG" 2>/dev/null
	return 0
}

# Did the guest's kernel lock up?  (console.log: the watchdog's or RCU's report.)
nh_locked_up() {
	grep -q -E 'watchdog: BUG: soft lockup|rcu: INFO: rcu_[a-z]+ (self-)?detected stall' \
		"$NH_OUT/console.log" 2>/dev/null
}

# nh_set_aside NAME KEEP: move what an attempt left in DIR to DIR/NAME/, but for the entries
# listed in KEEP (one per line: what was there before the run) and job.sh, job.env.
nh_set_aside() {
	mkdir -p "$NH_OUT/$1" || return
	for f in "$NH_OUT"/* "$NH_OUT"/.[!.]*; do
		[ -e "$f" ] || continue
		b=${f##*/}
		case $b in
		"$1" | job.sh | job.env) continue ;;
		esac
		printf '%s\n' "$2" | grep -q -x -F -e "$b" && continue
		mv "$f" "$NH_OUT/$1/" || return
	done
}

# One line on stderr: where the time went.
nh_summary() {
	t=$(cat "$NH_OUT/timing" 2>/dev/null)
	ti=$(echo "$t" | sed -n 's/^init_s=//p')
	ts=$(echo "$t" | sed -n 's/^start_s=//p')
	te=$(echo "$t" | sed -n 's/^end_s=//p')
	if [ -n "$te" ]; then
		nh_say "$NH_OPT_NODES nodes: /init at $ti s of guest uptime, command $(nh_elapsed "$ts" \
"$te") s, wall $(nh_elapsed "$1" "$2") s, status $3"
	else
		nh_say "$NH_OPT_NODES nodes: wall $(nh_elapsed "$1" "$2") s, status $3"
	fi
}

nh_run() (
	nh_parse "$@" || return
	shift "$NH_SHIFT"
	[ $# -gt 0 ] || { nh_bad "no COMMAND after --"; return; }
	nh_validate || return
	nh_check || return
	(cd "$NH_OUT" && rm -f cmd.log console.log qemu.log status timing heartbeat job.sh job.env)
	nh_job_write "$@" || return 125
	nh_initramfs || return
	t0=$(nh_now)
	before=$(ls -A "$NH_OUT")
	NH_LEFT_S=$NH_OPT_TIMEOUT
	attempt=1
	while :; do
		nh_qemu
		nh_status $?
		rc=$?
		t1=$(nh_now)
		[ $attempt -eq 1 ] || break
		if [ $NH_STALLED = yes ]; then
			why="stopped (no heartbeat for $NH_STALL_S s)"
		elif [ $rc -eq 125 ] && nh_locked_up; then
			why="locked up"
		else
			break
		fi
		rc=125
		NH_LEFT_S=$(awk -v a="$t0" -v b="$t1" -v t="$NH_OPT_TIMEOUT" \
			'BEGIN { printf "%d", t - (b - a) }')
		if [ "${VNUMAD_SYSTEM_RETRY:-1}" = 0 ] || [ "$NH_LEFT_S" -lt $NH_RETRY_MIN_S ]; then
			nh_say "the guest $why (console: $NH_OUT/console.log); not booting" \
				"again (VNUMAD_SYSTEM_RETRY=${VNUMAD_SYSTEM_RETRY:-1}, $NH_LEFT_S s left)"
			break
		fi
		# The first report and the backtraces after it: what the next lockup is to be
		# diagnosed from, when the second attempt passes and the caller removes DIR.
		sed -n -E '/soft lockup|detected stall/,$p' "$NH_OUT/console.log" | head -n 200 |
			sed 's/^/  lockup: /' >"$NH_OUT/lockup.txt"
		cat "$NH_OUT/lockup.txt" >&2
		nh_set_aside attempt-1 "$before" || break
		msg="the guest $why after $(nh_elapsed "$t0" "$t1") s (console:\
 $NH_OUT/attempt-1/console.log): booting again, attempt 2 of 2, within the $NH_LEFT_S s left"
		nh_say "$msg"
		nh_retry_log "$msg" "$NH_OUT/attempt-1/lockup.txt"
		attempt=2
	done
	[ $NH_OPT_QUIET = yes ] || cat "$NH_OUT/cmd.log" 2>/dev/null
	nh_summary "$t0" "$t1" "$rc"
	exit "$rc"
)

if [ -z "${NUMA_HOST_LIB:-}" ]; then
	case ${1:-} in
	run)
		shift
		nh_run "$@"
		;;
	check)
		nh_check && nh_say "ready: $("$NH_QEMU" --version | head -n 1), kernel $NH_KERNEL"
		;;
	*) nh_usage ;;
	esac
fi
