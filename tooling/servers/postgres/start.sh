#!/usr/bin/env bash
# Start a PostgreSQL server (Debian's postgresql package; installed with apt-get when missing and
# running as root) on 127.0.0.1:$PG_PORT, with a fresh data directory, in the background.
# The tests connect as role `vvm` to database `vvm` with trust authentication (loopback only).
# Env: PG_PORT (default 54329), PG_START_TIMEOUT (s, default 60), PG_BIN (a directory holding
# postgres, initdb and pg_ctl; default the newest /usr/lib/postgresql/<major>/bin), PG_INSTANCE
# (default postgres: the work directory .servers/$PG_INSTANCE; tests run a second server with it).
# As root, the server runs as the `postgres` system user (it refuses to run as root).
set -euo pipefail
LOG_PREFIX=postgres
# shellcheck source=../lib/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/common.sh"
# shellcheck source=./lib.sh
source "$SERVERS_DIR/postgres/lib.sh"
TIMEOUT_S="${PG_START_TIMEOUT:-60}"

ensure_work_root
mkdir -p "$PG_WORK"

exec 9>"$PG_WORK/.lock"
flock -w 300 9 || die "another postgres start.sh holds $PG_WORK/.lock"

# --- already running? -------------------------------------------------------------------
if pid_matches "$PG_PIDFILE" "$PG_PATTERN"; then
  pid="$(cat "$PG_PIDFILE")"
  if port_open "$PG_PORT"; then
    log "already running (pid $pid, 127.0.0.1:$PG_PORT)"
    exit 0
  fi
  log "pid $pid is alive but 127.0.0.1:$PG_PORT is not open yet; waiting for it"
  wait_ready "$pid" "$PG_PORT" "$TIMEOUT_S" "$PG_LOGFILE" || die "postgres (pid $pid) did not become ready"
  log "ready (pid $pid)"
  exit 0
fi
rm -f "$PG_PIDFILE"
if port_open "$PG_PORT"; then
  die "127.0.0.1:$PG_PORT is already in use by a process not started by this script (set PG_PORT)"
fi

# --- binaries ---------------------------------------------------------------------------
if ! BIN="$(find_pg_bin)"; then
  install_pg
  BIN="$(find_pg_bin)" || die "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin after installing"
fi
if [[ "$(id -u)" == 0 ]]; then
  id "$PG_RUN_USER" >/dev/null 2>&1 || die "running as root needs the '$PG_RUN_USER' system user (Debian's postgresql package creates it)"
fi
version="$("$BIN/postgres" --version)"

# --- fresh data directory ---------------------------------------------------------------
t_init="$(now)"
# A directory of /tmp from an earlier start (see PG_RUN in lib.sh) goes with its data.
[[ "$PG_RUN" != "$PG_WORK" && "$PG_RUN" == "${TMPDIR:-/tmp}"/vvm-* ]] && rm -rf "$PG_RUN"
rm -rf "$PG_WORK/data" "$PG_WORK/log"
# The server's user owns the directory of its socket, data and log.
if [[ "$(id -u)" == 0 ]]; then
  chown "$PG_RUN_USER:" "$PG_WORK"
  if as_pg test -w "$PG_WORK"; then
    pg_set_run "$PG_WORK"
  else
    pg_set_run "$(mktemp -d "${TMPDIR:-/tmp}/vvm-$PG_INSTANCE.XXXXXX")"
    chown "$PG_RUN_USER:" "$PG_RUN"
    log "user $PG_RUN_USER cannot reach $PG_WORK: server files in $PG_RUN (named in $PG_WORK/runtime)"
  fi
else
  pg_set_run "$PG_WORK"
fi
as_pg "$BIN/initdb" -D "$PG_DATA" -U "$PG_TEST_USER" --auth=trust --encoding=UTF8 --locale=C \
  --no-instructions >"$PG_WORK/initdb.log" 2>&1 || { tail -n 40 "$PG_WORK/initdb.log" >&2; die "initdb failed (log: $PG_WORK/initdb.log)"; }
log "initdb: $PG_DATA in $(elapsed "$t_init")s ($version, superuser $PG_TEST_USER, trust auth)"

# --- start --------------------------------------------------------------------------------
mapfile -t opts < <(pg_server_options)
# restart.sh's pg_ctl appends to the log as the server's user.
: >"$PG_LOGFILE"
[[ "$(id -u)" == 0 ]] && chown "$PG_RUN_USER:" "$PG_LOGFILE"
[[ "$PG_RUN" == "$PG_WORK" ]] || ln -sfn "$PG_LOGFILE" "$PG_WORK/log"
t_start="$(now)"
(
  cd "$PG_RUN"
  exec setsid "${PG_AS[@]}" "$BIN/postgres" -D "$PG_DATA" "${opts[@]}"
) </dev/null >>"$PG_LOGFILE" 2>&1 9>&- &
pid=$!
printf '%s\n' "$pid" >"$PG_PIDFILE"

if ! wait_ready "$pid" "$PG_PORT" "$TIMEOUT_S" "$PG_LOGFILE"; then
  alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$PG_PIDFILE"
  die "postgres failed to start (log: $PG_LOGFILE)"
fi
# The port opens before the server accepts sessions (startup, recovery): wait for that too.
for _ in $(seq 1 "$((TIMEOUT_S * 2))"); do
  "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -U "$PG_TEST_USER" -d postgres && break
  sleep 0.5
done
"$BIN/psql" -q -h 127.0.0.1 -p "$PG_PORT" -U "$PG_TEST_USER" -d postgres -v ON_ERROR_STOP=1 \
  -c "CREATE DATABASE $PG_TEST_DB" >/dev/null || { print_log_tails "$PG_LOGFILE"; die "CREATE DATABASE $PG_TEST_DB failed"; }
log "ready: 127.0.0.1:$PG_PORT, user $PG_TEST_USER, database $PG_TEST_DB, started in $(elapsed "$t_start")s (pid $pid, log $PG_LOGFILE)"
