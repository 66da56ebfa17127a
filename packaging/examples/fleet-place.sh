#!/bin/sh
# fleet-place.sh - which host of a fleet should take a new VM, asked of each host's vnumad.
#
#   fleet-place.sh --vcpus N --memory SIZE [--cells K] HOST...
#
# Each host's vnumad answers `vnumactl place` from its live state: the node or nodes it would
# give the VM (nothing reserved).  The best host keeps the VM on the fewest nodes (one node:
# all its memory local), then has the most memory free on those nodes; ties go to the host
# named first.  A host that cannot be asked, or has no room, is listed and skipped.
#
# A host is asked through $VNUMACTL_CMD with {} replaced by the host's name; the default is
# "ssh {} vnumactl" (vnumactl needs only read access: any user in the socket's group or with
# a socket mode that lets them connect).  Prints one line per host,
#   HOST NODES SPAN FREE_MIB      (or HOST - - - why)
# and last "best: HOST"; exit status 1 when no host has room.
#
# The same capacity is in each host's metrics: vnumad_node_place_free_bytes and
# vnumad_node_place_free_vcpus per node (vnumad(8), METRICS; docs/placement-advice.md).
set -u

usage() {
	echo "usage: fleet-place.sh --vcpus N --memory SIZE [--cells K] HOST..." >&2
	exit 2
}

args=""
while [ $# -gt 0 ]; do
	case $1 in
	--vcpus | --memory | --cells)
		[ $# -ge 2 ] || usage
		args="$args $1 $2"
		shift 2
		;;
	--*) usage ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] && [ -n "$args" ] || usage
cmd_tmpl=${VNUMACTL_CMD:-"ssh {} vnumactl"}

best="" best_span=0 best_free=0
for host in "$@"; do
	cmd=$(printf '%s\n' "$cmd_tmpl" | sed "s|{}|$host|g")
	# shellcheck disable=SC2086
	if ! place=$($cmd --json place $args 2>&1); then
		echo "$host - - - $(printf '%s' "$place" | tr '\n' ' ')"
		continue
	fi
	# shellcheck disable=SC2086
	nodeinfo=$($cmd --json nodeinfo 2>/dev/null) || {
		echo "$host - - - nodeinfo failed"
		continue
	}
	nodes=$(printf '%s' "$place" | jq -r .nodes)
	# the node list ("1", "0-1", "0,2") as ids, one a line
	ids=$(printf '%s\n' "$nodes" | tr ',' '\n' |
		awk -F- '{ for (i = $1; i <= ($2 == "" ? $1 : $2); i++) print i }')
	span=$(printf '%s\n' "$ids" | grep -c .)
	free=$(printf '%s' "$nodeinfo" | jq --arg ids "$ids" \
		'[.nodes[] | select(.node as $n | ($ids | split("\n") | index($n | tostring)))
		  | .mem_free_mib] | add // 0')
	echo "$host $nodes $span $free"
	if [ -z "$best" ] || [ "$span" -lt "$best_span" ] ||
		{ [ "$span" -eq "$best_span" ] && [ "$free" -gt "$best_free" ]; }; then
		best=$host best_span=$span best_free=$free
	fi
done
[ -n "$best" ] || {
	echo "best: none (no host has room)"
	exit 1
}
echo "best: $best"
