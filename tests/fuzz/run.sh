#!/bin/sh
# run.sh BUILD SECONDS [NAME...] - run each libFuzzer target built in BUILD (make fuzz) for
# SECONDS on a scratch copy of its seed corpus, with its options (tests/fuzz/options) and
# dictionary (tests/fuzz/NAME.dict), then print one line per target: runs, coverage (cov: of
# libFuzzer's last status line), corpus size and findings (crash, leak, timeout and oom
# files; those whose sanitizer report starts in a library, not in vnumad, are counted apart
# with the library's name).  Everything a run makes stays under BUILD/fuzz/: NAME.log,
# corpus/NAME/ (what the fuzzer added: `make fuzz-merge` keeps the new coverage in the repo
# corpus) and crashes/NAME/.  Exits 1 when something was found in vnumad's code.
#
# run.sh --merge BUILD NAME... - merge BUILD/fuzz/corpus/NAME/ into tests/fuzz/corpus/NAME/,
# adding only inputs that bring new coverage (libFuzzer -merge=1; files named by their SHA-1).
#
# No NAME: every tests/fuzz/fuzz_NAME.c.  See docs/fuzzing.md.
set -eu

merge=false
if [ "${1:-}" = --merge ]; then
	merge=true
	shift
fi
if [ $# -lt 1 ] || { ! $merge && [ $# -lt 2 ]; }; then
	echo "usage: $0 BUILD SECONDS [NAME...] | $0 --merge BUILD [NAME...]" >&2
	exit 2
fi
build=$(cd "$1" && pwd)
shift
seconds=0
if ! $merge; then
	seconds=$1
	shift
fi
src=$(cd "$(dirname "$0")/../.." && pwd)
fuzz=$src/tests/fuzz
out=$build/fuzz
names="$*"
if [ -z "$names" ]; then
	names=$(for f in "$fuzz"/fuzz_*.c; do basename "$f" .c; done | sed 's/^fuzz_//')
fi

# Targets that write files (policy files, /proc trees, sockets) do so under $TMPDIR: a tmpfs
# when there is one, so that a run does not wear a disk; removed at the end.
tmp_base=$out
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
	tmp_base=/dev/shm
fi
mkdir -p "$out"
tmp=$(mktemp -d "$tmp_base/vnumad-fuzz-run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# Where a finding's sanitizer report starts, running it again: "ours" (vnumad's code, or no
# stack: a UBSan report, a harness abort()), the name of a library ("libhwloc.so.15"), or
# "gone" when it no longer fails (a forked run can keep an input that failed only with the
# state its job had built up).
finding_where() {
	# shellcheck disable=SC2046
	report=$(TMPDIR=$tmp "$1" $(options_of "$2" | sed 's/-fork=[0-9]*//; s/-ignore_crashes=1//') \
		"$3" 2>&1) && {
		echo gone
		return
	}
	# The first frame that is vnumad's source (ours) or a library other than the C library
	# (its name); frames of libc (its sources, the compiler's inline headers, libc.so) and the
	# sanitizers' interceptors in the binary are passed over: the caller decides.
	echo "$report" | awk -v bin="$1" -v src="$src/" '
		/^ +#[0-9]+ 0x/ {
			if (match($0, /\(\/[^ +)]*\+0x[0-9a-f]+\)/)) {
				path = substr($0, RSTART + 1, RLENGTH - 2)
				sub(/\+0x[0-9a-f]+$/, "", path)
				if (path != bin && path !~ /\/lib(c|m|pthread)\.so/) {
					n = split(path, parts, "/")
					print parts[n]
					found = 1
					exit
				}
				next
			}
			if (index($0, " " src) > 0) {
				print "ours"
				found = 1
				exit
			}
		}
		END { if (!found) print "ours" }'
}

options_of() {
	opts=$(awk -v n="$1" '$1 == n { $1 = ""; print }' "$fuzz/options")
	if [ -f "$fuzz/$1.dict" ]; then
		opts="$opts -dict=$fuzz/$1.dict"
	fi
	echo "$opts"
}

if $merge; then
	for n in $names; do
		bin=$build/tests/fuzz/fuzz_$n
		[ -d "$out/corpus/$n" ] || continue
		before=$(ls "$fuzz/corpus/$n" | wc -l)
		# shellcheck disable=SC2046
		TMPDIR=$tmp "$bin" -merge=1 $(options_of "$n") "$fuzz/corpus/$n" "$out/corpus/$n" \
			>"$out/$n.merge.log" 2>&1
		echo "$n: $(($(ls "$fuzz/corpus/$n" | wc -l) - before)) inputs added to tests/fuzz/corpus/$n/"
	done
	exit 0
fi

found=0
rm -f "$out/findings"
printf '%-14s %10s %7s %7s %9s  %s\n' target runs cov ft corpus findings
for n in $names; do
	bin=$build/tests/fuzz/fuzz_$n
	log=$out/$n.log
	crashes=$out/crashes/$n
	if [ ! -x "$bin" ]; then
		echo "run.sh: $bin not built (make fuzz builds it)" >&2
		exit 1
	fi
	rm -rf "$out/corpus/$n" "$crashes"
	mkdir -p "$out/corpus/$n" "$crashes"
	if [ -d "$fuzz/corpus/$n" ]; then
		cp "$fuzz/corpus/$n"/* "$out/corpus/$n"/
	fi
	# -timeout: an input taking FUZZ_TIMEOUT s (default 10) is a finding (a hang), and ends
	# the run; on a loaded machine a pause of the whole process can pass for one (it then
	# shows as "no longer fail"): a larger FUZZ_TIMEOUT keeps such a run going.
	# -rss_limit_mb: an input needing 2 GiB is a finding.
	# shellcheck disable=SC2046
	TMPDIR=$tmp "$bin" $(options_of "$n") -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/" \
		"$out/corpus/$n" >"$log" 2>&1 || true
	# The last status line ("#123 NEW cov: 456 ft: 789 corp: 12/3Kb ..."), and the run count
	# of "Done N runs" (absent when it stopped on a crash: then the last status line's).
	status=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
	runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n 1)
	[ -n "$runs" ] || runs=$(echo "$status" | sed -n 's/^#\([0-9]*\).*/\1/p')
	cov=$(echo "$status" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$status" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
	corp=$(echo "$status" | sed -n 's/.* corp: \([0-9]*\(\/[0-9A-Za-z]*\)\{0,1\}\).*/\1/p')
	finds=$(find "$crashes" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
		-o -name 'oom-*' \) | sort)
	ours=0
	libs=""
	gone=0
	for f in $finds; do
		where=$(finding_where "$bin" "$n" "$f")
		case $where in
		ours)
			ours=$((ours + 1))
			echo "$f" >>"$out/findings"
			;;
		gone) gone=$((gone + 1)) ;;
		*) libs="$libs $where" ;;
		esac
	done
	found=$((found + ours))
	what=$ours
	if [ -n "$libs" ]; then
		# shellcheck disable=SC2086
		what="$what (+$(echo $libs | wc -w) in $(echo $libs | tr ' ' '\n' | sort -u | paste -sd ' '))"
	fi
	if [ "$gone" -gt 0 ]; then
		what="$what (+$gone that no longer fail)"
	fi
	printf '%-14s %10s %7s %7s %9s  %s\n' "$n" "${runs:-?}" "${cov:-?}" "${ft:-?}" \
		"${corp:-?}" "$what"
done
if [ "$found" -gt 0 ]; then
	echo "run.sh: $found findings in vnumad; each reproduces with" \
		"$build/tests/fuzz/fuzz_NAME FILE:" >&2
	sed "s|^$src/||; s/^/  /" "$out/findings" >&2
	exit 1
fi
