#!/bin/sh
# packaging/vnumad.service lets vnumad make the system calls its work needs: its system call
# filter, with systemd's groups expanded as systemd-analyze(1) lists them, allows every call in
# NEEDED and none in DENIED (what the unit's comments promise), and `systemd-analyze verify`
# finds nothing wrong with the unit (its man pages aside: they need not be installed).  A call
# missing from the filter is no start-up failure: it fails with EPERM (SystemCallErrorNumber)
# deep in some feature, which is why it is checked here.
set -eu

S=${VNUMAD_SRCDIR:?}
B=${VNUMAD_BINDIR:?}
UNIT=$S/packaging/vnumad.service
# The calls beyond plain file, socket and process work that vnumad makes on a real host:
# pins (host/linux/affinity.c), page moves and samples (actuate.c), making pages the kernel's
# NUMA scanner protected accessible again (unprotect.c), and its control socket's poll loop.
NEEDED="sched_setaffinity sched_getaffinity move_pages process_vm_readv set_mempolicy poll ppoll gettid
openat read pread64 getdents64 readlinkat socket bind listen accept4 sendmsg recvmsg
clock_gettime nanosleep kill sendto recvfrom setsockopt"
# What the unit's comments say vnumad can never do.
DENIED="process_vm_writev ptrace chown fchown fchownat setuid"

command -v systemd-analyze >/dev/null || {
	echo "FAIL: systemd-analyze is missing (packaging/install-deps.sh installs systemd)" >&2
	exit 1
}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

# expand GROUP-OR-CALL: the system calls it stands for, one per line (groups recursively).
expand() {
	case $1 in
	@*)
		grep -qx -- "$1" "$D/seen" 2>/dev/null && return 0
		echo "$1" >>"$D/seen"
		systemd-analyze syscall-filter "$1" | sed -n '2,$p' | sed 's/^[[:space:]]*//' |
			grep -v '^#' | grep -v '^$' | while read -r item; do expand "$item"; done
		;;
	*) echo "$1" ;;
	esac
}
# A group seen while expanding one item is not expanded again for it; each item of a line
# starts afresh, so a group inside both an allowed and a denied group counts on both sides.
expand_top() {
	: >"$D/seen"
	expand "$1"
}

: >"$D/allow"
: >"$D/deny"
grep '^SystemCallFilter=' "$UNIT" | sed 's/^SystemCallFilter=//' >"$D/lines"
[ -s "$D/lines" ] || { echo "FAIL: no SystemCallFilter= in the unit" >&2; exit 1; }
while read -r line; do
	case $line in
	~*) for item in ${line#\~}; do expand_top "$item" >>"$D/deny"; done ;;
	*) for item in $line; do expand_top "$item" >>"$D/allow"; done ;;
	esac
done <"$D/lines"
sort -u "$D/allow" >"$D/allow.s"
sort -u "$D/deny" >"$D/deny.s"
comm -23 "$D/allow.s" "$D/deny.s" >"$D/allowed"
[ "$(wc -l <"$D/allowed")" -gt 100 ] || { echo "FAIL: group expansion found too few calls" >&2; exit 1; }

bad=""
for c in $NEEDED; do grep -qx "$c" "$D/allowed" || bad="$bad $c"; done
[ -z "$bad" ] || { echo "FAIL: the unit's SystemCallFilter denies calls vnumad makes:$bad" >&2; exit 1; }
for c in $DENIED; do grep -qx "$c" "$D/allowed" && bad="$bad $c"; done
[ -z "$bad" ] || { echo "FAIL: the unit's SystemCallFilter allows:$bad" >&2; exit 1; }

# The unit as a whole, pointed at the vnumad just built.
sed "s#^ExecStart=/usr/sbin/vnumad#ExecStart=$B/agent/vnumad#" "$UNIT" >"$D/vnumad.service"
if ! systemd-analyze verify --man=no "$D/vnumad.service" >"$D/verify.log" 2>&1; then
	echo "FAIL: systemd-analyze verify:" >&2
	cat "$D/verify.log" >&2
	exit 1
fi
echo "ok: $(wc -l <"$D/allowed") system calls allowed, every needed one among them"
