#!/bin/sh
# test_package_install.sh OUTDIR - installs the Debian packages of OUTDIR (make deb) on THIS
# machine, into the real /usr, and takes them away again: root only, and only when asked
# (make check-package; never from make check or ctest).
#
#   1. builds the same tree again as VERSION~prev1 (OUTDIR/prev), installs that, and plays an
#      admin: edits /etc/vnumad/vnumad.conf, adds a policy file, and leaves a state.json;
#   2. upgrades to OUTDIR's packages: the edits, the policy file and state.json are kept;
#   3. checks the installed packages: `vnumad -n` on the installed config, `systemd-analyze
#      verify` on the installed unit, man pages through man(1), `vnumactl --version`, the
#      group vnumad, the unit enabled, the libvirt module loaded from its installed place
#      (libvirt's test driver), and the documented numad stand-in set up and undone;
#   4. purges them: nothing whose path names vnuma is left under /etc, /usr, /lib, /var
#      that was not there before, but for what policy keeps: the admin's own file in
#      /etc/vnumad/policy.d (with its directories) and the group vnumad, which the test
#      then deletes itself (the group only when it made it).
#
# It refuses to run where the packages, /etc/vnumad or /var/lib/vnumad are already there.
#
# vnumad is never started: a policy-rc.d forbids the maintainer scripts to (here, without
# systemd as PID 1, they would not try; on a real host the package would start it, and it
# would pin the host's VMs).  A failure anywhere purges the packages, undoes the numad
# diversion and puts back the machine's own policy-rc.d (trap).
set -eu

TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/packaging/pkg-lib.sh"

[ $# -eq 1 ] || pkg_die "usage: $0 OUTDIR (the .deb files of make deb)"
OUT=$(cd "$1" && pwd)
[ "$(id -u)" -eq 0 ] || pkg_die "must run as root: it installs the packages into /usr"
VERSION=$(pkg_version)
PREV=$VERSION~prev1
ARCH=$(dpkg --print-architecture)
PKGS="vnumad vnumad-libvirt vnuma-load"
POLICY_RC=/usr/sbin/policy-rc.d
D=$(mktemp -d)
DIVERTED=no
HAD_GROUP=no
getent group vnumad >/dev/null && HAD_GROUP=yes

fail() {
	echo "FAIL: $*" >&2
	exit 1
}
say() { echo "package-install: $*"; }

for p in $PKGS; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	case $st in '' | not-installed) ;;
	*) pkg_die "$p is already on this machine ($st); it would be purged: remove it first" ;;
	esac
done
for d in /etc/vnumad /var/lib/vnumad; do
	[ ! -e "$d" ] || pkg_die "$d exists (an installation from source?); the purge would take it: move it away first"
done
for p in $PKGS; do
	[ -f "$OUT/${p}_${VERSION}_$ARCH.deb" ] || pkg_die "no $OUT/${p}_${VERSION}_$ARCH.deb (make deb)"
done

cleanup() {
	rc=$?
	set +e
	if [ $DIVERTED = yes ]; then
		rm -f /usr/bin/numad
		dpkg-divert --local --rename --remove /usr/bin/numad >/dev/null
	fi
	if [ $rc -ne 0 ]; then
		# shellcheck disable=SC2086
		dpkg --purge $PKGS >/dev/null 2>&1
		rm -rf /etc/vnumad /var/lib/vnumad # checked absent at the start
		[ $HAD_GROUP = yes ] || groupdel vnumad 2>/dev/null
	fi
	rm -f "$POLICY_RC"
	[ -e "$D/policy-rc.d" ] && mv "$D/policy-rc.d" "$POLICY_RC"
	rm -rf "$D"
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# Services stay stopped while the test runs (invoke-rc.d and deb-systemd-invoke ask this).
[ -e "$POLICY_RC" ] && mv "$POLICY_RC" "$D/policy-rc.d"
printf '#!/bin/sh\n# written by vnumad tests/pkg/test_package_install.sh\nexit 101\n' >"$POLICY_RC"
chmod 755 "$POLICY_RC"

# Every path naming vnuma under the places a package writes, to compare with what the purge
# leaves; not dpkg's and apt's own records and logs, nor man-db's cache of formatted pages
# (made by man(1) below, not by the package).
vnuma_paths() {
	find /etc /usr /lib /var -xdev \( -path /var/lib/dpkg -o -path /var/cache/apt \
		-o -path /var/log -o -path /var/cache/man \) -prune -o -path '*vnuma*' -print 2>/dev/null |
		sort
}
vnuma_paths >"$D/before"

# apt resolves the packages' dependencies (here they are all present already).
apt_install() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@" \
		>"$D/apt.log" 2>&1 || {
		cat "$D/apt.log" >&2
		fail "apt-get install $*"
	}
}
debs() {
	for p in $PKGS; do echo "$1/${p}_$2_$ARCH.deb"; done
}

# ---- 1. The previous version, and an admin's changes.
say "building $PREV (the version to upgrade from)"
sh "$TOP/packaging/build-deb.sh" "$OUT/prev" "$PREV" >"$D/prev-build.log" 2>&1 || {
	cat "$D/prev-build.log" >&2
	fail "building $PREV"
}
say "installing $PREV"
# shellcheck disable=SC2046
apt_install $(debs "$OUT/prev" "$PREV")
getent group vnumad >/dev/null || fail "$PREV made no group vnumad"
CONF=/etc/vnumad/vnumad.conf
grep -q '^#migrate_rate = ' "$CONF" || fail "$CONF has no '#migrate_rate = ' line to edit"
sed -i 's/^#migrate_rate = .*/migrate_rate = 512MiB\/s/' "$CONF"
cat >/etc/vnumad/policy.d/pkgtest.xml <<'END'
<vnuma:policy xmlns:vnuma="http://vnumad.org/schemas/policy/1.0" mode="advisory"/>
END
mkdir -p /var/lib/vnumad
printf '{"note": "written by test_package_install.sh before the upgrade"}\n' >/var/lib/vnumad/state.json
cp "$CONF" /etc/vnumad/policy.d/pkgtest.xml /var/lib/vnumad/state.json "$D/"

# ---- 2. The upgrade.
say "upgrading to $VERSION"
# shellcheck disable=SC2046
apt_install $(debs "$OUT" "$VERSION")
for p in $PKGS; do
	v=$(dpkg-query -W -f='${Version}' "$p")
	[ "$v" = "$VERSION" ] || fail "$p is at $v after the upgrade, not $VERSION"
done
cmp -s "$D/vnumad.conf" "$CONF" || fail "the upgrade changed the admin's $CONF"
cmp -s "$D/pkgtest.xml" /etc/vnumad/policy.d/pkgtest.xml || fail "the upgrade lost policy.d/pkgtest.xml"
cmp -s "$D/state.json" /var/lib/vnumad/state.json || fail "the upgrade lost /var/lib/vnumad/state.json"
! ls /etc/vnumad/*.dpkg-* >/dev/null 2>&1 || fail "the upgrade left $(ls /etc/vnumad/*.dpkg-*)"

# ---- 3. What is installed works.
vnumad -n "$CONF" >"$D/n.out" 2>&1 || fail "vnumad -n $CONF: $(cat "$D/n.out")"
UNIT=$(dpkg -L vnumad | grep '/systemd/system/vnumad.service$')
# With the man pages installed, verify also checks that Documentation= names real ones.
systemd-analyze verify "$UNIT" >"$D/verify.log" 2>&1 || fail "systemd-analyze verify $UNIT: $(cat "$D/verify.log")"
for page in "8 vnumad" "1 vnumactl" "5 vnumad.conf" "1 vnuma-load"; do
	# shellcheck disable=SC2086
	MANPAGER=cat MANWIDTH=80 man $page >"$D/man.out" 2>&1 || fail "man $page: $(head -n 3 "$D/man.out")"
	grep -q "${page#* }" "$D/man.out" || fail "man $page shows no ${page#* }"
done
[ "$(vnumactl --version)" = "vnumactl $VERSION" ] || fail "vnumactl --version: $(vnumactl --version)"
[ "$(vnuma-load --version)" = "vnuma-load $VERSION" ] || fail "vnuma-load --version: $(vnuma-load --version)"
getent group vnumad >/dev/null || fail "no group vnumad"
grep -q '^Group=vnumad$' "$UNIT" || fail "the installed unit does not run with Group=vnumad"
[ -L /etc/systemd/system/multi-user.target.wants/vnumad.service ] || fail "vnumad.service is not enabled"
[ -d /etc/vnumad/policy.d ] || fail "no /etc/vnumad/policy.d"

# The libvirt module, found where the package put it, by the installed vnumad.
cat >"$D/conn.conf" <<END
state_file = $D/conn-state.json
policy_dir = $D/policy.d
END
vnumad -f "$D/conn.conf" --connect test:///default --socket "$D/sock" --foreground \
	>"$D/conn.log" 2>&1 &
pid=$!
i=0
until vnumactl -c "$D/sock" status >"$D/status.out" 2>&1; do
	i=$((i + 1))
	[ $i -lt 100 ] && kill -0 $pid 2>/dev/null || {
		kill $pid 2>/dev/null || true
		fail "installed vnumad --connect test:///default did not answer: $(cat "$D/conn.log")"
	}
	sleep 0.1
done
kill $pid
wait $pid || true
grep -q 'test:///default: connected' "$D/status.out" || fail "not connected: $(cat "$D/status.out")"

# The numad stand-in, as README.Debian and docs/placement-advice.md tell an admin to set it up.
dpkg-divert --local --rename --divert /usr/bin/numad.distrib --add /usr/bin/numad >/dev/null
DIVERTED=yes
ln -s /usr/libexec/vnumad/vnumad-numad-shim /usr/bin/numad
nodes=$(VNUMAD_SOCKET=$D/none.sock numad -w 2:512)
[ "$nodes" = "$(cat /sys/devices/system/node/online 2>/dev/null || echo 0)" ] ||
	fail "numad stand-in without vnumad printed '$nodes', not every online node"
rm /usr/bin/numad
dpkg-divert --local --rename --remove /usr/bin/numad >/dev/null
DIVERTED=no

# ---- 4. Purge.
say "purging"
# shellcheck disable=SC2086
dpkg --purge $PKGS >"$D/purge.log" 2>&1 || fail "dpkg --purge: $(cat "$D/purge.log")"
# What policy keeps: the admin's own policy file (dpkg keeps its directories for it); the test
# takes it away before comparing.
[ -f /etc/vnumad/policy.d/pkgtest.xml ] || fail "the purge removed the admin's policy.d/pkgtest.xml"
rm /etc/vnumad/policy.d/pkgtest.xml
rmdir /etc/vnumad/policy.d /etc/vnumad
vnuma_paths >"$D/after"
if ! cmp -s "$D/before" "$D/after"; then
	diff "$D/before" "$D/after" >&2 || true
	fail "the purge left (>) or took (<) the paths above"
fi
getent group vnumad >/dev/null || fail "the purge removed the group vnumad (Debian keeps system groups)"
[ $HAD_GROUP = yes ] || groupdel vnumad
say "ok: $PREV -> $VERSION kept the admin's files; purge left only the admin's policy file and the group vnumad"
