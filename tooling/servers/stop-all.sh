#!/usr/bin/env bash
# Stop Cassandra and DynamoDB Local (each by its PID file); no-op for servers that are not running.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rc=0
bash "$HERE/dynamodb/stop.sh" || rc=1
bash "$HERE/cassandra/stop.sh" || rc=1
exit "$rc"
