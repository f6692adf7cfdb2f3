#!/usr/bin/env bash
# The chaos runs of CI (apps/chaos/README.md "CI"). Needs a build (faster host start-up),
# Java 17 (the run's own DynamoDB Local) and libfaketime (clock faults; installed here if missing).
#   1. at least 100 leadership changes with zero overlaps over a DynamoDB Local of its own;
#   2. the checker must catch the combined mutant (killer + lease check + lease timer removed);
#   3. the commands workload (fenced writes, issue 22) at SequencesTrustLevel 0, 1 and 2 over
#      DynamoDB Local: 0 anomalies in the clients' history against the storage;
#   4. the commands checker must catch the unfenced command processor (writes held past the lease);
#   5. CHAOS_CAS_CLUSTER=1: steps 1 and 3 on the 3-node Cassandra cluster (127.0.0.2-4, RF 3) too;
#   7. the commands workload at levels 0, 1 and 2 over the repository's Redis (REDIS_PORT, 6390;
#      a key prefix of its own per run), in the dyn_main series.
# Each run prints its seed; `pnpm chaos --seed <seed> ...` repeats its decisions.
# Two series run side by side (the runs are mostly waiting for leases and faults): steps 1-4
# over DynamoDB Local, step 5 over the cluster. Each series is sequential; its lines are prefixed
# ([dyn] / [cas]) and kept whole in .test-results/chaos-<series>.log. Each run's time is printed.
# CHAOS_PARALLEL=0 runs the series one after the other, as .ci/run does beside the rehearsal. The 100-change runs stop at 100
# changes; their --duration is only the deadline (side by side on 2 cores they take ~7 min).
# Arguments name the series to run (`chaos-ci.sh cas`; dyn is dyn_main and dyn_more), whatever
# CHAOS_CAS_CLUSTER says.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/test-packages.sh

mkdir -p .test-results
# run SERIES TITLE ARGS...: one chaos run with its title and time.
# A failed run also leaves its title and last lines in .test-results/ci-failures.txt, which
# .ci/run prints last: CI's record keeps the end of its output, where a series' failure is
# otherwise only named.
run() {
	local series="$1" title="$2" t0 out status=0
	shift 2
	t0=$(date +%s)
	out="$(mktemp)"
	echo "chaos-ci: $title"
	pnpm --silent chaos "$@" --progress-seconds 30 2>&1 | tee "$out" || status=$?
	local seconds=$(($(date +%s) - t0))
	if [ "$status" != 0 ]; then
		{
			echo "chaos-ci [$series]: $title: FAILED (exit $status) after $seconds s; its last 60 lines:"
			tail -n 60 "$out"
			echo
		} >>"$ROOT/.test-results/ci-failures.txt"
	fi
	rm -f "$out"
	[ "$status" = 0 ] || { echo "chaos-ci: $title: FAILED (exit $status) in $seconds s"; return "$status"; }
	echo "chaos-ci: $title: passed in $seconds s"
}

dyn_series() {
	dyn_main_series
	dyn_more_series
}

# dyn_main: steps 1 and 3 at levels 0 and 1; dyn_more: step 3 at level 2, steps 2 and 4 (.ci/run
# runs dyn_more in its cluster lane, after the cas series, to even the lanes out).
dyn_main_series() {
	run dyn "1. 100 leadership changes over DynamoDB Local" --changes 100 --duration 600 --hosts 6 --num-vvm 3
	for level in 0 1; do dyn_commands "$level"; done
	for level in 0 1 2; do
		run dyn "7. commands at level $level over Redis: no acknowledged command lost, reverted or applied twice" \
			--storage redis --workload commands --trust-level "$level" --clients 16 --duration 45 \
			--seed "ci-redis-L$level"
	done
}

dyn_more_series() {
	dyn_commands 2
	run dyn "2. the checker catches the combined mutant" --mutants killer+lease-check+lease-timer \
		--duration 45 --faults stop-long=3,proxy-hold=2,proxy-drop=1,kill=1
	run dyn "4. the commands checker catches the unfenced command processor" --workload commands \
		--mutants unfenced --trust-level 2 --clients 16 --workspaces 8 \
		--faults proxy-hold-writes=4,kill=1 --duration 45 --seed ci-unfenced
}

dyn_commands() {
	run dyn "3. commands at level $1 over DynamoDB Local: no acknowledged command lost, reverted or applied twice" \
		--workload commands --trust-level "$1" --clients 16 --duration 45 --seed "ci-dyn-L$1"
}

cas_series() {
	local cluster=(--storage cas --cas-contact-points 127.0.0.2:9042,127.0.0.3:9042,127.0.0.4:9042
		--cas-replication-factor 3)
	run cas "5. 100 leadership changes over the 3-node Cassandra cluster (RF 3)" "${cluster[@]}" \
		--changes 100 --duration 600 --hosts 6 --num-vvm 3
	for level in 0 1 2; do
		run cas "5. commands at level $level over the 3-node Cassandra cluster (RF 3)" "${cluster[@]}" \
			--workload commands --trust-level "$level" --duration 45 --seed "ci-cas-L$level"
	done
	# On a DynamoDB Local of its own (chaos starts one per run); here to even the two series out.
	run dyn "6. operator actions under faults (a rolling --num-vvm change, a placement switch, a lost lease root repaired), commands checker on" \
		--workload commands --trust-level 2 --clients 16 --operator all --duration 60 --seed ci-op-all
}

# series NAME: runs NAME_series with its lines prefixed and logged; exit status of the series.
series() {
	set -o pipefail
	"$1_series" 2>&1 | tee ".test-results/chaos-$1.log" | sed -u "s/^/[$1] /"
}

t_all=$(date +%s)
if [ "$#" -gt 0 ]; then
	# Named series only, one after the other (.ci/run spreads them over its lanes): dyn (1-4),
	# dyn_main and dyn_more (its two halves), cas (5).
	for name in "$@"; do
		case "$name" in
		dyn | dyn_main | dyn_more | cas) series "$name" ;;
		*) echo "chaos-ci: unknown series '$name' (dyn, dyn_main, dyn_more, cas)" >&2; exit 2 ;;
		esac
	done
elif [ "${CHAOS_CAS_CLUSTER:-0}" != 1 ]; then
	series dyn
elif [ "${CHAOS_PARALLEL:-1}" = 0 ]; then
	# Both series run even when the first fails: one CI run reports every failed series. Each in
	# the background and waited for, as side by side: called in a `||` list, a series' function
	# would run with `set -e` off and go on past a failed run.
	status=0
	series dyn & dyn_pid=$!
	wait "$dyn_pid" || { echo "chaos-ci: the DynamoDB Local series FAILED (.test-results/chaos-dyn.log)" >&2; status=1; }
	series cas & cas_pid=$!
	wait "$cas_pid" || { echo "chaos-ci: the Cassandra cluster series FAILED (.test-results/chaos-cas.log)" >&2; status=1; }
	[ "$status" = 0 ] || exit 1
else
	series dyn & dyn_pid=$!
	series cas & cas_pid=$!
	status=0
	wait "$dyn_pid" || { echo "chaos-ci: the DynamoDB Local series FAILED (.test-results/chaos-dyn.log)" >&2; status=1; }
	wait "$cas_pid" || { echo "chaos-ci: the Cassandra cluster series FAILED (.test-results/chaos-cas.log)" >&2; status=1; }
	[ "$status" = 0 ] || exit 1
fi
echo "chaos-ci: every run passed in $(($(date +%s) - t_all)) s"
