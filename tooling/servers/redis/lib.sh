#!/usr/bin/env bash
# Shared by tooling/servers/redis/{start,stop}.sh. Source it after lib/common.sh.
# Expects the caller to have `set -euo pipefail`.

# REDIS_INSTANCE names the work directory, so a test can run a second server of its own (one it
# kills or restarts) next to the shared one: REDIS_INSTANCE=redis-faults REDIS_PORT=... start.sh.
REDIS_INSTANCE="${REDIS_INSTANCE:-redis}"
[[ "$REDIS_INSTANCE" =~ ^redis[a-z0-9-]*$ ]] || die "REDIS_INSTANCE must match ^redis[a-z0-9-]*\$, got '$REDIS_INSTANCE'"
REDIS_WORK="$WORK_ROOT/$REDIS_INSTANCE"
REDIS_DATA="$REDIS_WORK/data"
REDIS_PIDFILE="$REDIS_WORK/pid"
REDIS_LOGFILE="$REDIS_WORK/log"
REDIS_PORT="${REDIS_PORT:-6390}"
[[ "$REDIS_PORT" =~ ^[0-9]+$ ]] || die "REDIS_PORT must be a number, got '$REDIS_PORT'"
# What a live server's command line contains (the PID check of stop.sh): redis-server rewrites its
# process title to "redis-server 127.0.0.1:<port>".
REDIS_PATTERN="127.0.0.1:$REDIS_PORT"

# find_redis_bin: prints the directory holding redis-server and redis-cli: $REDIS_BIN if set, else
# the one on PATH (Debian's redis-server and redis-tools packages put them in /usr/bin).
find_redis_bin() {
  if [[ -n "${REDIS_BIN:-}" ]]; then
    [[ -x "$REDIS_BIN/redis-server" && -x "$REDIS_BIN/redis-cli" ]] || die "REDIS_BIN=$REDIS_BIN has no redis-server/redis-cli"
    printf '%s\n' "$REDIS_BIN"
    return 0
  fi
  local s c
  s="$(command -v redis-server 2>/dev/null)" || return 1
  c="$(command -v redis-cli 2>/dev/null)" || return 1
  [[ "$(dirname "$s")" == "$(dirname "$c")" ]] || return 1
  dirname "$s"
}

# install_redis: installs Debian's redis-server and redis-tools with apt-get (root only). The
# package's own service is not started here (no systemd in the sandbox; policy-rc.d is honoured).
install_redis() {
  [[ "$(id -u)" == 0 ]] || die "Redis is not installed; as root this script installs Debian's redis-server (or set REDIS_BIN)"
  command -v apt-get >/dev/null 2>&1 || die "Redis is not installed and apt-get is not available (set REDIS_BIN)"
  log "installing Debian's redis-server and redis-tools with apt-get (log: $REDIS_WORK/apt.log) ..."
  {
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends redis-server redis-tools ||
      { DEBIAN_FRONTEND=noninteractive apt-get update -q &&
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends redis-server redis-tools; }
  } >"$REDIS_WORK/apt.log" 2>&1 || { tail -n 40 "$REDIS_WORK/apt.log" >&2; die "apt-get install redis-server failed"; }
}

# redis_server_options: the whole configuration, on the command line (no configuration file, so
# CONFIG REWRITE has nowhere to write): loopback only, the data directory of this instance, every
# write appended and fsynced before its reply (appendfsync always), no RDB snapshots, the log and
# PID files in the work directory, DEBUG from loopback (the tests pause the server with it).
redis_server_options() {
  printf '%s\n' \
    --port "$REDIS_PORT" \
    --bind 127.0.0.1 \
    --protected-mode yes \
    --dir "$REDIS_DATA" \
    --appendonly yes \
    --appendfsync always \
    --save "" \
    --daemonize no \
    --pidfile "$REDIS_WORK/redis.pid" \
    --logfile "$REDIS_LOGFILE" \
    --enable-debug-command local \
    --databases 16
}

# redis_ping: true when the server answers PING with PONG (not LOADING).
redis_ping() {
  [[ "$("$1/redis-cli" -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" == PONG ]]
}
