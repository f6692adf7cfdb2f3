#!/usr/bin/env bash
# Screenshots of the status page (GET /) in both placement modes, by headless Chromium:
#   - a static host on level storage (--num-vvm 2: this host leads slot 1, slot 2 is free);
#   - a 2-host leases cluster on one mem storage (scripts/leases-cluster.ts: both hosts in one
#     process, since processes cannot share mem or level storage), 4 partitions, lease 2 s.
# Waits until the cluster has split the partitions 2/2, takes one screenshot per page into a
# git-ignored directory, prints their paths, and stops the processes it started by their PIDs.
#
#   bash apps/vvm-host/scripts/status-screenshot.sh     # from anywhere; no build needed
#
# Environment: OUT (default <repo>/.test-results/status-page), CHROMIUM (default
# /usr/bin/chromium), WINDOW (default 1000,900). Needs Node >= 22, curl and jq.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
APP="$ROOT/apps/vvm-host"
OUT="${OUT:-$ROOT/.test-results/status-page}"
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
WINDOW="${WINDOW:-1000,900}"
[[ -x "$CHROMIUM" ]] || { echo "no chromium at $CHROMIUM (apt-get install chromium, or set CHROMIUM)" >&2; exit 2; }
[[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 22 ]] ||
	{ echo "needs Node >= 22 on PATH (. scripts/bootstrap.sh)" >&2; exit 2; }
for tool in curl jq; do
	command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 2; }
done

WORK="$(mktemp -d)"
PIDS=()
# SIGTERM to each PID (a graceful stop), SIGKILL to any still running 10 s later.
cleanup() {
	for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for _ in $(seq 1 50); do
		local running=0
		for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && running=1; done
		((running)) || break
		sleep 0.2
	done
	for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT

# The host from its sources, as the tests run it (tsx, the @vvm/source condition). No wrapper
# function or subshell: $! must be the PID of node itself, which the cleanup signals.
cd "$APP"
TS=(node --import tsx --conditions=@vvm/source)

fail() {
	echo "status-screenshot: $1; logs:" >&2
	tail -n 20 "$WORK"/*.log >&2 || true
	exit 1
}

# wait_for SECONDS CMD...: retries CMD every 0.2 s until it succeeds.
wait_for() {
	local tries=$(($1 * 5))
	shift
	for _ in $(seq 1 "$tries"); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

listening_port() { grep -m1 '"event":"listening"' "$1" | jq -r .port; }

# The static host: its log shows the port it bound.
"${TS[@]}" src/cli.ts --storage level --data-dir "$WORK/static-data" --http-port 0 --num-vvm 2 \
	>"$WORK/static.log" 2>&1 &
PIDS+=($!)
# The lease cluster: its stdout names each host's port, then "cluster-ready".
"${TS[@]}" scripts/leases-cluster.ts --hosts 2 --log-dir "$WORK" -- --partitions 4 \
	--lease-interval-ms 2000 --lease-max-clock-skew-ms 100 >"$WORK/cluster.out" 2>"$WORK/cluster.log" &
PIDS+=($!)

wait_for 60 grep -q '"event":"services-started"' "$WORK/static.log" || fail "the static host did not lead"
STATIC_PORT="$(listening_port "$WORK/static.log")"
wait_for 60 grep -q '"event":"cluster-ready"' "$WORK/cluster.out" || fail "the lease cluster did not start"
mapfile -t LEASE_PORTS < <(jq -r 'select(.event == "cluster-host") | .port' "$WORK/cluster.out")

# Settled: every host serves half the partitions, deploys nothing, and knows the active driver.
settled() {
	for port in "${LEASE_PORTS[@]}"; do
		curl -sf "127.0.0.1:$port/status" |
			jq -e '.placement | .served | length == 2' >/dev/null || return 1
		curl -sf "127.0.0.1:$port/status" |
			jq -e '.placement | (.deploying | length == 0) and .placementDriver.actor != null' >/dev/null ||
			return 1
	done
}
wait_for 30 settled || fail "the lease cluster did not split the partitions 2/2"

mkdir -p "$OUT"
PROFILE="$WORK/chromium-profile"
shoot() { # shoot PORT FILE
	"$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$PROFILE" --virtual-time-budget=3000 --window-size="$WINDOW" \
		--screenshot="$2" "http://127.0.0.1:$1/" >/dev/null 2>&1
	[[ -s "$2" ]] || fail "no screenshot $2"
	echo "$2"
}
echo "screenshots:"
shoot "$STATIC_PORT" "$OUT/static.png"
for i in "${!LEASE_PORTS[@]}"; do
	shoot "${LEASE_PORTS[$i]}" "$OUT/leases-host-$((i + 1)).png"
done
echo "hosts: static 127.0.0.1:$STATIC_PORT (pid ${PIDS[0]}); leases $(printf '127.0.0.1:%s ' "${LEASE_PORTS[@]}")(one process, pid ${PIDS[1]}); stopping them"
