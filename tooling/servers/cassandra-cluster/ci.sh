#!/usr/bin/env bash
# The cluster's part of scripts/test.sh, so that script only needs three calls:
#   ci.sh start           start the cluster in the background and return at once (its output goes
#                         to .test-results/cassandra-cluster.log); nothing if it already runs
#   ci.sh wait            wait until a background start has finished (never fails: `test` reports)
#   ci.sh test [ARGS...]  wait for the start, then run the cluster suites
#                         (*.cluster.integration.test.ts) with CASSANDRA_CLUSTER_TESTS_ENABLED=1,
#                         one file at a time (they kill nodes); ARGS go to vitest
#   ci.sh stop            stop the cluster if `ci.sh start` started it
# Without Java 17 / Maven the cluster cannot start: outside CI the suites are then left out with
# a warning; in CI (CI=true) that fails.
set -euo pipefail
LOG_PREFIX=cassandra-cluster
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

RESULTS="$REPO_ROOT/.test-results"
STARTER_PID="$CLUSTER_WORK/ci-start.pid"
STARTER_RC="$CLUSTER_WORK/ci-start.rc"
OWNED="$CLUSTER_WORK/ci-owned"
START_LOG="$RESULTS/cassandra-cluster.log"

all_running() {
  local n
  for n in "${CLUSTER_NODES[@]}"; do node_running "$n" || return 1; done
}

# starting: true while the background start.sh of `ci.sh start` runs.
starting() {
  local pid
  [[ -f "$STARTER_PID" ]] || return 1
  pid="$(cat "$STARTER_PID")"
  [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid"
}

# wait_started: waits for the background start; true if the cluster is up.
wait_started() {
  while starting; do sleep 0.5; done
  [[ -f "$START_LOG" ]] && cat "$START_LOG"
  if [[ -f "$STARTER_RC" && "$(cat "$STARTER_RC")" != 0 ]]; then return 1; fi
  all_running
}

cmd="${1:-}"
shift || true
case "$cmd" in
  start)
    mkdir -p "$RESULTS" "$CLUSTER_WORK"
    if starting; then log "already starting"; exit 0; fi
    if all_running; then log "already running: it is left running at the end"; exit 0; fi
    rm -f "$STARTER_RC"
    touch "$OWNED"
    (
      rc=0
      bash "$CLUSTER_HERE/start.sh" >"$START_LOG" 2>&1 || rc=$?
      printf '%s\n' "$rc" >"$STARTER_RC"
    ) </dev/null >/dev/null 2>&1 &
    printf '%s\n' "$!" >"$STARTER_PID"
    log "starting in the background (log: $START_LOG)"
    ;;
  wait)
    while starting; do sleep 0.5; done
    ;;
  test)
    cd "$REPO_ROOT"
    if ! wait_started; then
      if [[ "${CI:-}" == true || "${CI:-}" == 1 ]]; then
        die "the cluster did not start (log above); CI requires its suites"
      fi
      log "WARNING: the cluster did not start (log above); its suites are left out"
      exit 0
    fi
    t0="$(now)"
    rc=0
    # ARGS may select other tests only (e.g. --project of another package): then none runs here.
    CASSANDRA_CLUSTER_TESTS_ENABLED=1 \
      CASSANDRA_CLUSTER_CONTACT_POINTS=127.0.0.2:9042,127.0.0.3:9042,127.0.0.4:9042 \
      pnpm exec vitest run --no-file-parallelism --passWithNoTests --reporter=default \
      --reporter=json --outputFile.json="$RESULTS/vitest-cluster.json" \
      cluster.integration.test "$@" || rc=$?
    if grep -q '"numTotalTests":0,' "$RESULTS/vitest-cluster.json" 2>/dev/null; then
      log "the arguments selected none of the cluster suites"
    else
      node scripts/test-summary.mjs "$RESULTS/vitest-cluster.json" || rc=1
    fi
    log "cluster suites: $(elapsed "$t0")s"
    exit "$rc"
    ;;
  stop)
    # A start still running would leave nodes behind: let it finish first.
    while starting; do sleep 0.5; done
    rm -f "$STARTER_PID" "$STARTER_RC"
    if [[ -f "$OWNED" ]]; then
      rm -f "$OWNED"
      bash "$CLUSTER_HERE/stop.sh"
    fi
    ;;
  *)
    die "usage: ci.sh start | wait | test [vitest args] | stop"
    ;;
esac
