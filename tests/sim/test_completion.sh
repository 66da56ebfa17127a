#!/bin/sh
# The bash completion (packaging/vnumactl.bash-completion) sourced into bash and asked as bash
# asks it, with COMP_WORDS and COMP_CWORD set: commands after the global options in each
# spelling (-c PATH, -cPATH, --connect[=]PATH, --socket[=]PATH, --json), a command's options,
# files after a socket option, and VM names asked on the socket given (a stand-in vnumactl).
set -eu

COMP=${VNUMAD_SRCDIR:?}/packaging/vnumactl.bash-completion
command -v bash >/dev/null 2>&1 || { echo "skip: no bash"; exit 77; }
D=$(mktemp -d)
T_PID_VARS=
. "$(dirname "$0")/lib.sh"

# A stand-in vnumactl for VM names: answers `-c SOCK --json list` (pretty-printed, as the
# real one) only for the socket $D/s.
cat >"$D/ctl" <<EOF
#!/bin/sh
[ "\$1 \$2 \$3 \$4" = "-c $D/s --json list" ] || exit 1
printf '{\n  "vms": [\n    {\n      "name": "db-orders"\n    },\n    {\n      "name": "web1"\n    }\n  ]\n}\n'
EOF
chmod +x "$D/ctl"
: >"$D/sock-a"

# complete WORD...: the completions of the last word, one line, sorted.
complete_words() {
	bash -c '
		. "$1"
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$(($# - 1))
		_vnumactl
		printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' sh "$COMP" "$@"
}

# expect WANT WORD...: the completions of WORD... are exactly WANT (sorted, space-ended).
expect() {
	want=$1
	shift
	got=$(complete_words "$@")
	[ "$got" = "$want" ] || fail "completing '$*': got '$got', want '$want'"
}

expect "list " "$D/ctl" li
expect "list " "$D/ctl" --socket "$D/s" li
expect "list " "$D/ctl" --socket="$D/s" li
expect "migrate " "$D/ctl" -c "$D/s" mig
expect "migrate " "$D/ctl" -c"$D/s" mig
expect "migrate " "$D/ctl" --connect="$D/s" --json mig
expect "pause pin place policy " "$D/ctl" --json --socket "$D/s" p
expect "--live " "$D/ctl" --socket "$D/s" policy web1 --li
expect "$D/sock-a " "$D/ctl" --socket "$D/sock-"
expect "$D/sock-a " "$D/ctl" -c "$D/sock-"
# VM names come from the socket given, in any spelling of the option.
expect "db-orders " "$D/ctl" --socket "$D/s" vminfo d
expect "db-orders " "$D/ctl" --socket="$D/s" vminfo d
expect "db-orders web1 " "$D/ctl" -c"$D/s" migrate ""
expect "db-orders " "$D/ctl" --socket "$D/s" events --vm d
echo "PASS: test_completion"
