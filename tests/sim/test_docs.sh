#!/bin/sh
# test_docs.sh - the command table, the man pages and the bash completion agree.
#
# Every command and alias that `vnumactl --help` lists has a section in docs/vnumactl.1 and a
# place in packaging/vnumactl.bash-completion, and vice versa neither documents a command the
# table lacks; each command's options (from `vnumactl help COMMAND`, i.e. its spec in the
# table) are exactly those of its man page heading and of its completion.  Every option in
# `vnumad --help` is documented in docs/vnumad.8.  The roff sources are read as text.
set -u

: "${VNUMAD_BINDIR:?set VNUMAD_BINDIR to the build directory}"
: "${VNUMAD_SRCDIR:?set VNUMAD_SRCDIR to the source directory}"
VNUMACTL=$VNUMAD_BINDIR/agent/vnumactl
VNUMAD=$VNUMAD_BINDIR/agent/vnumad
MAN=$VNUMAD_SRCDIR/docs/vnumactl.1
MAN8=$VNUMAD_SRCDIR/docs/vnumad.8
COMP=$VNUMAD_SRCDIR/packaging/vnumactl.bash-completion
[ -x "$VNUMACTL" ] || { echo "FAIL: no $VNUMACTL" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vnumad-docs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

failed=0
fail() {
	echo "FAIL: $*" >&2
	failed=1
}

for f in "$MAN" "$MAN8" "$COMP"; do
	[ -r "$f" ] || { echo "FAIL: cannot read $f" >&2; exit 1; }
done

# ---- the three lists of commands ----------------------------------------------------------

"$VNUMACTL" --help >"$tmp/help" || { echo "FAIL: vnumactl --help failed" >&2; exit 1; }
# Command lines are "  NAME  help" (two spaces in); usage lines under them are indented more.
sed -n '/^commands:$/,/^$/p' "$tmp/help" |
	sed -n 's/^  \([a-z][a-z0-9-]*\)  .*/\1/p' | sort >"$tmp/commands"
sed -n 's/.*(alias: \([^)]*\)).*/\1/p' "$tmp/help" | tr ', ' '\n\n' | sed '/^$/d' |
	sort >"$tmp/aliases"
sort "$tmp/commands" "$tmp/aliases" >"$tmp/names"
[ "$(wc -l <"$tmp/commands")" -ge 10 ] ||
	{ echo "FAIL: too few commands in vnumactl --help: $(cat "$tmp/commands")" >&2; exit 1; }
grep -qx dominfo "$tmp/aliases" || fail "vnumactl --help shows no alias dominfo"

# The man page: the first word of each .SS heading in the COMMANDS section.
sed -n '/^\.SH COMMANDS/,/^\.SH /p' "$MAN" |
	sed -n 's/^\.SS "\{0,1\}\([a-z][a-z0-9-]*\).*/\1/p' | sort >"$tmp/man"
# The completion: the words of _vnumactl_commands.
sed -n 's/^_vnumactl_commands="\(.*\)"$/\1/p' "$COMP" | tr ' ' '\n' | sed '/^$/d' |
	sort >"$tmp/comp"
[ -s "$tmp/man" ] || fail "no .SS command headings in $MAN"
[ -s "$tmp/comp" ] || fail "no _vnumactl_commands in $COMP"

while read -r cmd; do
	grep -qx "$cmd" "$tmp/man" || fail "command '$cmd' has no section in docs/vnumactl.1"
	grep -qx "$cmd" "$tmp/comp" || fail "command '$cmd' is not completed"
done <"$tmp/commands"
while read -r alias; do
	grep -q "^\.BR* $alias\( \|$\)" "$MAN" || fail "alias '$alias' is not in docs/vnumactl.1"
	grep -qx "$alias" "$tmp/comp" || fail "alias '$alias' is not completed"
done <"$tmp/aliases"
while read -r cmd; do
	grep -qx "$cmd" "$tmp/commands" ||
		fail "docs/vnumactl.1 documents '$cmd', which vnumactl does not have"
done <"$tmp/man"
while read -r cmd; do
	grep -qx "$cmd" "$tmp/names" ||
		fail "the completion offers '$cmd', which vnumactl does not have"
done <"$tmp/comp"

# ---- each command's options ---------------------------------------------------------------

# options_of: the "--name" words of standard input, one per line, sorted.
options_of() {
	sed 's/\\f[BIRP]//g; s/\\-/-/g' | tr ' []|"=' '\n\n\n\n\n\n' | grep '^--[a-z]' | sort -u
}

# The completion's options of a command: its line between options-begin and options-end,
# "PATTERN) echo "OPTIONS" ;;", where PATTERN is names joined by " | ".
comp_options() {
	sed -n '/# options-begin/,/# options-end/p' "$COMP" |
		sed -n 's/^[[:space:]]*\([a-z| -]*\)) echo "\([^"]*\)" ;;$/\1:\2/p' |
		while IFS=: read -r pattern opts; do
			for p in $(echo "$pattern" | tr '|' ' '); do
				[ "$p" = "$1" ] && echo "$opts"
			done
		done | options_of
}

while read -r cmd; do
	"$VNUMACTL" help "$cmd" >"$tmp/usage" || fail "vnumactl help $cmd failed"
	head -n 1 "$tmp/usage" | options_of >"$tmp/spec.opts"
	sed -n '/^\.SH COMMANDS/,/^\.SH /p' "$MAN" | grep "^\.SS \"$cmd[ \"]" | options_of \
		>"$tmp/man.opts"
	comp_options "$cmd" >"$tmp/comp.opts"
	cmp -s "$tmp/spec.opts" "$tmp/man.opts" ||
		fail "$cmd: options in the table ($(echo $(cat "$tmp/spec.opts"))) and in" \
			"docs/vnumactl.1 ($(echo $(cat "$tmp/man.opts"))) differ"
	cmp -s "$tmp/spec.opts" "$tmp/comp.opts" ||
		fail "$cmd: options in the table ($(echo $(cat "$tmp/spec.opts"))) and in the" \
			"completion ($(echo $(cat "$tmp/comp.opts"))) differ"
done <"$tmp/commands"

# Each option that the man page describes under GLOBAL OPTIONS is one vnumactl --help lists.
sed -n '/^\.SH GLOBAL OPTIONS/,/^\.SH /p' "$MAN" | options_of >"$tmp/man.global"
sed -n '/^global options:$/,/^$/p' "$tmp/help" | options_of >"$tmp/help.global"
cmp -s "$tmp/man.global" "$tmp/help.global" ||
	fail "global options of --help ($(echo $(cat "$tmp/help.global"))) and of" \
		"docs/vnumactl.1 ($(echo $(cat "$tmp/man.global"))) differ"

# ---- the daemon's options -----------------------------------------------------------------

if [ -x "$VNUMAD" ]; then
	"$VNUMAD" --help >"$tmp/vnumad.help" 2>&1 || fail "vnumad --help failed"
	tr ' []|' '\n\n\n\n' <"$tmp/vnumad.help" | grep '^-' | sort -u >"$tmp/vnumad.opts"
	[ -s "$tmp/vnumad.opts" ] || fail "no options in vnumad --help"
	sed 's/\\f[BIRP]//g; s/\\-/-/g' "$MAN8" >"$tmp/vnumad.8.txt"
	while read -r opt; do
		grep -q -- "^\.[BIRT]*[[:space:]]*\"\{0,1\}$opt\([[:space:]\",]\|$\)" \
			"$tmp/vnumad.8.txt" || fail "vnumad option '$opt' is not in docs/vnumad.8"
	done <"$tmp/vnumad.opts"
else
	echo "skip: no $VNUMAD, its options are not checked" >&2
fi

[ "$failed" -eq 0 ] || exit 1
echo "ok: $(wc -l <"$tmp/commands") commands and $(wc -l <"$tmp/aliases") aliases agree"
