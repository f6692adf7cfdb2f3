#!/usr/bin/env bash
# Stop nodes of the local test cluster by PID (TERM, up to 30 s, then KILL), all at once.
#   stop.sh        all three          stop.sh N...   only nodes N
# A node that is not running is skipped.
set -euo pipefail
LOG_PREFIX=cassandra-cluster
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

parse_nodes "$@"
take_cluster_lock
pids=()
for n in "${NODES[@]}"; do
  stop_pid "$(node_pidfile "$n")" "$(node_pattern "$n")" "node $n" 9>&- &
  pids+=("$!")
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit "$rc"
