#!/usr/bin/env bash
# Start the local 3-node Cassandra 5.0 test cluster (127.0.0.2-4, node 1 is the seed) on Java 17,
# in the background, and wait until every node accepts CQL and has seen every other node UP.
#   start.sh        all three; when none is running, with fresh (wiped) data
#   start.sh N...   (re)start nodes N of a running cluster, keeping their data: for tests that
#                   kill a node and bring it back
# Env: CASSANDRA_CLUSTER_HEAP (default 512m), CASSANDRA_CLUSTER_START_TIMEOUT (s, default 180),
#      JAVA17_HOME (optional, a JDK/JRE 17 home).
set -euo pipefail
LOG_PREFIX=cassandra-cluster
# shellcheck source=lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

parse_nodes "$@"
ensure_work_root
take_cluster_lock

to_start=()
for n in "${NODES[@]}"; do
  if node_running "$n"; then
    log "node $n: already running (pid $(node_pid "$n"), $(node_address "$n"))"
  else
    to_start+=("$n")
  fi
done
if ((${#to_start[@]} == 0)); then
  for n in "${NODES[@]}"; do
    port_open "$CQL_PORT" "$(node_address "$n")" || die "node $n runs but $(node_address "$n"):$CQL_PORT is closed; stop.sh $n, then start again"
  done
  exit 0
fi

running=()
for n in "${CLUSTER_NODES[@]}"; do node_running "$n" && running+=("$n"); done
if (($# == 0 && ${#running[@]} == 0)); then
  log "fresh cluster: wiping $CLUSTER_WORK/node*"
  rm -rf "$CLUSTER_WORK"/node*
fi

JAVA="$(find_java17)"
ensure_cassandra_jars
set_cassandra_jvm_flags "$CLUSTER_HEAP"

# Every pair of nodes that will be up and involves a node started now must see each other UP.
# Count the log lines first, so lines from before a restart do not count.
in_list() { local x="$1"; shift; [[ " $* " == *" $x "* ]]; }
declare -A baseline=()
for o in "${CLUSTER_NODES[@]}"; do
  for s in "${CLUSTER_NODES[@]}"; do
    [[ "$o" != "$s" ]] || continue
    in_list "$o" "${to_start[@]}" || in_list "$s" "${to_start[@]}" || continue
    { in_list "$o" "${to_start[@]}" || in_list "$o" "${running[@]}"; } || continue
    { in_list "$s" "${to_start[@]}" || in_list "$s" "${running[@]}"; } || continue
    baseline["$o $s"]="$(up_lines "$o" "$s")"
  done
done

failed() {
  local n
  for n in "${to_start[@]}"; do
    if node_running "$n"; then kill -KILL "$(node_pid "$n")" 2>/dev/null || true; fi
    rm -f "$(node_pidfile "$n")"
  done
  die "$1 (logs: $CLUSTER_WORK/node<N>/logs)"
}

t_start="$(now)"
deadline=$(($(date +%s) + CLUSTER_TIMEOUT_S))
for n in "${to_start[@]}"; do
  launch_node "$n"
  if [[ "${CLUSTER_BOOT:-}" == staggered && "$n" == 1 ]]; then
    wait_ready_at "$(node_address 1)" "$(node_pid 1)" "$CQL_PORT" "$CLUSTER_TIMEOUT_S" "$(node_log 1)" || failed "node 1 did not open CQL"
  fi
done
for n in "${to_start[@]}"; do
  left=$((deadline - $(date +%s)))
  wait_ready_at "$(node_address "$n")" "$(node_pid "$n")" "$CQL_PORT" "$((left > 0 ? left : 1))" \
    "$(node_log "$n")" "$(node_dir "$n")/logs/stdout.log" || failed "node $n did not open CQL"
  log "node $n: CQL open on $(node_address "$n"):$CQL_PORT after $(elapsed "$t_start")s"
done
for pair in "${!baseline[@]}"; do
  read -r o s <<<"$pair"
  wait_seen "$o" "$s" "${baseline[$pair]}" "$deadline" || failed "node $o did not see node $s UP"
done
log "ready: nodes ${to_start[*]} started, every node sees the others UP, in $(elapsed "$t_start")s"
log "contact points: 127.0.0.2:9042,127.0.0.3:9042,127.0.0.4:9042 (datacenter1)"
