#!/usr/bin/env bash
# The chaos runs of CI (apps/chaos/README.md "CI"). Needs a build (faster host start-up),
# Java 17 (the run's own DynamoDB Local) and libfaketime (clock faults; installed here if missing).
#   1. at least 100 leadership changes with zero overlaps over a DynamoDB Local of its own;
#   2. the checker must catch the combined mutant (killer + lease check + lease timer removed);
#   3. the commands workload (fenced writes, issue 22) at SequencesTrustLevel 0, 1 and 2 over
#      DynamoDB Local: 0 anomalies in the clients' history against the storage;
#   4. the commands checker must catch the unfenced command processor (writes held past the lease);
#   5. CHAOS_CAS_CLUSTER=1: steps 1 and 3 on the 3-node Cassandra cluster (127.0.0.2-4, RF 3) too.
# Each run prints its seed; `pnpm chaos --seed <seed> ...` repeats its decisions.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/test-packages.sh

echo "chaos-ci: 1. 100 leadership changes over DynamoDB Local"
pnpm --silent chaos --changes 100 --duration 420 --hosts 6 --num-vvm 3 --progress-seconds 30

echo "chaos-ci: 2. the checker catches the combined mutant"
pnpm --silent chaos --mutants killer+lease-check+lease-timer --duration 45 \
	--faults stop-long=3,proxy-hold=2,proxy-drop=1,kill=1 --progress-seconds 30

for level in 0 1 2; do
	echo "chaos-ci: 3. commands at level $level over DynamoDB Local: no acknowledged command lost, reverted or applied twice"
	pnpm --silent chaos --workload commands --trust-level "$level" --clients 16 --duration 45 \
		--seed "ci-dyn-L$level" --progress-seconds 30
done

echo "chaos-ci: 4. the commands checker catches the unfenced command processor"
pnpm --silent chaos --workload commands --mutants unfenced --trust-level 2 --clients 16 --workspaces 8 \
	--faults proxy-hold-writes=4,kill=1 --duration 45 --seed ci-unfenced --progress-seconds 30

if [ "${CHAOS_CAS_CLUSTER:-0}" = 1 ]; then
	cluster=(--storage cas --cas-contact-points 127.0.0.2:9042,127.0.0.3:9042,127.0.0.4:9042
		--cas-replication-factor 3)
	echo "chaos-ci: 5. 100 leadership changes over the 3-node Cassandra cluster (RF 3)"
	pnpm --silent chaos "${cluster[@]}" --changes 100 --duration 420 --hosts 6 --num-vvm 3 --progress-seconds 30
	for level in 0 1 2; do
		echo "chaos-ci: 5. commands at level $level over the 3-node Cassandra cluster (RF 3)"
		pnpm --silent chaos "${cluster[@]}" --workload commands --trust-level "$level" --duration 45 \
			--seed "ci-cas-L$level" --progress-seconds 30
	done
fi
