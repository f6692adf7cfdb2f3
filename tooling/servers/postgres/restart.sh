#!/usr/bin/env bash
# Restart the PostgreSQL started by start.sh the hard way, for fault tests: `pg_ctl restart -m
# immediate` (every backend is killed without a checkpoint, as in a crash; the new postmaster runs
# crash recovery from the WAL), then waits until it accepts connections and records the new PID.
# Env: PG_PORT, PG_START_TIMEOUT, PG_BIN, PG_INSTANCE as start.sh.
set -euo pipefail
LOG_PREFIX=postgres
# shellcheck source=../lib/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/common.sh"
# shellcheck source=./lib.sh
source "$SERVERS_DIR/postgres/lib.sh"
TIMEOUT_S="${PG_START_TIMEOUT:-60}"

pid_matches "$PG_PIDFILE" "$PG_PATTERN" || die "no PostgreSQL started by start.sh is running (pid file $PG_PIDFILE)"
BIN="$(find_pg_bin)" || die "no PostgreSQL server binaries found"
old="$(cat "$PG_PIDFILE")"
t0="$(now)"
# pg_ctl reuses the command line the postmaster recorded in postmaster.opts.
cd "$PG_RUN"
as_pg "$BIN/pg_ctl" restart -D "$PG_DATA" -m immediate -w -t "$TIMEOUT_S" -l "$PG_LOGFILE" >/dev/null ||
  { print_log_tails "$PG_LOGFILE"; die "pg_ctl restart failed"; }
pid="$(head -n1 "$PG_DATA/postmaster.pid")"
[[ "$pid" =~ ^[0-9]+$ ]] || die "no PID in $PG_DATA/postmaster.pid"
printf '%s\n' "$pid" >"$PG_PIDFILE"
log "restarted (immediate): pid $old -> $pid in $(elapsed "$t0")s"
