#!/bin/sh
# Install what the system tests (tests/system/, run on an emulated NUMA host) need on Debian 12:
# QEMU, a static busybox and cpio for the initramfs, numactl, xz and readelf (binutils) to
# unpack the kernel for a faster boot, numad (the peer tests/system/test_side_by_side.sh runs
# inside the emulated host; Debian's package does not start the daemon when installed), and a
# Debian kernel.
#
# The kernel is not installed as a package (linux-image-amd64 would run update-initramfs, about
# a minute): the current linux-image-<version>-amd64 .deb is downloaded with `apt-get download`
# into a cache directory and only the kernel image and the virtio/9p modules are unpacked from
# it, under $CACHE/kernel/{boot,lib/modules}.  tests/system/numa-host.sh looks there.
#
#   CACHE = $VNUMAD_SYSTEM_CACHE, default /var/cache/vnumad-system
#
# Idempotent: exits 0 without touching apt when everything is already there.  Installing needs
# root; run without root it only reports what is missing.
set -eu

PKGS="qemu-system-x86 busybox-static cpio numactl xz-utils binutils numad \
libvirt-daemon-system libvirt-daemon-driver-qemu qemu-utils"
CACHE=${VNUMAD_SYSTEM_CACHE:-/var/cache/vnumad-system}
KROOT=$CACHE/kernel
# Module directories (under lib/modules/<kver>/kernel/) the initramfs loads 9p over virtio from.
MODDIRS="drivers/virtio fs/netfs fs/fscache net/9p fs/9p"

say() { echo "install-system-deps: $*"; }
die() {
	echo "install-system-deps: $*" >&2
	exit 1
}

pkg_missing() {
	! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'
}

# A kernel is present when some boot/vmlinuz-<kver> in the cache has its 9p module next to it.
kernel_present() {
	for k in "$KROOT"/boot/vmlinuz-*; do
		[ -f "$k" ] || continue
		kver=${k##*/vmlinuz-}
		[ -n "$(find "$KROOT/lib/modules/$kver/kernel/fs/9p" -name '9p.ko*' 2>/dev/null)" ] &&
			return 0
	done
	return 1
}

# The kernel package linux-image-amd64 depends on now, e.g. linux-image-6.1.0-57-amd64.
kernel_package() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -n 1
}

# Download PKG into the cache and unpack the kernel image and the needed modules from it.
kernel_fetch() {
	pkg=$1
	tmp=$(mktemp -d "$CACHE/download.XXXXXX")
	# apt downloads as the unprivileged _apt user where it can write the target directory.
	chown _apt "$tmp" 2>/dev/null || true
	(cd "$tmp" && apt-get download -qq "$pkg") || {
		rm -rf "$tmp"
		die "apt-get download $pkg failed"
	}
	deb=$(ls "$tmp"/*.deb)
	kver=${pkg#linux-image-}
	set -- ./boot/vmlinuz-"$kver"
	for d in $MODDIRS; do
		set -- "$@" ./lib/modules/"$kver"/kernel/"$d"
	done
	mkdir -p "$KROOT"
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$KROOT" "$@" || {
		rm -rf "$tmp"
		die "unpacking $deb failed"
	}
	rm -rf "$tmp"
	say "unpacked $KROOT/boot/vmlinuz-$kver and its virtio/9p modules"
}

missing=""
for p in $PKGS; do
	pkg_missing "$p" && missing="$missing $p"
done
need_kernel=no
kernel_present || need_kernel=yes
if [ -z "$missing" ] && [ $need_kernel = no ]; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	[ -n "$missing" ] && echo "install-system-deps: missing packages:$missing" >&2
	[ $need_kernel = yes ] && echo "install-system-deps: missing a kernel in $KROOT" >&2
	die "run as root to install them"
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ -n "$missing" ]; then
	say "installing$missing"
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
if [ $need_kernel = yes ]; then
	pkg=$(kernel_package)
	[ -n "$pkg" ] || die "apt-cache finds no linux-image-*-amd64 behind linux-image-amd64"
	mkdir -p "$CACHE"
	say "downloading $pkg into $CACHE"
	kernel_fetch "$pkg"
fi
say "done"
