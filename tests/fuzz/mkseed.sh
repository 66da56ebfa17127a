#!/bin/sh
# mkseed.sh ROOT FILE... - print FILEs (paths relative to ROOT) as one fuzz input, in the form
# of several files that tests/fuzz/fuzz_util.h describes: "%% PATH" then the file.  A file
# named cmdline (NUL-separated, as in /proc) is written "%%0 PATH", one argument per line; a
# file that does not end in a newline, followed by others, "%%- PATH" with a newline added.
# For seeds of the targets that read trees (discover, sysfs, policy_files), e.g.
#   sh tests/fuzz/mkseed.sh tests/fixtures/linux/2node sys/devices/system/node/online \
#       sys/devices/system/node/node0/cpulist ... > tests/fuzz/corpus/sysfs/ok-2node
set -eu

if [ $# -lt 2 ]; then
	echo "usage: $0 ROOT FILE..." >&2
	exit 2
fi
root=$1
shift
while [ $# -gt 0 ]; do
	f=$1
	shift
	if [ ! -f "$root/$f" ]; then
		echo "mkseed: $root/$f: not a file" >&2
		exit 1
	fi
	case $f in
	cmdline | */cmdline)
		if [ -s "$root/$f" ] && [ "$(tail -c 1 "$root/$f" | od -An -b | tr -d ' ')" != 000 ]; then
			echo "mkseed: $root/$f does not end in a NUL: write it by hand" >&2
			exit 1
		fi
		printf '%%%%0 %s\n' "$f"
		tr '\000' '\n' <"$root/$f"
		;;
	*)
		last=$(tail -c 1 "$root/$f" | od -An -c | tr -d ' ')
		if [ $# -gt 0 ] && [ -s "$root/$f" ] && [ "$last" != '\n' ]; then
			printf '%%%%- %s\n' "$f"
			cat "$root/$f"
			echo
		else
			printf '%%%% %s\n' "$f"
			cat "$root/$f"
		fi
		;;
	esac
done
