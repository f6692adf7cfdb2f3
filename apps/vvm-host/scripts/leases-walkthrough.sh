#!/usr/bin/env bash
# The README walkthrough of --placement leases: three hosts on DynamoDB Local, 12 partitions.
# Creates a record in a partition of host 2, kills host 2 with SIGKILL, then creates a record in
# each of its partitions through host 1 (following 421 to the named holder, retrying 503) until
# it succeeds, and reads the record created before the kill from its new holder.
#
#   bash apps/vvm-host/scripts/leases-walkthrough.sh      # from the repository root, after a build
#
# Environment: DYNAMODB_ENDPOINT (default http://127.0.0.1:8000), PORT1 (default 8081; hosts use
# PORT1..PORT1+2), TABLE (default a new table per run, deleted at the end). Needs curl and jq.
# The hosts it starts it stops by their PIDs (SIGTERM, on any exit of the script).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
ENDPOINT="${DYNAMODB_ENDPOINT:-http://127.0.0.1:8000}"
PORT1="${PORT1:-8081}"
OWN_TABLE=0
if [[ -z "${TABLE:-}" ]]; then
	TABLE="vvm_walkthrough_$(date +%s)"
	OWN_TABLE=1
fi
LOGS="$(mktemp -d)"
CLI="$ROOT/apps/vvm-host/dist/cli.mjs"
[[ -f "$CLI" ]] || { echo "no $CLI: run 'pnpm turbo run build' first" >&2; exit 2; }
[[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 22 ]] ||
	{ echo "needs Node >= 22 on PATH (. scripts/bootstrap.sh)" >&2; exit 2; }
for tool in curl jq; do
	command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 2; }
done

STORE=(--storage dyn --dyn-endpoint "$ENDPOINT" --dyn-table "$TABLE")
LEASES=(--placement leases --partitions 12 --lease-interval-ms 2000 --lease-max-clock-skew-ms 100)
API="api/v2/apps/vvm/demo/workspaces"
PIDS=()

cleanup() {
	for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
	if [[ "$OWN_TABLE" == 1 ]]; then
		(cd "$ROOT/apps/vvm-host" && node -e '
			const { DynamoDBClient, DeleteTableCommand } = require("@aws-sdk/client-dynamodb");
			const c = new DynamoDBClient({ endpoint: process.argv[1], region: "us-east-1",
				credentials: { accessKeyId: "local", secretAccessKey: "local" } });
			c.send(new DeleteTableCommand({ TableName: process.argv[2] })).catch(() => {}).finally(() => c.destroy());
		' "$ENDPOINT" "$TABLE") || true
	fi
	rm -rf "$LOGS"
}
trap cleanup EXIT

now_ms() { date +%s%3N; }

# start_host N: host N on port PORT1+N-1, its log in $LOGS/hN.log.
start_host() {
	node "$CLI" "${STORE[@]}" "${LEASES[@]}" --http-port $((PORT1 + $1 - 1)) >"$LOGS/h$1.log" 2>&1 &
	PIDS+=($!)
}

# ready N: waits until host N is in the lease cluster.
ready() {
	local port=$((PORT1 + $1 - 1))
	for _ in $(seq 1 100); do
		[[ "$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$port/readyz")" == 200 ]] && return
		sleep 0.1
	done
	echo "host $1 did not start; its log:" >&2
	cat "$LOGS/h$1.log" >&2
	exit 1
}

by_holder() {
	curl -s "127.0.0.1:$PORT1/leases" |
		jq -c '[.table.leases[] | {p: .group, h: .holder.address}] | group_by(.h) | map({(.[0].h): map(.p)}) | add'
}

# create WSID PORT: POST a Customer through PORT, following 421 and retrying 503 and refused
# connections for up to 10 s; prints "<status> <port> <body>" of the final answer.
create() {
	local wsid=$1 port=$2 deadline=$(($(now_ms) + 10000)) reply status body
	while (($(now_ms) < deadline)); do
		reply="$(curl -s --max-time 1 -w '\n%{http_code}' -X POST \
			"127.0.0.1:$port/$API/$wsid/docs/app1pkg.Customer" -d "{\"name\":\"ws$wsid\"}" || true)"
		status="${reply##*$'\n'}"
		body="${reply%$'\n'*}"
		case "$status" in
		201)
			echo "$status $port $body"
			return
			;;
		421) port="$(jq -r '.holder | split(":")[1]' <<<"$body")" ;;
		*)
			port=$PORT1
			sleep 0.05
			;;
		esac
	done
	echo "timeout $port $body"
}

echo "# DynamoDB Local $ENDPOINT, table $TABLE; hosts 127.0.0.1:$PORT1..$((PORT1 + 2))"
start_host 1 && ready 1 # alone first: it creates the table
start_host 2 && start_host 3 && ready 2 && ready 3
H2=${PIDS[1]}
for _ in $(seq 1 100); do # until the three hosts serve 4 partitions each
	counts="$(for i in 0 1 2; do curl -s "127.0.0.1:$((PORT1 + i))/leases" | jq '.served | length'; done | tr '\n' ' ')"
	[[ "$counts" == "4 4 4 " ]] && break
	sleep 0.2
done

P2=$((PORT1 + 1))
echo "\$ curl -s 127.0.0.1:$PORT1/leases | jq -c <partitions by holder>"
by_holder
MOVED=($(curl -s "127.0.0.1:$P2/leases" | jq -r '.served[]'))
WS=$((1200 + MOVED[0])) # partition = wsid mod 12
echo "\$ curl -s -X POST 127.0.0.1:$PORT1/$API/$WS/docs/app1pkg.Customer -d '{\"name\":\"Ada\"}'   # partition $((WS % 12))"
curl -s -X POST "127.0.0.1:$PORT1/$API/$WS/docs/app1pkg.Customer" -d '{"name":"Ada"}'
echo
echo "\$ curl -s -X POST 127.0.0.1:$P2/$API/$WS/docs/app1pkg.Customer -d '{\"name\":\"Ada\"}'"
CREATED="$(curl -s -X POST "127.0.0.1:$P2/$API/$WS/docs/app1pkg.Customer" -d '{"name":"Ada"}')"
echo "$CREATED"
ID="$(jq -r '.NewIDs["1"]' <<<"$CREATED")"

echo "\$ kill -9 <host 2: 127.0.0.1:$P2, partitions ${MOVED[*]}>"
KILLED=$(now_ms)
{ kill -9 "$H2" && wait "$H2"; } 2>/dev/null || true
CLIENTS=()
for p in "${MOVED[@]}"; do # one client per partition, at once
	(
		read -r status port body <<<"$(create $((1200 + p)) "$PORT1")"
		echo "partition $p (wsid $((1200 + p))): $status from 127.0.0.1:$port $(($(now_ms) - KILLED)) ms after the kill $body" >"$LOGS/p$p"
	) &
	CLIENTS+=($!)
done
wait "${CLIENTS[@]}"
for p in "${MOVED[@]}"; do cat "$LOGS/p$p"; done
HOLDER="$(curl -s "127.0.0.1:$PORT1/leases" | jq -r ".table.leases[] | select(.group == ${MOVED[0]}) | .holder.address")"
echo "\$ curl -s 127.0.0.1:${HOLDER#*:}/$API/$WS/docs/app1pkg.Customer/$ID   # created before the kill"
curl -s "127.0.0.1:${HOLDER#*:}/$API/$WS/docs/app1pkg.Customer/$ID"
echo
echo "\$ curl -s 127.0.0.1:$PORT1/leases | jq -c <partitions by holder>"
by_holder
echo "\$ kill -TERM <host 1> <host 3>"
kill -TERM "${PIDS[0]}" "${PIDS[2]}"
c1=0 c3=0
wait "${PIDS[0]}" || c1=$?
wait "${PIDS[2]}" || c3=$?
echo "host 1 exited with code $c1, host 3 with code $c3"
PIDS=()
