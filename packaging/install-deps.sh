#!/bin/sh
# Install the Debian 12 packages that building and testing vnumad need, and only those.
# Idempotent: packages already present are not reinstalled, and apt is not touched at all
# when nothing is missing.  Run as root (make demo / make check call it for you).
# --fuzz: also clang and its libFuzzer runtime, for `make fuzz` only (docs/fuzzing.md).
# --pkg: also what `make deb`, `make rpm` and `make check-package` need (docs/packaging.md).
set -eu

# Build: compiler and tools, the libraries vnumad and vnumactl link against (vnumactl: ncurses
# for top's screen, libedit for the shell), cmocka for unit tests.
PKGS="gcc make cmake pkg-config clang-format jq \
libhwloc-dev libjson-c-dev libxml2-dev libvirt-dev libcmocka-dev libncurses-dev libedit-dev \
libmicrohttpd-dev"
# Tests: systemd-analyze checks the unit's system call filter (tests/sim/test_unit_file.sh);
# tmux gives vnumactl top and the interactive shell a terminal of a chosen size
# (tests/sim/test_top_tty.sh, tests/sim/test_shell_pty.sh).
PKGS="$PKGS systemd tmux"
# The metrics tests (tests/sim/test_metrics.sh, test_prometheus.sh): curl scrapes /metrics,
# promtool (in prometheus) checks the text, and a real Prometheus scrapes vnumad.  Installing
# prometheus enables its service; on a machine where services start, it then runs on :9090.
PKGS="$PKGS curl prometheus"
# make fuzz: clang builds the targets; libclang-rt-14-dev holds libFuzzer and the sanitizer
# runtimes (Debian 12's clang is 14).
# --pkg: debhelper and dpkg-dev build the .deb files, fakeroot lets dpkg-buildpackage run as
# an ordinary user, lintian checks them, rpm is Debian's rpmbuild (enough to build and inspect
# the RPMs), man-db lets the install test read the installed man pages with man(1).
case ${1:-} in
--fuzz) PKGS="$PKGS clang libclang-rt-14-dev" ;;
--pkg) PKGS="$PKGS debhelper dpkg-dev fakeroot lintian rpm man-db" ;;
'') ;;
*)
	echo "usage: $0 [--fuzz|--pkg]" >&2
	exit 1
	;;
esac

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages:$missing (run as root to install them)" >&2
	exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
# prometheus is here for its promtool and for one test's private server: the service its
# package enables (a Prometheus on :9090 scraping nothing) is stopped and disabled again.
case " $missing " in
*" prometheus "*)
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		systemctl disable --now prometheus.service >/dev/null 2>&1 || true
	fi
	;;
esac
