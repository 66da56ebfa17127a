#!/bin/sh
# test_file_lists.sh OUTDIR - the RPMs (make rpm) hold the same files as the Debian packages
# (make deb), package by package, but for these differences, each a convention of its
# family, mapped away before comparing:
#   - the libvirt module: /usr/lib/<multiarch triplet>/vnumad (Debian) and /usr/lib64/vnumad
#     (RPM, %{_libdir});
#   - the unit: /lib/systemd/system (Debian 12's debhelper) and /usr/lib/systemd/system;
#   - man pages: gzipped by dh_compress; Debian's rpmbuild leaves them as they are;
#   - /usr/share/doc/<package>/: changelog.gz, copyright and README.Debian are Debian's, and
#     so is /usr/share/lintian/overrides/vnumad.
# Directories are not compared (dpkg lists every parent; RPM only those it owns).
set -eu

TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/packaging/pkg-lib.sh"

[ $# -eq 1 ] || pkg_die "usage: $0 OUTDIR (the packages of make deb and make rpm)"
OUT=$1
VERSION=$(pkg_version)
ARCH=$(dpkg --print-architecture)
TRIPLET=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

normalize() {
	sed -e "s#^/usr/lib/$TRIPLET/#LIBDIR/#" -e 's#^/usr/lib64/#LIBDIR/#' \
		-e 's#^/lib/systemd/system/#UNITDIR/#' -e 's#^/usr/lib/systemd/system/#UNITDIR/#' \
		-e 's#^\(/usr/share/man/.*\)\.gz$#\1#' -e '\#^/usr/share/doc/#d' \
		-e '\#^/usr/share/lintian/overrides/#d' | sort
}

bad=0
for p in vnumad vnumad-libvirt vnuma-load; do
	deb=$OUT/${p}_${VERSION}_$ARCH.deb
	# (vnumad-0.1.0-*.rpm cannot match vnumad-libvirt-0.1.0-1.x86_64.rpm.)
	rpm=$(ls "$OUT/$p-$VERSION"-*.rpm 2>/dev/null | head -n 1)
	[ -f "$deb" ] || pkg_die "no $deb (make deb)"
	[ -n "$rpm" ] || pkg_die "no $OUT/$p-$VERSION-*.rpm (make rpm)"
	# Files and symbolic links: tar's listing of the data, without ./ and directories.
	dpkg-deb --fsys-tarfile "$deb" | tar -tvf - | awk '$1 !~ /^d/ {print $6}' |
		sed 's#^\./#/#' | normalize >"$D/$p.deb"
	rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$rpm" | awk '$1 !~ /^d/ {print $2}' |
		normalize >"$D/$p.rpm"
	if cmp -s "$D/$p.deb" "$D/$p.rpm"; then
		echo "ok: $p: $(wc -l <"$D/$p.deb") files alike"
	else
		echo "FAIL: $p: files only in the .deb (<) or only in the .rpm (>):" >&2
		diff "$D/$p.deb" "$D/$p.rpm" >&2 || true
		bad=1
	fi
done
exit $bad
