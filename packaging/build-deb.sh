#!/bin/sh
# build-deb.sh OUTDIR [VERSION] - the Debian packages vnumad, vnumad-libvirt and vnuma-load,
# built from a copy of this tree under OUTDIR (dpkg-buildpackage writes into the parent of the
# tree it builds, so the copy keeps everything inside OUTDIR), then checked with lintian.
# VERSION: default CMakeLists.txt's project version; debian/changelog is made here, in the
# copy, with it (the repo holds no changelog, so the two cannot disagree).  `make deb` runs
# this; tests/pkg/test_package_install.sh runs it with a lower version for its upgrade.
set -eu

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/packaging/pkg-lib.sh"

[ $# -ge 1 ] && [ $# -le 2 ] || pkg_die "usage: $0 OUTDIR [VERSION]"
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
VERSION=${2:-$(pkg_version)}
SRC=$OUT/deb-src/vnumad-$VERSION
ARCH=$(dpkg --print-architecture)

rm -rf "$OUT/deb-src"
pkg_export "$SRC"
maint=$(sed -n 's/^Maintainer: //p' "$SRC/debian/control")
rev=$(git -C "$TOP" describe --always --dirty 2>/dev/null || echo unknown)
cat >"$SRC/debian/changelog" <<END
vnumad ($VERSION) unstable; urgency=medium

  * Built by packaging/build-deb.sh from the source tree at $rev.

 -- $maint  $(git -C "$TOP" log -1 --format=%aD)
END

echo "build-deb: building vnumad $VERSION in $SRC"
(cd "$SRC" && dpkg-buildpackage -b -us -uc -j"${JOBS:-2}") >"$OUT/deb-build.log" 2>&1 || {
	tail -n 40 "$OUT/deb-build.log" >&2
	pkg_die "dpkg-buildpackage failed (whole log: $OUT/deb-build.log)"
}
changes=vnumad_${VERSION}_$ARCH.changes
for f in "$OUT/deb-src/"*_"$VERSION"_*; do
	mv -f "$f" "$OUT/"
done
rm -rf "$OUT/deb-src"

echo "build-deb: lintian"
lintian --fail-on error,warning --display-info "$OUT/$changes" ||
	pkg_die "lintian found errors or warnings (above)"
for f in "$OUT"/*_"$VERSION"_"$ARCH".deb; do
	echo "build-deb: $f ($(du -k "$f" | cut -f1) KiB)"
done
