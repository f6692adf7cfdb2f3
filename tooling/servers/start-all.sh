#!/usr/bin/env bash
# Start Cassandra and DynamoDB Local in parallel; fail if either fails (and say which).
# Env: see cassandra/start.sh and dynamodb/start.sh (CASSANDRA_PORT, DYNAMODB_PORT, ...).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
t0="$(date +%s.%N)"

bash "$HERE/cassandra/start.sh" & cas_pid=$!
bash "$HERE/dynamodb/start.sh" & ddb_pid=$!

failed=()
wait "$cas_pid" || failed+=(cassandra)
wait "$ddb_pid" || failed+=(dynamodb)

secs="$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
if (( ${#failed[@]} > 0 )); then
  echo "[start-all] FAILED: ${failed[*]} (after ${secs}s); logs under .servers/<name>/" >&2
  exit 1
fi
echo "[start-all] cassandra and dynamodb are up (${secs}s)"
