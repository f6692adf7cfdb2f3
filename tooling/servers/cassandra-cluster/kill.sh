#!/usr/bin/env bash
# SIGKILL nodes of the local test cluster by PID (a crash: no drain, no goodbye to the others),
# and wait until they are gone. Bring them back with start.sh N; their data is kept.
#   kill.sh N...
set -euo pipefail
LOG_PREFIX=cassandra-cluster
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

(($# > 0)) || die "usage: kill.sh N... (nodes 1, 2, 3)"
parse_nodes "$@"
for n in "${NODES[@]}"; do
  if ! node_running "$n"; then
    log "node $n is not running"
    continue
  fi
  pid="$(node_pid "$n")"
  kill -KILL "$pid"
  for ((i = 0; i < 40; i++)); do alive "$pid" || break; sleep 0.05; done
  alive "$pid" && die "node $n (pid $pid) survived SIGKILL for 2 s"
  wait_ports_closed "$n" 10 || die "node $n (pid $pid) still holds its ports 10 s after SIGKILL"
  rm -f "$(node_pidfile "$n")"
  log "node $n killed (pid $pid)"
done
