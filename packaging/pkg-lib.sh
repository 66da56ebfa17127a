# pkg-lib.sh - what packaging/build-deb.sh, packaging/build-rpm.sh and tests/pkg/ share.
# Sourced, not run; needs $TOP (the top of the source tree).

pkg_die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

# The version in CMakeLists.txt's project(), the one source of the packages' versions.
pkg_version() {
	v=$(sed -n 's/^project(vnumad VERSION \([0-9][0-9.]*\).*/\1/p' "$TOP/CMakeLists.txt")
	[ -n "$v" ] || pkg_die "no project(vnumad VERSION ...) in $TOP/CMakeLists.txt"
	echo "$v"
}

# pkg_export DEST: the tree as git sees it (tracked files as they are in the working tree, and
# untracked ones git does not ignore; no build directories) copied into DEST, a new directory.
pkg_export() {
	git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1 ||
		pkg_die "$TOP is no git checkout (the package is built from the files git knows)"
	mkdir -p "$1"
	git -C "$TOP" ls-files -z --cached --others --exclude-standard |
		tar -C "$TOP" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$1" -xf -
}
