#!/usr/bin/env bash
# Stop the PostgreSQL started by start.sh, by its PID: SIGINT (PostgreSQL's "fast" shutdown: open
# sessions are disconnected, their transactions rolled back), up to 30 s, then KILL. No-op if not
# running. The data directory stays until the next start.sh. Env: PG_INSTANCE as start.sh.
set -euo pipefail
LOG_PREFIX=postgres
# shellcheck source=../lib/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/common.sh"
# shellcheck source=./lib.sh
source "$SERVERS_DIR/postgres/lib.sh"
stop_pid "$PG_PIDFILE" "$PG_PATTERN" postgres INT
