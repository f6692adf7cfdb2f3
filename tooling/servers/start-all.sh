#!/usr/bin/env bash
# Start Cassandra, DynamoDB Local, PostgreSQL and Redis in parallel; fail if any fails (and say which).
#   start-all.sh                       # all four
#   start-all.sh postgres dynamodb     # only these (e.g. the ones whose port is not open yet)
# Env: see cassandra/start.sh, dynamodb/start.sh, postgres/start.sh and redis/start.sh
# (CASSANDRA_PORT, DYNAMODB_PORT, PG_PORT, REDIS_PORT, ...).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
t0="$(date +%s.%N)"
names=("$@")
(( ${#names[@]} > 0 )) || names=(cassandra dynamodb postgres redis)

pids=()
for name in "${names[@]}"; do
  case "$name" in
    cassandra | dynamodb | postgres | redis) ;;
    *) echo "[start-all] unknown server '$name' (cassandra, dynamodb, postgres, redis)" >&2; exit 2 ;;
  esac
done
for name in "${names[@]}"; do
  bash "$HERE/$name/start.sh" & pids+=($!)
done

failed=()
for i in "${!names[@]}"; do
  wait "${pids[$i]}" || failed+=("${names[$i]}")
done

secs="$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')"
if (( ${#failed[@]} > 0 )); then
  echo "[start-all] FAILED: ${failed[*]} (after ${secs}s); logs under .servers/<name>/" >&2
  exit 1
fi
echo "[start-all] ${names[*]} up (${secs}s)"
