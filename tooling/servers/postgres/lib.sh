#!/usr/bin/env bash
# Shared by tooling/servers/postgres/{start,stop,restart}.sh. Source it after lib/common.sh.
# Expects the caller to have `set -euo pipefail`.

# PG_INSTANCE names the work directory, so a test can run a second server of its own (e.g. one it
# restarts) next to the shared one: PG_INSTANCE=postgres-faults PG_PORT=... start.sh.
PG_INSTANCE="${PG_INSTANCE:-postgres}"
[[ "$PG_INSTANCE" =~ ^postgres[a-z0-9-]*$ ]] || die "PG_INSTANCE must match ^postgres[a-z0-9-]*\$, got '$PG_INSTANCE'"
PG_WORK="$WORK_ROOT/$PG_INSTANCE"
PG_PIDFILE="$PG_WORK/pid"
# The server's own files (data directory, socket, log) live in PG_RUN: normally PG_WORK, but when
# the server's user cannot reach PG_WORK (a checkout under /root, mode 700) start.sh puts them in a
# directory of its own under $TMPDIR and names it in $PG_WORK/runtime.
PG_RUN="$(cat "$PG_WORK/runtime" 2>/dev/null || printf '%s' "$PG_WORK")"
PG_DATA="$PG_RUN/data"
PG_LOGFILE="$PG_RUN/log"
PG_PORT="${PG_PORT:-54329}"
# The role and database the tests use (trust authentication, loopback only).
PG_TEST_USER=vvm
PG_TEST_DB=vvm
# What a live postmaster's command line contains (the PID check of stop/restart).
PG_PATTERN="$PG_DATA"

# pg_set_run DIR: makes DIR the server's directory (PG_RUN) and records it for stop/restart.
pg_set_run() {
  PG_RUN="$1"
  PG_DATA="$PG_RUN/data"
  PG_LOGFILE="$PG_RUN/log"
  PG_PATTERN="$PG_DATA"
  if [[ "$PG_RUN" == "$PG_WORK" ]]; then rm -f "$PG_WORK/runtime"; else printf '%s\n' "$PG_RUN" >"$PG_WORK/runtime"; fi
}

[[ "$PG_PORT" =~ ^[0-9]+$ ]] || die "PG_PORT must be a number, got '$PG_PORT'"

# find_pg_bin: prints the directory of the PostgreSQL server binaries (postgres, initdb, pg_ctl):
# $PG_BIN if set, else the newest Debian /usr/lib/postgresql/<major>/bin. Fails if none.
find_pg_bin() {
  local d
  if [[ -n "${PG_BIN:-}" ]]; then
    [[ -x "$PG_BIN/postgres" && -x "$PG_BIN/initdb" ]] || die "PG_BIN=$PG_BIN has no postgres/initdb"
    printf '%s\n' "$PG_BIN"
    return 0
  fi
  d="$(compgen -G '/usr/lib/postgresql/*/bin/postgres' | sed 's|/postgres$||' | sort -t/ -k5 -n | tail -n1 || true)"
  [[ -n "$d" && -x "$d/initdb" ]] || return 1
  printf '%s\n' "$d"
}

# install_pg: installs Debian's postgresql package with apt-get (root only), without the package's
# own cluster on port 5432 (create_main_cluster = false), so nothing else starts.
install_pg() {
  [[ "$(id -u)" == 0 ]] || die "PostgreSQL is not installed; as root this script installs Debian's postgresql package (or set PG_BIN)"
  command -v apt-get >/dev/null 2>&1 || die "PostgreSQL is not installed and apt-get is not available (set PG_BIN)"
  log "installing Debian's postgresql package with apt-get (log: $PG_WORK/apt.log) ..."
  {
    DEBIAN_FRONTEND=noninteractive apt-get update -q &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql-common &&
      sed -i 's/^#\?[[:space:]]*create_main_cluster[[:space:]]*=.*/create_main_cluster = false/' \
        /etc/postgresql-common/createcluster.conf &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends postgresql
  } >"$PG_WORK/apt.log" 2>&1 || { tail -n 40 "$PG_WORK/apt.log" >&2; die "apt-get install postgresql failed"; }
}

# The server refuses to run as root: as root, everything runs as the `postgres` system user (which
# Debian's package creates), else as the calling user.
if [[ "$(id -u)" == 0 ]]; then
  PG_RUN_USER=postgres
else
  PG_RUN_USER="$(id -un)"
fi

# PG_AS: the command prefix that runs a program as PG_RUN_USER. setpriv execs in place (no fork),
# so `$!` of a background `"${PG_AS[@]}" postgres ...` is the postmaster's own PID.
PG_AS=()
if [[ "$(id -u)" == 0 ]]; then
  PG_AS=(setpriv --reuid="$PG_RUN_USER" --regid="$(id -g "$PG_RUN_USER" 2>/dev/null || echo 0)" --init-groups --)
fi

# as_pg CMD...: runs CMD as PG_RUN_USER.
as_pg() { "${PG_AS[@]}" "$@"; }

# The server's options: loopback only, the socket in the work directory (not /var/run), logs on
# stderr (the log file), connection and lock-wait lines for the fault tests; pg_stat_statements
# loaded, so a benchmark can count statements (`CREATE EXTENSION pg_stat_statements` in a database
# to read them). Takes effect when the server starts (restart.sh reuses the running options).
pg_server_options() {
  printf '%s\n' \
    -c "listen_addresses=127.0.0.1" \
    -c "port=$PG_PORT" \
    -c "unix_socket_directories=$PG_RUN" \
    -c "logging_collector=off" \
    -c "log_line_prefix=%m [%p] %q%u@%d " \
    -c "log_connections=off" \
    -c "log_lock_waits=on" \
    -c "max_connections=200" \
    -c "shared_preload_libraries=pg_stat_statements"
}
