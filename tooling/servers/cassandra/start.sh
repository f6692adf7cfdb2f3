#!/usr/bin/env bash
# Start a real single-node Apache Cassandra 5.0 (jars from Maven Central) on Java 17,
# bound to 127.0.0.1, in the background. Data is wiped on every (re)start.
# Env: CASSANDRA_PORT (CQL port, default 9042), CASSANDRA_START_TIMEOUT (s, default 180),
#      JAVA17_HOME (optional, a JDK/JRE 17 home).
set -euo pipefail
LOG_PREFIX=cassandra
# shellcheck source=../lib/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/common.sh"
# shellcheck source=../lib/cassandra.sh
source "$SERVERS_DIR/lib/cassandra.sh"

HERE="$SERVERS_DIR/cassandra"
WORK="$WORK_ROOT/cassandra"
DATA="$WORK/data"
LOGS="$WORK/logs"
PIDFILE="$WORK/pid"
PORT="${CASSANDRA_PORT:-9042}"
TIMEOUT_S="${CASSANDRA_START_TIMEOUT:-180}"
MAIN_CLASS="$CASSANDRA_MAIN_CLASS"

[[ "$PORT" =~ ^[0-9]+$ ]] || die "CASSANDRA_PORT must be a number, got '$PORT'"
ensure_work_root
mkdir -p "$WORK"

# One start.sh at a time (fd 9 is closed for the JVM below so it does not hold the lock).
exec 9>"$WORK/.lock"
flock -w 300 9 || die "another cassandra start.sh holds $WORK/.lock"

# --- already running? -------------------------------------------------------------------
if pid_matches "$PIDFILE" "$MAIN_CLASS"; then
  pid="$(cat "$PIDFILE")"
  if port_open "$PORT"; then
    log "already running (pid $pid, 127.0.0.1:$PORT)"
    exit 0
  fi
  log "pid $pid is alive but 127.0.0.1:$PORT is not open yet; waiting for it"
  t0="$(now)"
  wait_ready "$pid" "$PORT" "$TIMEOUT_S" "$LOGS/system.log" "$LOGS/stdout.log" || die "cassandra (pid $pid) did not become ready"
  log "ready after waiting $(elapsed "$t0")s (pid $pid)"
  exit 0
fi
rm -f "$PIDFILE"
if port_open "$PORT"; then
  die "127.0.0.1:$PORT is already in use by a process not started by this script (set CASSANDRA_PORT)"
fi

JAVA="$(find_java17)"

# --- jars (idempotent; shared with the cluster) ------------------------------------------
ensure_cassandra_jars

# --- fresh data + logs --------------------------------------------------------------------
rm -rf "$DATA" "$LOGS"
mkdir -p "$DATA" "$LOGS" "$WORK/triggers"

set_cassandra_jvm_flags 1g
JVM_OPTS=(
  "${CASSANDRA_JVM_FLAGS[@]}"
  # config, directories, logging
  "-Dcassandra.config=file://$HERE/cassandra.yaml"
  "-Dcassandra.storagedir=$DATA"
  "-Dcassandra.logdir=$LOGS"
  "-Dlogback.configurationFile=$HERE/logback.xml"
  "-Dcassandra.triggers_dir=$WORK/triggers"
  -Dcassandra-foreground=yes
  "-Dcassandra.native_transport_port=$PORT"
  # fast single-node boot
  -Dcassandra.skip_wait_for_gossip_to_settle=0
  -Dcassandra.ring_delay_ms=100
  -Dcassandra.initial_token=0
  -Dcassandra.load_ring_state=false
  -Dcassandra.superuser_setup_delay_ms=0
  -Dcassandra.unsafesystem=true
)

log "starting on $JAVA (127.0.0.1:$PORT, heap 1g, data $DATA)"
t_start="$(now)"
# setsid: own session, so Ctrl-C / SIGHUP of the caller does not reach the server.
# Not a process-group leader here, so setsid execs in place and $! is the JVM's pid.
setsid "$JAVA" "${JVM_OPTS[@]}" -cp "$CASSANDRA_LIB/*" "$MAIN_CLASS" \
  </dev/null >"$LOGS/stdout.log" 2>&1 9>&- &
pid=$!
printf '%s\n' "$pid" >"$PIDFILE"

if ! wait_ready "$pid" "$PORT" "$TIMEOUT_S" "$LOGS/system.log" "$LOGS/stdout.log"; then
  alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$PIDFILE"
  die "cassandra failed to start (logs: $LOGS)"
fi
log "ready: 127.0.0.1:$PORT accepts CQL connections, started in $(elapsed "$t_start")s (pid $pid, logs $LOGS)"
