#!/usr/bin/env bash
# Shared helpers for tooling/servers/*/start.sh and stop.sh. Source it; do not run it.
# Expects the caller to have `set -euo pipefail`.

# Repo root = two levels above tooling/servers.
SERVERS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO_ROOT="$(cd "$SERVERS_DIR/../.." && pwd)"
WORK_ROOT="$REPO_ROOT/.servers"

# ensure_work_root: create .servers/ with a self-ignoring .gitignore (belt and braces next to
# the root .gitignore entry), so jars/data/logs can never be committed by accident.
ensure_work_root() {
  mkdir -p "$WORK_ROOT"
  [[ -f "$WORK_ROOT/.gitignore" ]] || printf '*\n' >"$WORK_ROOT/.gitignore"
}

log() { printf '[%s] %s\n' "${LOG_PREFIX:-servers}" "$*"; }
die() { printf '[%s] ERROR: %s\n' "${LOG_PREFIX:-servers}" "$*" >&2; exit 1; }

# Seconds since epoch with millisecond precision, and elapsed seconds (1 decimal) since $1.
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# find_java17: prints the path of a Java 17 `java` binary, or fails with a clear message.
# Order: $JAVA17_HOME, the Debian OpenJDK 17 path, update-alternatives entries containing "17".
# Never picks another major version (Cassandra 5.0 breaks on JDK 24+, e.g. Temurin 25).
find_java17() {
  local c candidates=()
  [[ -n "${JAVA17_HOME:-}" ]] && candidates+=("$JAVA17_HOME/bin/java")
  candidates+=("/usr/lib/jvm/java-17-openjdk-amd64/bin/java")
  if command -v update-alternatives >/dev/null 2>&1; then
    while IFS= read -r c; do candidates+=("$c"); done < <(update-alternatives --list java 2>/dev/null | grep -- '-17' || true)
  fi
  for c in "${candidates[@]}"; do
    [[ -x "$c" ]] || continue
    if "$c" -version 2>&1 | head -n1 | grep -Eq 'version "17(\.|")'; then
      printf '%s\n' "$c"
      return 0
    fi
  done
  die "no Java 17 found (tried: ${candidates[*]}). Install openjdk-17-jre-headless or set JAVA17_HOME. Do not use JDK 24+ (e.g. Temurin 25)."
}

# alive PID: true if PID is a live, non-zombie process.
alive() {
  local state
  kill -0 "$1" 2>/dev/null || return 1
  state="$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null || true)"
  [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

# port_open PORT [HOST]: true if HOST:PORT (default 127.0.0.1) accepts a TCP connection.
port_open() {
  timeout 1 bash -c "exec 3<>/dev/tcp/${2:-127.0.0.1}/$1" >/dev/null 2>&1
}

# pid_matches PIDFILE PATTERN: true if PIDFILE names a live process whose command line contains PATTERN.
pid_matches() {
  local pidfile="$1" pattern="$2" pid
  [[ -f "$pidfile" ]] || return 1
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$pattern"
}

# wait_ready PID PORT TIMEOUT_S LOGFILE...: waits until 127.0.0.1:PORT is open. Fails early if PID
# dies. On failure prints the tail of each log file and returns 1.
wait_ready() { wait_ready_at 127.0.0.1 "$@"; }

# wait_ready_at HOST PID PORT TIMEOUT_S LOGFILE...: wait_ready for HOST:PORT.
wait_ready_at() {
  local host="$1" pid="$2" port="$3" timeout_s="$4"; shift 4
  local deadline=$(( $(date +%s) + timeout_s ))
  while :; do
    if port_open "$port" "$host"; then return 0; fi
    if ! alive "$pid"; then
      log "process $pid exited before $host:$port opened"
      break
    fi
    if (( $(date +%s) >= deadline )); then
      log "timed out after ${timeout_s}s waiting for $host:$port"
      break
    fi
    sleep 0.5
  done
  print_log_tails "$@"
  return 1
}

# print_log_tails LOGFILE...: the last 60 lines of each existing file, on stderr.
print_log_tails() {
  local f
  for f in "$@"; do
    [[ -f "$f" ]] || continue
    log "---- last 60 lines of $f ----"
    tail -n 60 "$f" >&2 || true
  done
}

# stop_pid PIDFILE PATTERN NAME [SIGNAL]: SIGNAL (default TERM), wait up to 30 s, then KILL; removes
# PIDFILE. No-op if not running.
stop_pid() {
  local pidfile="$1" pattern="$2" name="$3" signal="${4:-TERM}" pid i
  if ! pid_matches "$pidfile" "$pattern"; then
    log "$name is not running"
    rm -f "$pidfile"
    return 0
  fi
  pid="$(cat "$pidfile")"
  log "stopping $name (pid $pid, SIG$signal)"
  kill -"$signal" "$pid" 2>/dev/null || true
  for (( i = 0; i < 60; i++ )); do
    alive "$pid" || break
    sleep 0.5
  done
  if alive "$pid"; then
    log "$name did not exit within 30s; sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    for (( i = 0; i < 20; i++ )); do alive "$pid" || break; sleep 0.25; done
  fi
  rm -f "$pidfile"
  log "$name stopped"
}
