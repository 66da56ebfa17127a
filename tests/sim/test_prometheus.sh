#!/bin/sh
# test_prometheus.sh - a real Prometheus (Debian's prometheus) scrapes a simulated vnumad.
#
# Prometheus runs on loopback with a private storage directory, scraping every second; the
# test waits (a bounded number of polls of its HTTP API) until it holds two scrapes, then asks
# it for vnumad_vm_locality_ratio and compares each VM's value with the memory_locality that
# `vnumactl --json list` gives for the same daemon.
#
# The two readings must come from the same round: the daemon runs at --speed 0.2 (a round every
# 5 s of wall time) and a comparison counts only when the round count from `vnumactl status`
# before and after the list equals the vnumad_rounds_total of the scrape Prometheus answers
# with; otherwise it is tried again.  Within one round both print the same double with 10
# significant digits, so they must agree to 1e-9.
set -u

: "${VNUMAD_BINDIR:?set VNUMAD_BINDIR to the build directory}"
VNUMAD=$VNUMAD_BINDIR/agent/vnumad
CTL=$VNUMAD_BINDIR/agent/vnumactl

D=$(mktemp -d "${TMPDIR:-/tmp}/vnumad-prom.XXXXXX") || exit 1
T_PID_VARS="DPID PPID_"
T_LOG_LINES=40
. "$(dirname "$0")/lib.sh"

for tool in prometheus curl jq ss; do
	command -v $tool >/dev/null 2>&1 ||
		fail "$tool is missing (packaging/install-deps.sh installs prometheus and curl)"
done

t_sim_conf "$D/vnumad.conf"
echo "metrics_listen = 127.0.0.1:0" >>"$D/vnumad.conf"
"$VNUMAD" --simulate --speed 0.2 --foreground -f "$D/vnumad.conf" --socket "$D/sock" \
	--state "$D/state.json" \
	>"$D/vnumad.log" 2>&1 &
DPID=$!
t_wait_answer "$D/sock" "$DPID" "$D/vnumad.log"
target=$("$CTL" -c "$D/sock" --json status | jq -r .metrics_listen)
case $target in 127.0.0.1:[1-9]*) ;; *) fail "vnumad serves no metrics: '$target'" ;; esac

cat >"$D/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: vnumad
    static_configs:
      - targets: ['$target']
YML

# A port no one listens on (from ss), tried again if Prometheus loses a race for it.
free_port() {
	while :; do
		p=$(($(od -An -N2 -tu2 /dev/urandom) % 20000 + 30000))
		ss -Htln "sport = :$p" | grep -q . || break
	done
	echo "$p"
}

prom_ready() { curl -sf --max-time 5 "http://$PROM/-/ready" >/dev/null 2>&1; }

tries=0
while :; do
	PROM=127.0.0.1:$(free_port)
	prometheus --config.file="$D/prometheus.yml" --storage.tsdb.path="$D/data" \
		--web.listen-address="$PROM" >"$D/prometheus.log" 2>&1 &
	PPID_=$!
	i=0
	while ! prom_ready && kill -0 "$PPID_" 2>/dev/null && [ $i -lt 600 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	prom_ready && break
	kill "$PPID_" 2>/dev/null
	wait "$PPID_" 2>/dev/null
	PPID_=
	tries=$((tries + 1))
	[ $tries -lt 3 ] || fail "Prometheus did not come up: $(tail -n 5 "$D/prometheus.log")"
done

# query EXPR: the result vector of an instant query, as JSON.
query() {
	curl -sf --max-time 10 -G "http://$PROM/api/v1/query" --data-urlencode "query=$1" |
		jq -ec 'select(.status == "success") | .data.result'
}

# Two scrapes stored.
scraped_twice() {
	n=$(query 'count_over_time(vnumad_rounds_total[5m])' | jq -r '.[0].value[1] // 0')
	[ "${n:-0}" -ge 2 ]
}
i=0
until scraped_twice; do
	i=$((i + 1))
	[ $i -lt 600 ] || fail "Prometheus has not scraped vnumad twice: $(query 'up')"
	kill -0 "$DPID" 2>/dev/null || fail "vnumad exited"
	sleep 0.1
done
[ "$(query 'up{job="vnumad"}' | jq -r '.[0].value[1]')" = 1 ] || fail "up{job=vnumad} is not 1"

# Compare, from one round.
compared=0
i=0
while [ $compared -eq 0 ]; do
	i=$((i + 1))
	[ $i -lt 200 ] || fail "never caught vnumactl and Prometheus on the same round"
	r1=$("$CTL" -c "$D/sock" --json status | jq -r .rounds)
	"$CTL" -c "$D/sock" --json list >"$D/list.json" || fail "vnumactl list failed"
	query vnumad_vm_locality_ratio >"$D/prom.json" || fail "the query failed"
	pr=$(query vnumad_rounds_total | jq -r '.[0].value[1]')
	r2=$("$CTL" -c "$D/sock" --json status | jq -r .rounds)
	if [ "$r1" != "$r2" ] || [ "$r1" != "$pr" ]; then
		sleep 0.2
		continue
	fi
	jq -r '.vms[] | "\(.name) \(.memory_locality)"' "$D/list.json" | sort >"$D/a"
	jq -r '.[] | "\(.metric.vm) \(.value[1])"' "$D/prom.json" | sort >"$D/b"
	[ -s "$D/a" ] || fail "vnumactl list shows no VMs"
	cut -d' ' -f1 "$D/a" >"$D/a.names"
	cut -d' ' -f1 "$D/b" >"$D/b.names"
	cmp -s "$D/a.names" "$D/b.names" ||
		fail "Prometheus and vnumactl name other VMs: $(diff "$D/a.names" "$D/b.names")"
	paste -d' ' "$D/a" "$D/b" | awk '{ d = $2 - $4; if (d < 0) d = -d;
		if (d > 1e-9) { print "FAIL: " $1 ": vnumactl " $2 ", Prometheus " $4; bad = 1 } }
		END { exit bad }' >&2 || exit 1
	compared=$(wc -l <"$D/a")
done
echo "PASS: test_prometheus ($compared VMs compared at round $r1)"
