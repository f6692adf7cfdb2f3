#!/usr/bin/env bash
# The one test command: installs what is missing, starts real Cassandra, DynamoDB Local,
# PostgreSQL and Redis on 127.0.0.1 (those not listening yet, stopped again afterwards), and runs every test
# of every package once with vitest. Real-server suites are required to run here (no skipping).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
mkdir -p .test-results

port_open() { timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" >/dev/null 2>&1; }
# The servers whose port is not open yet: this script starts those, and stops them afterwards.
# Servers already listening (CI's, a developer's, shared ones) are used as they are.
missing=()
port_open "${CASSANDRA_PORT:-9042}" || missing+=(cassandra)
port_open "${DYNAMODB_PORT:-8000}" || missing+=(dynamodb)
port_open "${PG_PORT:-54329}" || missing+=(postgres)
port_open "${REDIS_PORT:-6390}" || missing+=(redis)
stop_servers() {
	# The 3-node cluster (its own script), unless the caller keeps it for later runs (.ci/run).
	if [ "${VVM_KEEP_CLUSTER:-0}" != 1 ]; then bash tooling/servers/cassandra-cluster/ci.sh stop || true; fi
	if [ "${#missing[@]}" -gt 0 ]; then bash tooling/servers/stop-all.sh "${missing[@]}" || true; fi
}
trap stop_servers EXIT

# Servers first, in the background: Cassandra's first start downloads its jars and takes longest.
servers_pid=""
if [ "${#missing[@]}" -gt 0 ]; then
	bash tooling/servers/start-all.sh "${missing[@]}" > .test-results/servers.log 2>&1 &
	servers_pid=$!
else
	echo "test: using the servers already listening on 127.0.0.1:${CASSANDRA_PORT:-9042}, :${DYNAMODB_PORT:-8000}, :${PG_PORT:-54329} and :${REDIS_PORT:-6390}" > .test-results/servers.log
fi
bash tooling/servers/cassandra-cluster/ci.sh start # 3-node cluster, background; its suites run last

. scripts/bootstrap.sh
bash scripts/test-packages.sh
# The power-cut test's FUSE filesystem (Go, from the module proxy; built once, then cached). Where
# it cannot be built the test is skipped with the reason, except in CI, which requires it.
if ! bash tooling/powercut/install.sh; then
	if [ "${CI:-}" = "true" ] || [ "${CI:-}" = "1" ]; then
		echo "test: tooling/powercut could not be built (above); CI requires the power-cut test" >&2
		exit 1
	fi
	echo "test: WARNING: tooling/powercut could not be built; the power-cut test will be skipped" >&2
fi

servers_ok=1
if [ -n "$servers_pid" ]; then wait "$servers_pid" || servers_ok=0; fi
cat .test-results/servers.log
if [ "$servers_ok" = 1 ]; then
	# The servers are up: their suites must run (a skip would fail).
	export CASSANDRA_TESTS_ENABLED=1 DYNAMODB_TESTS_ENABLED=1 PG_TESTS_ENABLED=1 REDIS_TESTS_ENABLED=1
elif [ "${CI:-}" = "true" ] || [ "${CI:-}" = "1" ]; then
	echo "test: the real servers did not start (log above); CI requires them" >&2
	exit 1
else
	# A machine with only Node and npm (no Java 17 / Maven, no PostgreSQL): everything else still
	# runs, and the Cassandra, DynamoDB and PostgreSQL suites report as skipped with the reason.
	echo "test: WARNING: the real servers did not start (log above); their suites will be skipped." >&2
	echo "test: install openjdk-17-jre-headless and maven to run them." >&2
fi
status=0
bash tooling/servers/cassandra-cluster/ci.sh wait # its boot would slow the timing tests below
# Test files run side by side (VVM_TEST_WORKERS, default: one per core, at least 2): most of the
# time is spent waiting for leases, servers and child processes, not computing (2 workers on 2
# cores: 352 s instead of 620, every test green).
workers="${VVM_TEST_WORKERS:-$(node -p 'Math.max(2, require("node:os").availableParallelism())')}"
# Files that bound how fast other processes react (failover, killer and lease deadlines under
# faults): they need a machine that is not saturated. VVM_TEST_PART=main leaves them out,
# VVM_TEST_PART=timing runs only them (.ci/run runs them once its other work is done); the default
# runs everything.
timing=(
	apps/vvm-host/test/clock-faults.integration.test.ts
	apps/vvm-host/test/failover.integration.test.ts
	apps/vvm-host/test/leases-multiprocess-cas.integration.test.ts
	apps/vvm-host/test/leases-multiprocess-dyn.integration.test.ts
	packages/ielections/test/process-killer.test.ts
)
select=(--exclude '**/*.cluster.integration.test.ts')
case "${VVM_TEST_PART:-all}" in
all) ;;
main) for f in "${timing[@]}"; do select+=(--exclude "**/${f##*/}"); done ;; # (unique names)
timing) select+=("${timing[@]}") ;;
*) echo "test: VVM_TEST_PART must be all, main or timing, got '${VVM_TEST_PART}'" >&2; exit 2 ;;
esac
json="${VVM_TEST_JSON:-.test-results/vitest.json}" # where the JSON report goes
pnpm exec vitest run "${select[@]}" --maxWorkers="$workers" --reporter=default --reporter=json --outputFile.json="$json" "$@" || status=$?
node scripts/test-summary.mjs "$json" || status=1
# 3-node cluster suites, alone; VVM_TEST_CLUSTER=later leaves them to the caller (.ci/run runs them
# when the cluster is free of its chaos runs), and so does VVM_TEST_PART=timing.
if [ "${VVM_TEST_CLUSTER:-now}" != later ] && [ "${VVM_TEST_PART:-all}" != timing ]; then
	bash tooling/servers/cassandra-cluster/ci.sh test "$@" || status=1
fi
exit "$status"
