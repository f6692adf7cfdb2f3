#!/usr/bin/env bash
# Stop the Cassandra started by start.sh (by PID: TERM, up to 30 s, then KILL). No-op if not running.
set -euo pipefail
LOG_PREFIX=cassandra
# shellcheck source=../lib/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/common.sh"
stop_pid "$WORK_ROOT/cassandra/pid" org.apache.cassandra.service.CassandraDaemon cassandra
