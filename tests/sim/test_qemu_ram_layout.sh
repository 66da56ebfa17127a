#!/bin/sh
# test_qemu_ram_layout.sh - vnumad finds each vNUMA cell's RAM, and QEMU's one RAM block when
# there are no cells, in a real QEMU.
#
# Starts qemu-system-x86_64 paused (-S, TCG, daemonized so that it returns once initialised)
# with vNUMA cells backed by memory backends, or without -numa, and two marker words per cell
# (all of guest RAM is one "cell" then) that QEMU itself writes into guest RAM at reset
# (-device loader): a quarter into the cell and its last word.
# tests/qemu_ram_probe then runs vnumad's discovery on the process and prints the host address
# a memory move of each marker's guest offset would touch; the marker must be there, read from
# /proc/PID/mem.  Cases: two equal cells (creation order against address order), two unequal
# cells (node 0's 64 MiB mapped above node 1's 192 MiB), three cells of unequal size in
# libvirt 9's JSON form with -object order unlike nodeid order, and two 2 MiB cells (QEMU's own
# 2 MiB RAM blocks share their size), where vnumad must either be right or say why it cannot
# tell (and then moves nothing), never be wrong; then no -numa: -m alone, libvirt's
# -machine memory-backend=, -mem-path, a -m QEMU rounds up, and a DIMM's backend of the RAM's
# size, where vnumad must find the RAM block for certain.
#
# Without QEMU (packaging/install-system-deps.sh installs it) or without the right to read its
# memory the test says why and passes, unless VNUMAD_REQUIRE_QEMU is set.
set -u

: "${VNUMAD_BINDIR:?set VNUMAD_BINDIR to the build directory}"
PROBE=$VNUMAD_BINDIR/tests/qemu_ram_probe
QEMU=${VNUMAD_QEMU:-qemu-system-x86_64}
MIB=1048576

skip() {
	if [ -n "${VNUMAD_REQUIRE_QEMU:-}" ]; then
		echo "FAIL: $* (VNUMAD_REQUIRE_QEMU is set)" >&2
		exit 1
	fi
	echo "SKIP: $*"
	exit 0
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

[ -x "$PROBE" ] || fail "no $PROBE"
command -v "$QEMU" >/dev/null 2>&1 || skip "$QEMU is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/qemu-ram-layout.XXXXXX") || exit 1
QPID=
cleanup() {
	rc=$?
	[ -n "$QPID" ] && kill -9 "$QPID" 2>/dev/null
	[ $rc -ne 0 ] && for f in "$tmp"/*.err "$tmp"/*.out; do
		[ -s "$f" ] && { echo "--- $f"; head -30 "$f"; }
	done
	rm -rf "$tmp"
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# le_hex VALUE: the 8 bytes of a 16-digit hex value, little-endian, as od -tx1 prints them.
le_hex() {
	v=$1 out=
	while [ -n "$v" ]; do
		rest=${v%??}
		out=$out${v#"$rest"}
		v=$rest
	done
	echo "$out"
}

# mem_read ADDR: 8 bytes of QEMU's memory at ADDR (8-byte aligned), as hex digits.
mem_read() {
	dd if="/proc/$QPID/mem" bs=8 count=1 skip=$(($1 / 8)) 2>/dev/null | od -An -tx1 |
		tr -d ' \n'
}

# start NAME OPTIONS...: QEMU paused and initialised, its pid in QPID.
start() {
	name=$1
	shift
	rm -f "$tmp/qemu.pid"
	"$QEMU" -name "guest=$name,debug-threads=on" -S -display none -nodefaults \
		-machine q35,accel=tcg -daemonize -pidfile "$tmp/qemu.pid" "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" || fail "$name: QEMU did not start"
	QPID=$(cat "$tmp/qemu.pid")
	[ -n "$QPID" ] || fail "$name: no pid file"
	first=$(sed -n '1s/-.*//p' "/proc/$QPID/maps")
	[ ${#first} -gt 0 ] && [ ${#first} -le 16 ] || fail "$name: no maps for pid $QPID"
	[ "$(mem_read $((0x$first)))" != "" ] ||
		skip "cannot read QEMU's memory through /proc/$QPID/mem (no ptrace rights?)"
}

stop() {
	kill -9 "$QPID" 2>/dev/null
	QPID=
}

# markers MIB...: per cell of MIB MiB (nodeid order), the -device options of its two
# markers, and in $tmp/markers "offset value" lines.
markers() {
	start=0 cell=0 opts=
	: >"$tmp/markers"
	for mib in "$@"; do
		size=$((mib * MIB))
		for off in $((start + size / 4)) $((start + size - 8)); do
			value=$(printf '5a5a%08x%04x' "$cell" $((off / MIB % 65536)))
			opts="$opts -device loader,addr=$(printf '0x%x' "$off"),data=0x$value,data-len=8"
			printf '%s %s\n' "$off" "$value" >>"$tmp/markers"
		done
		start=$((start + size)) cell=$((cell + 1))
	done
	echo "$opts"
}

# check NAME ALLOW_UNLOCATED: every marker is where the probe says its offset is.
check() {
	name=$1
	# shellcheck disable=SC2046 # one argument per offset
	"$PROBE" "$QPID" $(cut -d' ' -f1 "$tmp/markers") >"$tmp/$name.probe"
	rc=$?
	if [ $rc -eq 2 ] && [ "$2" = yes ]; then
		echo "ok: $name: not located, so vnumad moves none of it: $(cat "$tmp/$name.probe")"
		return
	fi
	[ $rc -eq 0 ] || fail "$name: qemu_ram_probe exited $rc: $(cat "$tmp/$name.probe")"
	while read -r off value; do
		host=$(sed -n "s/^offset $(printf '0x%x' "$off") host=//p" "$tmp/$name.probe")
		[ -n "$host" ] || fail "$name: no host address for guest offset $off"
		got=$(mem_read $((host)))
		[ "$got" = "$(le_hex "$value")" ] ||
			fail "$name: guest offset $off -> $host holds $got, not the marker $value"
	done <"$tmp/markers"
	echo "ok: $name: $(grep -c . "$tmp/markers") markers where vnumad places them"
}

# kv_cells ORDER MIB...: key=value -object options in ORDER (nodeids), -numa nodes by nodeid.
kv_cells() {
	order=$1
	shift
	opts=
	for n in $order; do
		eval "mib=\${$((n + 1))}"
		opts="$opts -object memory-backend-ram,id=ram-node$n,size=${mib}M"
	done
	n=0
	for mib in "$@"; do
		opts="$opts -numa node,nodeid=$n,cpus=$n,memdev=ram-node$n"
		n=$((n + 1))
	done
	echo "$opts -smp $# -m $(($(echo "$@" | tr ' ' '+')))M"
}

# 1. Two equal cells: told apart by QEMU's creation order against the mapping order.
# shellcheck disable=SC2046
start equal2 $(kv_cells "0 1" 64 64) $(markers 64 64)
check equal2 no
stop

# 2. The reported case: node 0's 64 MiB backend is mapped above node 1's 192 MiB.
# shellcheck disable=SC2046
start unequal2 $(kv_cells "0 1" 64 192) $(markers 64 192)
check unequal2 no
stop

# 3. libvirt 9's form (JSON -object, each before its -numa node), -object order 2, 0, 1.
json() {
	printf '{"qom-type":"memory-backend-ram","id":"ram-node%d","size":%d}' "$1" $(($2 * MIB))
}
# shellcheck disable=SC2046
start unequal3 -m 224M -smp 3 \
	-object "$(json 2 32)" -numa node,nodeid=2,cpus=2,memdev=ram-node2 \
	-object "$(json 0 64)" -numa node,nodeid=0,cpus=0,memdev=ram-node0 \
	-object "$(json 1 128)" -numa node,nodeid=1,cpus=1,memdev=ram-node1 \
	$(markers 64 128 32)
check unequal3 no
stop

# 4. Two 2 MiB cells: right, or not located with a reason; never wrong.
# shellcheck disable=SC2046
start tiny2 $(kv_cells "0 1" 2 2) $(markers 2 2)
check tiny2 yes
stop

# 5. No -numa: QEMU's one RAM block, by -m's size; by libvirt's -machine memory-backend=; on
# -mem-path (QEMU's file in that directory); -m 65540k, which QEMU rounds up to 64 MiB and
# 8 KiB; and beside a DIMM's backend of the same size, created before it.
# shellcheck disable=SC2046
start single -m 256M $(markers 256)
check single no
stop
# shellcheck disable=SC2046
start libvirt1 -machine memory-backend=pc.ram -m size=131072k \
	-object '{"qom-type":"memory-backend-ram","id":"pc.ram","size":134217728}' $(markers 128)
check libvirt1 no
stop
mkdir "$tmp/mem" || fail "cannot make $tmp/mem"
# shellcheck disable=SC2046
start mempath1 -m 64 -mem-path "$tmp/mem" $(markers 64)
check mempath1 no
stop
# shellcheck disable=SC2046
start odd1 -m 65540k $(markers 64)
check odd1 no
stop
# shellcheck disable=SC2046
start dimm1 -m 128M,slots=2,maxmem=1G -object memory-backend-ram,id=mem1,size=128M \
	-device pc-dimm,id=dimm1,memdev=mem1 $(markers 128)
check dimm1 no
stop

echo "PASS: test_qemu_ram_layout"
