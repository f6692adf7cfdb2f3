#!/usr/bin/env bash
# Start Cassandra, DynamoDB Local and PostgreSQL in parallel; fail if any fails (and say which).
# Env: see cassandra/start.sh, dynamodb/start.sh and postgres/start.sh (CASSANDRA_PORT,
# DYNAMODB_PORT, PG_PORT, ...).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
t0="$(date +%s.%N)"

bash "$HERE/cassandra/start.sh" & cas_pid=$!
bash "$HERE/dynamodb/start.sh" & ddb_pid=$!
bash "$HERE/postgres/start.sh" & pg_pid=$!

failed=()
wait "$cas_pid" || failed+=(cassandra)
wait "$ddb_pid" || failed+=(dynamodb)
wait "$pg_pid" || failed+=(postgres)

secs="$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
if (( ${#failed[@]} > 0 )); then
  echo "[start-all] FAILED: ${failed[*]} (after ${secs}s); logs under .servers/<name>/" >&2
  exit 1
fi
echo "[start-all] cassandra, dynamodb and postgres are up (${secs}s)"
