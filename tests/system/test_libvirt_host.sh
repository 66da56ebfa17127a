#!/bin/sh
# System test: vnumad --connect qemu:///system against a real libvirtd on this machine, tried
# as a new user would.  Two small QEMU TCG domains (no KVM needed), with unique names so that
# nothing else on the host is touched:
#   A  vnumad-test-PID-a  a policy in its <metadata>: mode='advisory' priority='70'
#   B  vnumad-test-PID-b  a broken policy: mode='sideways'
# Each boots the Debian kernel of install-system-deps.sh (found as numa-host.sh finds it) with
# an initramfs whose /init sleeps, or, without a kernel or a static busybox, a multiboot stub
# that halts.  Then vnumad runs in the foreground on a private socket and state file, with a
# config whose policy_dir is an empty directory, and the test checks:
#   - vnumactl list (and --json) shows both domains with their mode, policy state and
#     placement; B's line names its error and B runs on the default policy; policy --json
#     gives each policy's source (host: the domain metadata) and A's priority 70;
#   - `vnumactl policy A --mode manual` lands in A's live metadata (virsh metadata) and only
#     there (the persistent copy keeps mode="advisory"), and policy --json shows it;
#   - `vnumactl policy B --mode advisory --config` lands in B's persistent XML (virsh
#     dumpxml --inactive) and not in the running B; `vnumactl policy A --priority 20 --config`
#     changes the priority of A's persistent policy and keeps its mode (advisory), whatever the
#     live one says;
#   - an administrator's own `virsh metadata --set` (live) is followed without a restart, on
#     B and on A after vnumactl changed A's policy;
#   - `virsh destroy A`: A leaves vnumactl list, B stays, vnumad keeps running (status answers,
#     rounds advance), no error event;
#   - SIGTERM stops vnumad with status 0, and its stderr holds only its own lines, no
#     libvirt error or warning.
# A libvirtd that already answers at qemu:///system is used; otherwise virtlogd and libvirtd
# are started for the test (as without systemd) and stopped at the end.  Everything the test
# made (domains, boot files, daemons) goes away on exit, on failure too; logs are kept then.
# Skips (77) only when libvirtd, the QEMU driver or QEMU is not installed, or when not root
# (the system libvirtd needs it).  Prints the time each phase took.
set -u

SYS=${VNUMAD_SRCDIR:?}/tests/system
B=${VNUMAD_BINDIR:?}
VNUMAD=$B/agent/vnumad
CTL=$B/agent/vnumactl
. "$SYS/libvirt-lib.sh"

# Domain sizes: small, since each domain is a TCG QEMU on a 2-core machine.
DOM_MEM_MIB=96
DOM_VCPUS=2
# Seconds to wait for vnumad to see a change (an event, a round): it samples every second.
SEE_S=30

D=$(mktemp -d) || exit 1
BOOT=/var/lib/libvirt/boot/vnumad-test-$$
A=vnumad-test-$$-a
BB=vnumad-test-$$-b
SOCK=$D/vnumad.sock
VPID=''
LATE_FAIL='' # failed checks that let the others run first

cleanup() {
	rc=$?
	trap - EXIT INT TERM
	[ -n "$VPID" ] && kill -9 "$VPID" 2>/dev/null
	for dom in $A $BB; do
		lvt_virsh domstate "$dom" >/dev/null 2>&1 || continue
		lvt_virsh destroy "$dom" >/dev/null 2>&1
		lvt_virsh undefine "$dom" >/dev/null 2>&1
	done
	if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
		cp "$BOOT"/*.console /var/log/libvirt/qemu/"$A".log /var/log/libvirt/qemu/"$BB".log \
			"$D/" 2>/dev/null
		for f in vnumad.err vnumad.out; do
			[ -s "$D/$f" ] && echo "--- $f ---" && tail -n 40 "$D/$f"
		done
		echo "logs kept in $D (vnumad.err: vnumad's log; *.console: the guests' consoles;" \
			"vnumad-test-*.log: libvirt's QEMU logs)"
	else
		rm -rf "$D"
	fi
	rm -rf "$BOOT"
	rm -f /var/log/libvirt/qemu/"$A".log /var/log/libvirt/qemu/"$BB".log
	lvt_libvirtd_stop
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ctl() { "$CTL" -c "$SOCK" "$@"; }
jctl() { "$CTL" -c "$SOCK" --json "$@"; }

# ---- what this machine has ------------------------------------------------------------------

missing=$(lvt_missing)
if [ -n "$missing" ]; then
	echo "SKIP: not installed: $missing (packaging/install-system-deps.sh installs them)"
	exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root (the system libvirtd at $LVT_URI)"
	exit 77
fi
for f in "$VNUMAD" "$CTL"; do
	[ -x "$f" ] || lvt_fail "$f is not built"
done
lvt_t0_set
T_START=$LVT_T0

lvt_libvirtd_start || lvt_fail "cannot start libvirtd (see /var/log/libvirt/)"
T_READY=$(lvt_uptime)

# ---- the domains ----------------------------------------------------------------------------

mkdir -p "$BOOT" || lvt_fail "cannot create $BOOT"
chmod 755 "$BOOT"
NH_KERNEL=''
if (NUMA_HOST_LIB=1 . "$SYS/numa-host.sh" && nh_kernel_find >/dev/null 2>&1 &&
	echo "$NH_KERNEL" >"$D/kernel")
then
	NH_KERNEL=$(cat "$D/kernel")
fi
BUSYBOX=${VNUMAD_BUSYBOX:-/bin/busybox}
if [ -n "$NH_KERNEL" ] && [ -x "$BUSYBOX" ] && ! ldd "$BUSYBOX" >/dev/null 2>&1; then
	cp "$NH_KERNEL" "$BOOT/vmlinuz" || lvt_fail "cannot copy $NH_KERNEL"
	lvt_initramfs "$BOOT/initrd.gz" "$BUSYBOX" || lvt_fail "cannot build the initramfs"
	KERNEL_XML="$BOOT/vmlinuz"
	INITRD_XML="    <initrd>$BOOT/initrd.gz</initrd>"
	GUEST="Linux ${NH_KERNEL##*/vmlinuz-} with a sleeping /init"
else
	lvt_halt_kernel "$BOOT/halt.bin" || lvt_fail "cannot write $BOOT/halt.bin"
	KERNEL_XML="$BOOT/halt.bin"
	INITRD_XML=''
	GUEST="a halting multiboot stub (no Debian kernel or static busybox found)"
fi
chmod 644 "$BOOT"/*

# define_start NAME POLICY-ATTRIBUTES: define and start a domain.
define_start() {
	lvt_domain_xml NAME="$1" MEM_MIB=$DOM_MEM_MIB VCPUS=$DOM_VCPUS \
		METADATA="$(lvt_policy "$2")" TUNING='' KERNEL="$KERNEL_XML" INITRD="$INITRD_XML" \
		CMDLINE='console=ttyS0 quiet panic=-1' \
		CONSOLE="    <serial type='file'><source path='$BOOT/$1.console'/></serial>" \
		EMULATOR="$(command -v "${VNUMAD_QEMU:-qemu-system-x86_64}")" >"$D/$1.xml" ||
		lvt_fail "cannot write $1's XML"
	out=$(lvt_virsh define "$D/$1.xml" 2>&1) || lvt_fail "virsh define $1: $out"
	out=$(lvt_virsh start "$1" 2>&1) || lvt_fail "virsh start $1: $out"
}

define_start "$A" "mode='advisory' priority='70'"
define_start "$BB" "mode='sideways'"
lvt_ok "started $A and $BB: $DOM_VCPUS vCPUs, $DOM_MEM_MIB MiB, booting $GUEST"
T_DOMS=$(lvt_uptime)

# ---- vnumad ---------------------------------------------------------------------------------

mkdir "$D/policy.d"
# default_mode advisory: on a libvirtd shared with real VMs, vnumad must not move them.
cat >"$D/vnumad.conf" <<EOF
# written by test_libvirt_host.sh
sample_period = 1s
rebalance_period = 2s
policy_dir = $D/policy.d
default_mode = advisory
EOF
"$VNUMAD" --connect "$LVT_URI" --foreground --socket "$SOCK" --state "$D/state.json" \
	-f "$D/vnumad.conf" >"$D/vnumad.out" 2>"$D/vnumad.err" &
VPID=$!
vnumad_answers() {
	kill -0 "$VPID" 2>/dev/null || lvt_fail "vnumad exited: $(cat "$D/vnumad.err")"
	ctl status >/dev/null 2>&1
}
lvt_wait_for 60 "vnumad answering on its socket" vnumad_answers
lvt_ok "vnumad --connect $LVT_URI answers after $LVT_WAITED s"
s=$(jctl status)
lvt_check "$s" '.backend == "libvirt"' "status: backend"
lvt_check "$s" '.host | test("^libvirt qemu:///system: connected")' "status: the libvirt connection"

both_listed() {
	jctl list | jq -e --arg a "$A" --arg b "$BB" \
		'[.vms[].name] | index($a) != null and index($b) != null'
}
lvt_wait_for $SEE_S "vnumactl list showing $A and $BB" both_listed
lvt_ok "vnumactl list shows both domains after $LVT_WAITED s"
T_LISTED=$(lvt_uptime)

l=$(jctl list)
vm_a=$(printf '%s' "$l" | jq --arg n "$A" '.vms[] | select(.name == $n)')
vm_b=$(printf '%s' "$l" | jq --arg n "$BB" '.vms[] | select(.name == $n)')
lvt_check "$vm_a" ".mode == \"advisory\" and .policy_ok == true and .policy_error == null and
	.state == \"advisory\" and .vcpus == $DOM_VCPUS and .memory_mib == $DOM_MEM_MIB" \
	"list: $A with its metadata policy"
lvt_check "$vm_a" '.home == "0" and .vcpu_nodes == "0" and .id == '"$(lvt_qemu_pid "$A")" \
	"list: $A's placement (one node here) and QEMU pid"
lvt_check "$vm_b" '.policy_ok == false and (.policy_error | test("sideways"))' \
	"list: $BB's broken policy and its error"
lvt_check "$vm_b" '.mode == "advisory" and .home == "0" and .vcpus == '$DOM_VCPUS \
	"list: $BB on the default policy (default_mode advisory)"
ctl list >"$D/list.txt" 2>&1 || lvt_fail "vnumactl list: $(cat "$D/list.txt")"
grep -q "^ *[0-9]* *$A  *advisory  *advisory " "$D/list.txt" ||
	lvt_fail "vnumactl list has no advisory line for $A: $(cat "$D/list.txt")"
grep -q "^$BB: bad policy, the default is used: .*sideways" "$D/list.txt" ||
	lvt_fail "vnumactl list does not name $BB's bad policy: $(cat "$D/list.txt")"
lvt_ok "vnumactl list:"
sed 's/^/    /' "$D/list.txt"

p=$(jctl policy "$A")
lvt_check "$p" '.source == "host" and .policy_ok and .policy.mode == "advisory" and
	.policy.priority == 70' "policy $A --json: from the metadata"
p=$(jctl policy "$BB")
lvt_check "$p" '.source == "host" and .policy_ok == false and (.policy_error | test("sideways"))
	and .policy.mode == "advisory"' "policy $BB --json: the error, and the default in force"
v=$(jctl vminfo "$A")
lvt_check "$v" ".policy.priority == 70 and (.vcpu | length) == $DOM_VCPUS and
	all(.vcpu[]; .tid > 0 and .node == 0)" "vminfo $A: policy and vCPU threads"
lvt_ok "policy and vminfo show where each policy comes from"

# ---- policy changes through vnumactl --------------------------------------------------------

# meta DOMAIN [--config]: vnumad's metadata element of a domain, as virsh shows it.
meta() {
	lvt_virsh metadata "$1" "$LVT_NS" "${2:---live}" 2>&1
}
out=$(ctl policy "$A" --mode manual 2>&1) || lvt_fail "vnumactl policy $A --mode manual: $out"
m=$(meta "$A")
case $m in
*'mode="manual"'*'priority="70"'*) ;;
*) lvt_fail "$A's live metadata after vnumactl policy --mode manual: $m" ;;
esac
m=$(meta "$A" --config)
case $m in
*'mode="advisory"'*) ;;
*) lvt_fail "$A's persistent metadata changed by a live policy change: $m" ;;
esac
lvt_check "$(jctl policy "$A")" '.policy.mode == "manual" and .policy.priority == 70' \
	"policy $A --json after --mode manual"
a_manual() {
	jctl list | jq -e --arg n "$A" '.vms[] | select(.name == $n) |
		.mode == "manual" and .state == "manual"'
}
lvt_wait_for $SEE_S "list showing $A manual" a_manual
lvt_ok "vnumactl policy $A --mode manual: in the live metadata ($(echo "$m" | head -n 1) stays \
persistent), in policy and list"

out=$(ctl policy "$BB" --mode advisory --config 2>&1) ||
	lvt_fail "vnumactl policy $BB --mode advisory --config: $out"
x=$(lvt_virsh dumpxml --inactive "$BB") || lvt_fail "virsh dumpxml --inactive $BB"
echo "$x" | grep -q "<vnuma:policy xmlns:vnuma=\"$LVT_NS\" mode=\"advisory\"/>" ||
	lvt_fail "$BB's persistent XML lacks the policy: $(echo "$x" | grep -A2 '<metadata')"
m=$(meta "$BB")
case $m in
*'mode="sideways"'*) ;;
*) lvt_fail "--config changed $BB's live metadata: $m" ;;
esac
lvt_check "$(jctl policy "$BB")" '.policy_ok == false' "policy $BB: --config is for the next start"
lvt_ok "vnumactl policy $BB --mode advisory --config: in dumpxml --inactive only"

# --config edits the persistent definition, as virsh's --config does: its other attributes
# stay as they are there (mode="advisory"), whatever the live policy says (mode="manual").
out=$(ctl policy "$A" --priority 20 --config 2>&1) ||
	lvt_fail "vnumactl policy $A --priority 20 --config: $out"
m=$(meta "$A" --config)
case $m in
*'mode="advisory"'*'priority="20"'*)
	lvt_ok "vnumactl policy $A --priority 20 --config: persistent $m"
	;;
*)
	LATE_FAIL="$LATE_FAIL
[$(lvt_since)] FAIL: vnumactl policy $A --priority 20 --config over a persistent mode=\"advisory\" \
priority=\"70\" and a live mode=\"manual\" wrote $m (the live mode went into the persistent \
definition)"
	echo "$A's persistent metadata after --priority 20 --config: $m (noted: the other checks go on)"
	;;
esac

# ---- an administrator's own metadata changes, without a restart ----------------------------

out=$(lvt_virsh metadata "$BB" "$LVT_NS" --key vnuma --set '<policy mode="manual"/>' --live 2>&1) ||
	lvt_fail "virsh metadata $BB --set: $out"
b_fixed() {
	jctl policy "$BB" | jq -e '.source == "host" and .policy_ok and .policy.mode == "manual"'
}
lvt_wait_for $SEE_S "vnumad following virsh metadata --set on $BB" b_fixed
lvt_ok "virsh metadata $BB --set <policy mode=\"manual\"/>: followed after $LVT_WAITED s"

out=$(lvt_virsh metadata "$A" "$LVT_NS" --key vnuma \
	--set '<policy mode="advisory" priority="40"/>' --live 2>&1) ||
	lvt_fail "virsh metadata $A --set: $out"
a_readvised() {
	jctl policy "$A" | jq -e '.policy.mode == "advisory" and .policy.priority == 40'
}
# vnumactl's own live change must not outrank the administrator's later one: both are the
# live metadata.  Checked to the end before failing, so that the rest still runs.
if out=$(lvt_wait_for $SEE_S "vnumad following virsh metadata --set on $A after \
vnumactl policy $A --mode manual" a_readvised); then
	lvt_ok "virsh metadata $A --set after vnumactl's change: followed"
else
	LATE_FAIL="$LATE_FAIL
$out
    (vnumactl policy $A --json: $(jctl policy "$A" | jq -c '{source, policy}'))"
	echo "$out (noted: the other checks go on)"
fi

# ---- a domain goes away ---------------------------------------------------------------------

r1=$(jctl status | jq .rounds)
out=$(lvt_virsh destroy "$A" 2>&1) || lvt_fail "virsh destroy $A: $out"
a_gone() {
	jctl list | jq -e --arg a "$A" --arg b "$BB" \
		'[.vms[].name] | index($a) == null and index($b) != null'
}
lvt_wait_for $SEE_S "$A leaving vnumactl list" a_gone
lvt_ok "virsh destroy $A: gone from vnumactl list after $LVT_WAITED s, $BB still there"
sleep 3
s=$(jctl status) || lvt_fail "vnumad stopped answering after $A was destroyed"
kill -0 "$VPID" 2>/dev/null || lvt_fail "vnumad exited after $A was destroyed"
r2=$(printf '%s' "$s" | jq .rounds)
[ "$r2" -gt "$r1" ] || lvt_fail "rounds do not advance after the destroy ($r1 -> $r2)"
lvt_check "$s" '.nr_vms >= 1 and (.host | test("connected"))' "status after the destroy"
e=$(jctl events --limit 200)
lvt_check "$e" '.events | length > 0' "events"
printf '%s' "$e" | jq -e --arg a "$A" '[.events[] | select(.vm == $a and .kind == "leave")] |
	length == 1' >/dev/null || lvt_fail "no leave event for $A: $(printf '%s' "$e" | jq -c .)"
printf '%s' "$e" | jq -e '[.events[] | select(.kind == "error")] | length == 0' >/dev/null ||
	lvt_fail "error events: $(printf '%s' "$e" | jq -c '[.events[] | select(.kind == "error")]')"
lvt_ok "vnumad keeps running: rounds $r1 -> $r2, a leave event for $A, no error event"

# ---- an orderly stop, a clean log -----------------------------------------------------------

lvt_vnumad_stop
noise=$(grep -v '^vnumad: ' "$D/vnumad.err"; grep -Ei '^vnumad: (warning|error)|libvirt' \
	"$D/vnumad.err" | grep -v '^vnumad: vnumad [0-9.]* running on the libvirt host')
[ -z "$noise" ] || lvt_fail "vnumad's stderr has more than its own lines: $noise"
lvt_ok "SIGTERM: vnumad exited 0; its stderr: $(tr '\n' '|' <"$D/vnumad.err")"

# span FROM TO: seconds between two uptimes.
span() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
echo "time: libvirtd ready $(span "$T_START" "$T_READY") s, domains defined and started \
$(span "$T_READY" "$T_DOMS") s, listed by vnumad $(span "$T_DOMS" "$T_LISTED") s, whole test \
$(lvt_since "$T_START") s"
[ -z "$LATE_FAIL" ] || lvt_fail "earlier:$LATE_FAIL"
echo "libvirt host test passed"
