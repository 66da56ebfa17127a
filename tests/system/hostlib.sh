# hostlib.sh - the host side shared by the system tests that boot numa-host.sh (sourced, with
# SYS set to tests/system): the harness, and a scratch directory for the run.
#
# sys_host_init WHERE [WHAT]: sets HARNESS and D (a new temporary directory) and, at exit,
# removes D when the test passed or skipped (status 0 or 77) unless VNUMAD_SYSTEM_KEEP=1; else
# it prints "logs kept in $D$WHERE" and the lines of WHAT, so a failure names its evidence.

sys_host_init() {
	: "${VNUMAD_BINDIR:?}"
	HARNESS=$SYS/numa-host.sh
	D=$(mktemp -d) || exit 1
	SYS_KEPT_WHERE=$1
	SYS_KEPT_WHAT=${2:-}
	trap sys_host_cleanup EXIT
	trap 'exit 1' INT TERM
}

sys_host_cleanup() {
	rc=$?
	if { [ $rc -eq 0 ] || [ $rc -eq 77 ]; } && [ "${VNUMAD_SYSTEM_KEEP:-0}" != 1 ]; then
		rm -rf "$D"
	else
		echo "logs kept in $D$SYS_KEPT_WHERE"
		[ -z "$SYS_KEPT_WHAT" ] || printf '%s\n' "$SYS_KEPT_WHAT"
	fi
	exit $rc
}
