#!/usr/bin/env bash
# Stop the Redis started by start.sh, by its PID: SIGTERM (Redis fsyncs the append-only file and
# exits), up to 30 s, then KILL. No-op if not running. The data directory stays until the next
# start.sh. Env: REDIS_PORT and REDIS_INSTANCE as start.sh.
set -euo pipefail
LOG_PREFIX=redis
# shellcheck source=../lib/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/common.sh"
# shellcheck source=./lib.sh
source "$SERVERS_DIR/redis/lib.sh"
stop_pid "$REDIS_PIDFILE" "$REDIS_PATTERN" redis TERM
