#!/usr/bin/env bash
# The timing suites under load (issue 35): runs the multi-process leases suites N times each while
# two busy loops (one per core of a 2-core machine) compete for the CPU, and prints how many runs
# passed. The suites size their leases from the machine they measure (test/support/machine-budget.ts
# in apps/vvm-host); this is the proof that they hold on a busy laptop or a shared CI runner.
#   bash scripts/timing-under-load.sh [runs=10] [busy-loops=2]
# Needs Cassandra and DynamoDB Local running (bash tooling/servers/start-all.sh cassandra dynamodb).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs="${1:-10}"
loops="${2:-2}"
if ! [[ "$runs" =~ ^[1-9][0-9]*$ && "$loops" =~ ^[0-9]+$ ]]; then
	echo "usage: timing-under-load.sh [runs>=1] [busy-loops>=0] (got '$runs' '$loops')" >&2
	exit 2
fi
cd "$ROOT"
# shellcheck source=/dev/null
. scripts/bootstrap.sh >/dev/null

busy=()
stop_busy() { for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop_busy EXIT
for _ in $(seq 1 "$loops"); do
	node -e 'for (;;) {}' &
	busy+=($!)
done
echo "timing-under-load: $loops busy loops (pids ${busy[*]:-none}), $runs runs of each suite"

files=(test/leases-multiprocess-cas.integration.test.ts test/leases-multiprocess-dyn.integration.test.ts)
declare -A passed=()
for file in "${files[@]}"; do passed[$file]=0; done
log="$ROOT/.servers/timing-under-load.log"
mkdir -p "$(dirname "$log")"
: >"$log"
for run in $(seq 1 "$runs"); do
	for file in "${files[@]}"; do
		t0=$SECONDS
		if (cd apps/vvm-host && CASSANDRA_TESTS_ENABLED=1 DYNAMODB_TESTS_ENABLED=1 \
			pnpm exec vitest run "$file" >>"$log" 2>&1); then
			passed[$file]=$((passed[$file] + 1))
			verdict=passed
		else
			verdict=FAILED
		fi
		echo "timing-under-load: run $run $file $verdict in $((SECONDS - t0)) s (load $(cut -d' ' -f1 /proc/loadavg))"
	done
done
failed=0
for file in "${files[@]}"; do
	echo "timing-under-load: $file ${passed[$file]}/$runs passed"
	((passed[$file] == runs)) || failed=1
done
echo "timing-under-load: output in $log"
exit "$failed"
