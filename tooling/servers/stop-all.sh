#!/usr/bin/env bash
# Stop Cassandra, DynamoDB Local, PostgreSQL and Redis in parallel, each by its PID file (so only servers
# these scripts started); no-op for servers that are not running.
#   stop-all.sh                  # all four
#   stop-all.sh postgres         # only these
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
names=("$@")
(( ${#names[@]} > 0 )) || names=(cassandra dynamodb postgres redis)
pids=()
for name in "${names[@]}"; do
  case "$name" in
    cassandra | dynamodb | postgres | redis) ;;
    *) echo "[stop-all] unknown server '$name' (cassandra, dynamodb, postgres, redis)" >&2; exit 2 ;;
  esac
done
for name in "${names[@]}"; do
  bash "$HERE/$name/stop.sh" & pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
exit "$rc"
