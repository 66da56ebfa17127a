#!/bin/sh
# bench_migrate_numa.sh - run bench_migrate (the paced migrator against migratepages and
# migrate_pages(2)) on an emulated 2-node host (tests/system/numa-host.sh: Debian's kernel
# under QEMU TCG, the build tree shared in over 9p) and summarize its rounds.
#
#   bench_migrate_numa.sh [--rounds N] [--legs L] [--mib MIB] [--mem MIB]
#                         [--modes 4k,thp,thp2m] [--keep]
#
# --rounds: rounds of each mode (default 3); --legs: moves per method per round, of which the
# round keeps the fastest (default 3); --mib: memory each leg moves (default 256);
# --mem: the emulated host's memory, split over its 2 nodes (default 2048); --modes: which of
# bench_migrate's modes to run (default all); --keep: keep the logs even when all went well.
# The binary is $VNUMAD_BINDIR/tests/bench_migrate (VNUMAD_BINDIR defaults to build/ beside
# tests/), built beforehand (`make bench-migrate` does both).  In the guest the script turns
# kernel.numa_balancing off first: pages automatic NUMA balancing has just protected read as
# absent to move_pages until touched again (host/linux/actuate.h; with it on, the migrator
# left 70% of a 256 MiB buffer behind), and the benchmark wants the engine's cost.
#
# Prints each round's rates and, per mode, the medians and the median ratio
# migrator/migratepages (the issue's target: >= 0.9 unthrottled) and migrator/migrate_pages(2).
# A benchmark: exit 0 whatever the numbers, also when QEMU or a kernel is missing (it says
# so); 1 when the guest or bench_migrate failed, with the logs' directory named.
#
# The guest's RAM is allocated up front (QEMU -mem-prealloc), so that no leg pays for the host
# faulting in the memory it moves to.
#
# `bench_migrate_numa.sh --guest BINARY ROUNDS LEGS MIB MODES` is the part that runs inside.
set -u

ROUNDS_DEFAULT=3   # rounds of each mode: the summary takes medians, so odd and >= 3
LEGS_DEFAULT=3     # legs per method per round, the best kept: filters out other load
MIB_DEFAULT=256    # MiB moved per leg: 1-4 s a leg under TCG, well within a 1 GiB node
MEM_DEFAULT=2048   # the guest's memory in MiB (1 GiB per node)
TIMEOUT_BASE_S=120 # guest time allowed besides the rounds: boot, warm-up
TIMEOUT_MIB_S=0.2  # and per MiB per leg of each method and mode (slowest leg seen: 0.04)

# ---- Inside the guest -------------------------------------------------------------------

if [ "${1:-}" = --guest ]; then
	echo 0 >/proc/sys/kernel/numa_balancing ||
		echo "warning: cannot turn kernel.numa_balancing off"
	echo "guest: $(nproc) CPUs, kernel $(uname -r), numa_balancing=$(cat \
		/proc/sys/kernel/numa_balancing), THP $(cat \
		/sys/kernel/mm/transparent_hugepage/enabled)"
	numactl -H | head -n 1
	exec "$2" -r "$3" -l "$4" -m "$6" "$5"
fi

# ---- On the host ------------------------------------------------------------------------

HERE=$(cd "$(dirname "$0")" && pwd -P)
SRCDIR=${VNUMAD_SRCDIR:-$(cd "$HERE/../.." && pwd -P)}
BINDIR=${VNUMAD_BINDIR:-$SRCDIR/build}
ROUNDS=$ROUNDS_DEFAULT LEGS=$LEGS_DEFAULT MIB=$MIB_DEFAULT MEM=$MEM_DEFAULT MODES=4k,thp,thp2m
KEEP=no

usage() {
	echo "usage: bench_migrate_numa.sh [--rounds N] [--legs L] [--mib MIB] [--mem MIB]" \
		"[--modes 4k,thp,thp2m] [--keep]" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--keep) KEEP=yes && shift && continue ;;
	--rounds | --legs | --mib | --mem | --modes) [ $# -ge 2 ] || usage ;;
	*) usage ;;
	esac
	case $1 in
	--rounds) ROUNDS=$2 ;;
	--legs) LEGS=$2 ;;
	--mib) MIB=$2 ;;
	--mem) MEM=$2 ;;
	--modes) MODES=$2 ;;
	esac
	shift 2
done
case $ROUNDS$LEGS$MIB$MEM in
'' | *[!0-9]*) usage ;;
esac

HARNESS=$SRCDIR/tests/system/numa-host.sh
if ! msg=$(sh "$HARNESS" check 2>&1); then
	echo "bench_migrate_numa: SKIP: no emulated NUMA host here: $msg"
	exit 0
fi
# the guest runs it at the same absolute path, from the host root shared in read-only
BIN=$(cd "$BINDIR" 2>/dev/null && pwd -P)/tests/bench_migrate
if [ ! -x "$BIN" ]; then
	echo "bench_migrate_numa: $BINDIR/tests/bench_migrate is not built" \
		"(make bench-migrate builds it)" >&2
	exit 1
fi

D=$(mktemp -d)
cleanup() {
	rc=$?
	if [ $rc -eq 0 ] && [ $KEEP = no ]; then
		rm -rf "$D"
	else
		echo "logs kept in $D/guest (cmd.log: bench_migrate's output; console.log: the guest)"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

nmodes=$(echo "$MODES" | tr ',' '\n' | grep -c .)
timeout_s=$(awk -v b=$TIMEOUT_BASE_S -v s=$TIMEOUT_MIB_S -v m="$MIB" -v r="$ROUNDS" \
	-v l="$LEGS" -v n="$nmodes" 'BEGIN { printf "%d", b + s * m * r * (3 * l + 1) * n }')
echo "bench_migrate_numa: 2 emulated nodes, $MEM MiB; $ROUNDS round(s) of $MODES," \
	"$LEGS leg(s) of $MIB MiB per method"
t0=$(date +%s)
sh "$HARNESS" run --nodes 2 --mem "$MEM" --timeout "$timeout_s" --out "$D/guest" --quiet \
	--qemu-args -mem-prealloc -- \
	sh "$HERE/bench_migrate_numa.sh" --guest "$BIN" "$ROUNDS" "$LEGS" "$MIB" "$MODES"
rc=$?
echo "bench_migrate_numa: the guest ran $(($(date +%s) - t0)) s"
cat "$D/guest/cmd.log"
if [ $rc -ne 0 ]; then
	echo "bench_migrate_numa: the guest run failed with status $rc"
	exit 1
fi

# The RESULT lines, one table row per round and a median row per mode.
echo
echo "Summary: MiB/s that arrived on the target node, each round's best of $LEGS leg(s) per"
echo "method; ratio = migrator/migratepages, ratio_syscall = migrator/migrate_pages(2); the"
echo "median row takes each column's median over the rounds."
grep '^RESULT ' "$D/guest/cmd.log" | awk '
function val(k,   i) { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
function median(s,   a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
BEGIN { split("migrator migratepages migrate_pages ratio ratio_syscall", cols, " ")
	printf "%-6s %-7s %9s %13s %14s %7s %14s\n", "mode", "round", "migrator", "migratepages", "migrate_pages", "ratio", "ratio_syscall" }
{
	m = val("mode"); if (!(m in seen)) { seen[m] = 1; order[++nm] = m }
	printf "%-6s %-7s %9s %13s %14s %7s %14s\n", m, val("round"), val("migrator"), val("migratepages"), val("migrate_pages"), val("ratio"), val("ratio_syscall")
	for (c = 1; c <= 5; c++) list[m, c] = list[m, c] " " val(cols[c])
}
END {
	for (i = 1; i <= nm; i++) {
		m = order[i]
		printf "%-6s %-7s %9.1f %13.1f %14.1f %7.2f %14.2f\n", m, "median", median(list[m, 1]), median(list[m, 2]), median(list[m, 3]), median(list[m, 4]), median(list[m, 5])
	}
}'
