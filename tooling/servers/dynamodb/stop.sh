#!/usr/bin/env bash
# Stop the DynamoDB Local started by start.sh (by PID: TERM, up to 30 s, then KILL). No-op if not running.
set -euo pipefail
LOG_PREFIX=dynamodb
# shellcheck source=../lib/common.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib/common.sh"
stop_pid "$WORK_ROOT/dynamodb/pid" DynamoDBLocal.jar dynamodb
