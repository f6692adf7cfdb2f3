#!/usr/bin/env bash
# The chaos runs of CI (tooling/chaos/README.md "CI"). Needs a build (faster host start-up),
# Java 17 (the run's own DynamoDB Local) and libfaketime (clock faults; installed here if missing).
#   1. at least 100 leadership changes with zero overlaps over a DynamoDB Local of its own;
#   2. the checker must catch the combined mutant (killer + lease check + lease timer removed);
#   3. CHAOS_CAS_CLUSTER=1: step 1 on the 3-node Cassandra cluster (127.0.0.2-4, RF 3) as well.
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

if [ "${CHAOS_CAS_CLUSTER:-0}" = 1 ]; then
	echo "chaos-ci: 3. 100 leadership changes over the 3-node Cassandra cluster (RF 3)"
	pnpm --silent chaos --storage cas --cas-contact-points 127.0.0.2:9042,127.0.0.3:9042,127.0.0.4:9042 \
		--cas-replication-factor 3 --changes 100 --duration 420 --hosts 6 --num-vvm 3 --progress-seconds 30
fi
