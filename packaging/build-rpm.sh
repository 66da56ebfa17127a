#!/bin/sh
# build-rpm.sh OUTDIR - the RPMs vnumad, vnumad-libvirt and vnuma-load from
# packaging/rpm/vnumad.spec, with Debian's rpmbuild, in OUTDIR/rpm (rpmbuild's _topdir) from a
# tarball of a copy of this tree; the .rpm files end up in OUTDIR.  The version is
# CMakeLists.txt's.  They are meant to be inspected here (tests/pkg/test_file_lists.sh), not
# installed: Debian's rpm database knows none of the build dependencies, hence --nodeps.
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/packaging/pkg-lib.sh"

[ $# -eq 1 ] || pkg_die "usage: $0 OUTDIR"
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
VERSION=$(pkg_version)
R=$OUT/rpm

rm -rf "$R"
mkdir -p "$R/SOURCES" "$R/export"
pkg_export "$R/export/vnumad-$VERSION"
tar -C "$R/export" -czf "$R/SOURCES/vnumad-$VERSION.tar.gz" "vnumad-$VERSION"
rm -rf "$R/export"

echo "build-rpm: building vnumad $VERSION in $R"
rpmbuild -bb --nodeps --define "_topdir $R" --define "vnumad_version $VERSION" \
	--define "_smp_mflags -j${JOBS:-2}" "$TOP/packaging/rpm/vnumad.spec" >"$OUT/rpm-build.log" 2>&1 || {
	tail -n 40 "$OUT/rpm-build.log" >&2
	pkg_die "rpmbuild failed (whole log: $OUT/rpm-build.log)"
}
rm -f "$OUT"/*.rpm
mv "$R"/RPMS/*/*.rpm "$OUT/"
rm -rf "$R"
for f in "$OUT"/*.rpm; do
	echo "build-rpm: $f ($(du -k "$f" | cut -f1) KiB)"
done
