#!/usr/bin/env bash
# The local 3-node Cassandra cluster: node table and helpers for start.sh, stop.sh and kill.sh in
# this directory. Source it; do not run it. Node N (1..3) listens on 127.0.0.(N+1), ports 9042
# (CQL) and 7000 (internode); node 1 is the seed. Expects `set -euo pipefail` in the caller.
# shellcheck source=../lib/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/common.sh"
# shellcheck source=../lib/cassandra.sh
source "$SERVERS_DIR/lib/cassandra.sh"

CLUSTER_HERE="$SERVERS_DIR/cassandra-cluster"
CLUSTER_WORK="$WORK_ROOT/cassandra-cluster"
CLUSTER_NODES=(1 2 3)
# Murmur3 tokens 2^64/3 apart: with num_tokens 1 each node owns exactly a third of the ring.
CLUSTER_TOKENS=(-9223372036854775808 -3074457345618258603 3074457345618258602)
CLUSTER_HEAP="${CASSANDRA_CLUSTER_HEAP:-512m}"
CLUSTER_TIMEOUT_S="${CASSANDRA_CLUSTER_START_TIMEOUT:-180}"
CQL_PORT=9042
STORAGE_PORT=7000

[[ "$CLUSTER_HEAP" =~ ^[0-9]+[mg]$ ]] || die "CASSANDRA_CLUSTER_HEAP must look like 512m or 1g, got '$CLUSTER_HEAP'"
[[ "$CLUSTER_TIMEOUT_S" =~ ^[0-9]+$ ]] || die "CASSANDRA_CLUSTER_START_TIMEOUT must be a number of seconds, got '$CLUSTER_TIMEOUT_S'"

node_address() { printf '127.0.0.%d' "$(($1 + 1))"; }
node_dir() { printf '%s/node%d' "$CLUSTER_WORK" "$1"; }
node_pidfile() { printf '%s/pid' "$(node_dir "$1")"; }
node_log() { printf '%s/logs/system.log' "$(node_dir "$1")"; }
# What identifies node N's JVM on its command line: its own config file, in this checkout.
node_pattern() { printf -- '-Dcassandra.config=file://%s/cassandra.yaml' "$(node_dir "$1")"; }
node_running() { pid_matches "$(node_pidfile "$1")" "$(node_pattern "$1")"; }
node_pid() { cat "$(node_pidfile "$1")"; }

# parse_nodes ARG...: sets NODES to the node numbers given (default: all), refusing anything else.
parse_nodes() {
  NODES=()
  local a
  if (($# == 0)); then NODES=("${CLUSTER_NODES[@]}"); return 0; fi
  for a in "$@"; do
    [[ "$a" =~ ^[1-3]$ ]] || die "nodes are 1, 2 or 3 (127.0.0.2, .3, .4), got '$a'"
    NODES+=("$a")
  done
}

# take_cluster_lock: one start/stop at a time (fd 9; closed for the JVMs so they do not hold it).
take_cluster_lock() {
  mkdir -p "$CLUSTER_WORK"
  exec 9>"$CLUSTER_WORK/.lock"
  flock -w 600 9 || die "another cassandra-cluster script holds $CLUSTER_WORK/.lock"
}

# up_lines OBSERVER SUBJECT: how often OBSERVER's log says it saw SUBJECT come up (gossip).
# Cassandra logs "InetAddress /a:7000 is now UP" whenever it marks a node alive, and "Node
# /a:7000 has restarted, now UP" when a known node comes back with a new generation.
up_lines() {
  local log subject
  log="$(node_log "$1")"
  subject="$(node_address "$2"):$STORAGE_PORT"
  [[ -f "$log" ]] || { echo 0; return 0; }
  grep -cF -e "/$subject is now UP" -e "/$subject has restarted, now UP" "$log" || true
}

# wait_ports_closed N SECONDS: waits until nothing listens on node N's ports. A killed JVM shows as
# a zombie (its main thread has exited) a moment before its other threads have closed its sockets.
wait_ports_closed() {
  local addr deadline
  addr="$(node_address "$1")"
  deadline=$(($(date +%s) + $2))
  while port_open "$CQL_PORT" "$addr" || port_open "$STORAGE_PORT" "$addr"; do
    (($(date +%s) < deadline)) || return 1
    sleep 0.1
  done
}

# launch_node N: writes node N's config and starts its JVM in the background (keeping its data),
# recording the PID. Does not wait.
launch_node() {
  local n="$1" dir addr pid
  dir="$(node_dir "$n")"
  addr="$(node_address "$n")"
  wait_ports_closed "$n" 10 ||
    die "node $n: $addr:$CQL_PORT or $addr:$STORAGE_PORT is in use by a process this checkout did not start"
  mkdir -p "$dir/data" "$dir/logs" "$dir/triggers"
  sed -e "s/@ADDRESS@/$addr/g" -e "s/@SEED@/$(node_address 1)/g" \
    -e "s/@INITIAL_TOKEN@/${CLUSTER_TOKENS[$((n - 1))]}/g" \
    "$CLUSTER_HERE/cassandra.yaml.template" >"$dir/cassandra.yaml"
  # The ring delay bounds the start-up "shadow round", in which a node asks the seed for the ring
  # (retrying every second for up to twice the delay). The seed asks nobody, so 100 ms spares it
  # the wait; the other nodes keep the default 30 s, so they may start before the seed is up.
  local ring_delay=()
  if ((n == 1)) || [[ "${CLUSTER_BOOT:-}" == staggered ]]; then ring_delay=(-Dcassandra.ring_delay_ms=100); fi
  local opts=(
    "${CASSANDRA_JVM_FLAGS[@]}"
    # C1 only: three JVMs booting on two cores spend much of their start compiling with C2.
    # Measured on this machine (load 17-23): all three up in 17-32 s, against 35-42 s with C2.
    -XX:TieredStopAtLevel=1
    "-Dcassandra.config=file://$dir/cassandra.yaml"
    "-Dcassandra.storagedir=$dir/data"
    "-Dcassandra.logdir=$dir/logs"
    "-Dlogback.configurationFile=$SERVERS_DIR/cassandra/logback.xml"
    "-Dcassandra.triggers_dir=$dir/triggers"
    -Dcassandra-foreground=yes
    # Fast boot, safe here: tokens are fixed and nothing streams (auto_bootstrap: false), and
    # start.sh itself waits until every node has seen every other one UP.
    -Dcassandra.skip_wait_for_gossip_to_settle=0
    "${ring_delay[@]}"
    -Dcassandra.superuser_setup_delay_ms=0
    # Not -Dcassandra.unsafesystem=true (the single node's fast-boot flag): with it, schema
    # changes skip the commit log, so a node killed with -9 comes back without the tables
    # created since its start and drops their mutations from its commit log on replay
    # ("Skipped N mutations from unknown (probably removed) CF"): acknowledged writes lost.
  )
  # setsid: own session, so Ctrl-C / SIGHUP of the caller does not reach the node. Not a
  # process-group leader here, so setsid execs in place and $! is the JVM's pid.
  setsid "$JAVA" "${opts[@]}" -cp "$CASSANDRA_LIB/*" "$CASSANDRA_MAIN_CLASS" \
    </dev/null >>"$dir/logs/stdout.log" 2>&1 9>&- &
  pid=$!
  printf '%s\n' "$pid" >"$(node_pidfile "$n")"
  log "node $n: starting on $addr (pid $pid, heap $CLUSTER_HEAP, token ${CLUSTER_TOKENS[$((n - 1))]})"
}

# wait_seen OBSERVER SUBJECT BASELINE DEADLINE: waits until OBSERVER logs SUBJECT as UP more than
# BASELINE times. Fails early if either dies; fails at DEADLINE (epoch seconds).
wait_seen() {
  local observer="$1" subject="$2" baseline="$3" deadline="$4"
  while (($(up_lines "$observer" "$subject") <= baseline)); do
    node_running "$observer" || { log "node $observer died"; print_log_tails "$(node_log "$observer")"; return 1; }
    node_running "$subject" || { log "node $subject died"; print_log_tails "$(node_log "$subject")"; return 1; }
    if (($(date +%s) >= deadline)); then
      log "timed out: node $observer has not seen node $subject UP"
      print_log_tails "$(node_log "$observer")"
      return 1
    fi
    sleep 0.2
  done
}
