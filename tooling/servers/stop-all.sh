#!/usr/bin/env bash
# Stop Cassandra, DynamoDB Local and PostgreSQL in parallel, each by its PID file (so only servers
# these scripts started); no-op for servers that are not running.
#   stop-all.sh                  # all three
#   stop-all.sh postgres         # only these
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
names=("$@")
(( ${#names[@]} > 0 )) || names=(cassandra dynamodb postgres)
pids=()
for name in "${names[@]}"; do
  case "$name" in
    cassandra | dynamodb | postgres) ;;
    *) echo "[stop-all] unknown server '$name' (cassandra, dynamodb, postgres)" >&2; exit 2 ;;
  esac
done
for name in "${names[@]}"; do
  bash "$HERE/$name/stop.sh" & pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
exit "$rc"
