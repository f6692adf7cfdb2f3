#!/usr/bin/env bash
# Start a Redis server (Debian's redis-server; installed with apt-get when missing and running as
# root) on 127.0.0.1:$REDIS_PORT with a fresh data directory of its own, in the background, with
# the append-only file fsynced before every reply (appendonly yes, appendfsync always).
# Env: REDIS_PORT (default 6390), REDIS_START_TIMEOUT (s, default 30), REDIS_BIN (a directory with
# redis-server and redis-cli; default the ones on PATH), REDIS_INSTANCE (default redis: the work
# directory .servers/$REDIS_INSTANCE; a test runs a second server with it).
set -euo pipefail
LOG_PREFIX=redis
# shellcheck source=../lib/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/common.sh"
# shellcheck source=./lib.sh
source "$SERVERS_DIR/redis/lib.sh"
TIMEOUT_S="${REDIS_START_TIMEOUT:-30}"

ensure_work_root
mkdir -p "$REDIS_WORK"

exec 9>"$REDIS_WORK/.lock"
flock -w 120 9 || die "another redis start.sh holds $REDIS_WORK/.lock"

# --- binaries ---------------------------------------------------------------------------
if ! BIN="$(find_redis_bin)"; then
  install_redis
  BIN="$(find_redis_bin)" || die "no redis-server/redis-cli on PATH after installing"
fi

# --- already running? -------------------------------------------------------------------
if pid_matches "$REDIS_PIDFILE" "$REDIS_PATTERN"; then
  pid="$(cat "$REDIS_PIDFILE")"
  for _ in $(seq 1 "$((TIMEOUT_S * 4))"); do
    redis_ping "$BIN" && { log "already running (pid $pid, 127.0.0.1:$REDIS_PORT)"; exit 0; }
    alive "$pid" || break
    sleep 0.25
  done
  die "redis (pid $pid) is running but does not answer PING on 127.0.0.1:$REDIS_PORT"
fi
rm -f "$REDIS_PIDFILE"
if port_open "$REDIS_PORT"; then
  die "127.0.0.1:$REDIS_PORT is already in use by a process not started by this script (set REDIS_PORT)"
fi
version="$("$BIN/redis-server" --version | sed -n 's/.*\(v=[^ ]*\).*/\1/p')"

# --- fresh data directory ---------------------------------------------------------------
rm -rf "$REDIS_DATA" "$REDIS_LOGFILE" "$REDIS_WORK/redis.pid"
# Redis 7.0 creates appendonlydir without fsyncing the directory above it, so a power cut soon
# after the first start could lose the whole append-only file: create it here and sync it.
mkdir -p "$REDIS_DATA/appendonlydir"
sync "$REDIS_DATA/appendonlydir" "$REDIS_DATA" "$REDIS_WORK" 2>/dev/null || sync

# --- start --------------------------------------------------------------------------------
mapfile -t opts < <(redis_server_options)
t_start="$(now)"
(
  cd "$REDIS_WORK"
  exec setsid "$BIN/redis-server" "${opts[@]}"
) </dev/null >>"$REDIS_WORK/stdout.log" 2>&1 9>&- &
pid=$!
printf '%s\n' "$pid" >"$REDIS_PIDFILE"

deadline=$(( $(date +%s) + TIMEOUT_S ))
until redis_ping "$BIN"; do
  if ! alive "$pid" || (( $(date +%s) >= deadline )); then
    alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
    rm -f "$REDIS_PIDFILE"
    print_log_tails "$REDIS_LOGFILE" "$REDIS_WORK/stdout.log"
    die "redis failed to start (log: $REDIS_LOGFILE)"
  fi
  sleep 0.1
done
log "ready: 127.0.0.1:$REDIS_PORT ($version, appendonly yes, appendfsync always, data $REDIS_DATA), started in $(elapsed "$t_start")s (pid $pid, log $REDIS_LOGFILE)"
