#!/usr/bin/env bash
# Stop Cassandra, DynamoDB Local and PostgreSQL in parallel (each by its PID file); no-op for
# servers that are not running.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$HERE/dynamodb/stop.sh" & ddb_pid=$!
bash "$HERE/cassandra/stop.sh" & cas_pid=$!
bash "$HERE/postgres/stop.sh" & pg_pid=$!
rc=0
wait "$ddb_pid" || rc=1
wait "$cas_pid" || rc=1
wait "$pg_pid" || rc=1
exit "$rc"
