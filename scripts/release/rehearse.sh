#!/usr/bin/env bash
# The release rehearsal: the documented release flow against a local npm registry, then the
# packages installed and used the way a new user would, outside the repository.
#
#   1. verdaccio (a root devDependency) on 127.0.0.1, a free port, storage in a temp dir; started
#      and stopped by its PID;
#   2. in a copy of the checkout under the temp dir (the repository itself is never written):
#      `changeset version --snapshot rehearsal` (every public package becomes
#      1.0.0-rehearsal-<datetime>), build, `changeset publish --tag rehearsal --no-git-tag` to it;
#   3. every published tarball: no `workspace:`/`catalog:` left, `publint --strict`,
#      `attw --profile esm-only` (scripts/release/check-tarballs.mjs);
#   4. in fresh directories under $TMPDIR (outside the repo): `npm install @vvm/ielections
#      @vvm/ttlstorage-level`, and separately `@vvm/isequencer @vvm/seqstorage`; each imported as
#      ESM and with require() (Node 22's require(esm));
#   5. every example, packed by pnpm (so its ranges are the published ones), installed from the
#      registry, type-checked with tsc --strict, and run as TypeScript and as the JavaScript tsc
#      emits, on each Node line in VVM_REHEARSAL_NODES (default: the node on PATH); for
#      host-command-fetch, a vvm-host (private, so from this repository's build) runs on a level
#      database in the temp dir, started before and stopped after, by its PID;
#   6. the lowest and the newest version each published client range allows (cassandra-driver,
#      @aws-sdk/client-dynamodb, pg, lru-cache, vitest; classic-level for the level driver), each
#      type-checked and run through the published conformance and elections suites.
#
# Needs a bootstrapped checkout (pnpm and node on PATH) and the real servers: Cassandra
# (CASSANDRA_CONTACT_POINTS, default 127.0.0.1:9042), DynamoDB Local (DYNAMODB_ENDPOINT, default
# http://127.0.0.1:8000), PostgreSQL (PGHOST/PGPORT/PGUSER/PGDATABASE, default 127.0.0.1:54329,
# vvm/vvm) and Redis (REDIS_URL, default redis://127.0.0.1:6390). KEEP_REHEARSAL=1 keeps the temp
# directory for inspection. VVM_REHEARSAL_PREBUILT=1 (set by .ci/run after its build step)
# publishes the checkout's build instead of building again.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/scripts/release"
cd "$ROOT"
export DYNAMODB_ENDPOINT="${DYNAMODB_ENDPOINT:-http://127.0.0.1:8000}"
export CASSANDRA_CONTACT_POINTS="${CASSANDRA_CONTACT_POINTS:-127.0.0.1:9042}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6390}"
TAG=rehearsal
WORK="$(mktemp -d "${TMPDIR:-/tmp}/vvm-rehearsal.XXXXXX")"
case "$WORK" in "$ROOT"/*) echo "rehearse: $WORK is inside the repository" >&2; exit 1 ;; esac
t0=$(date +%s)
step() { printf '\n--- rehearsal: %s (t+%ss)\n' "$1" "$(($(date +%s) - t0))"; }
npm_quiet=(--no-audit --no-fund --loglevel=error)

registry_pid=""
host_pid=""
cleanup() {
	local status=$?
	if [ -n "$host_pid" ]; then
		kill "$host_pid" 2>/dev/null || true
		wait "$host_pid" 2>/dev/null || true
	fi
	if [ -n "$registry_pid" ]; then
		kill "$registry_pid" 2>/dev/null || true
		wait "$registry_pid" 2>/dev/null || true
	fi
	if [ "${KEEP_REHEARSAL:-}" = 1 ] || [ "$status" != 0 ]; then
		echo "rehearse: kept $WORK (registry log: $WORK/verdaccio.log)" >&2
	else
		rm -rf "$WORK"
	fi
	exit "$status"
}
trap cleanup EXIT

# A free TCP port on 127.0.0.1.
free_port() { node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'; }
# Waits up to 30 s until `url` answers 2xx; fails (printing `log`) if process `pid` exits first.
wait_for_url() {
	local url="$1" pid="$2" log="$3"
	for _ in $(seq 1 150); do
		curl -fs -o /dev/null "$url" && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	curl -fs -o /dev/null "$url" && return 0
	cat "$log" >&2
	echo "rehearse: $url did not answer" >&2
	exit 1
}

# --- 1. the registry -------------------------------------------------------------------------
step "verdaccio on 127.0.0.1"
PORT="$(free_port)"
REGISTRY="http://127.0.0.1:$PORT/"
cat >"$WORK/verdaccio.yaml" <<EOF
storage: $WORK/storage
auth:
  htpasswd:
    file: $WORK/htpasswd
    max_users: 1
uplinks: {}
packages:
  "**":
    access: \$all
    publish: \$authenticated
log: { type: stdout, format: pretty, level: warn }
web: { enable: false }
EOF
node node_modules/verdaccio/bin/verdaccio --config "$WORK/verdaccio.yaml" --listen "127.0.0.1:$PORT" \
	>"$WORK/verdaccio.log" 2>&1 &
registry_pid=$!
wait_for_url "${REGISTRY}-/ping" "$registry_pid" "$WORK/verdaccio.log"
TOKEN="$(curl -fs -X PUT -H 'content-type: application/json' \
	-d '{"name":"rehearsal","password":"rehearsal-only"}' \
	"${REGISTRY}-/user/org.couchdb.user:rehearsal" | node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).token')"
printf 'registry=%s\n//127.0.0.1:%s/:_authToken=%s\n' "$REGISTRY" "$PORT" "$TOKEN" >"$WORK/publish.npmrc"
echo "rehearse: verdaccio pid $registry_pid at $REGISTRY"

# --- 2. version, build, publish (the documented flow, with a snapshot version) ------------------
# In a copy of the checkout (tracked and untracked files, not the ignored ones), so `changeset
# version` and the builds never touch the repository: tests and chaos runs may use it meanwhile
# (.ci/run runs them side by side), and an interrupted rehearsal leaves nothing to restore.
step "copy of the checkout, pnpm install (offline from the store)"
COPY="$WORK/repo"
mkdir -p "$COPY"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$COPY"
cd "$COPY"
pnpm install --frozen-lockfile --prefer-offline --reporter=silent

step "changeset version --snapshot $TAG"
pnpm changeset version --snapshot "$TAG"

mapfile -t PUBLISHED < <(node -e '
	const { readdirSync, readFileSync } = require("node:fs");
	for (const d of readdirSync("packages")) {
		const p = JSON.parse(readFileSync(`packages/${d}/package.json`, "utf8"));
		if (!p.private) console.log(`${p.name}@${p.version}`);
	}')
version_of() { printf '%s\n' "${PUBLISHED[@]}" | sed -n "s|^$1@||p"; }
echo "rehearse: ${#PUBLISHED[@]} packages at $(version_of @vvm/ttlstorage)"

step "build and changeset publish --tag $TAG"
if [ "${VVM_REHEARSAL_PREBUILT:-0}" = 1 ]; then
	# .ci/run built these very sources a moment ago; the snapshot version is the only change, and
	# no build output holds a version: the checkout's dist/ folders are what a build here gives.
	for dist in "$ROOT"/packages/*/dist "$ROOT"/apps/vvm-host/dist; do
		rel="${dist#"$ROOT"/}"
		cp -a "$dist" "$COPY/$rel"
	done
	echo "rehearse: using the checkout's build (VVM_REHEARSAL_PREBUILT=1)"
else
	pnpm turbo run build --filter='./packages/*' --filter=@vvm/vvm-host --output-logs=errors-only
fi
if ! npm_config_userconfig="$WORK/publish.npmrc" npm_config_registry="$REGISTRY" \
	pnpm changeset publish --tag "$TAG" --no-git-tag >"$WORK/publish.log" 2>&1; then
	cat "$WORK/publish.log" >&2
	exit 1
fi
# (its progress spinner draws even without a terminal: keep only the outcome)
sed -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' "$WORK/publish.log" | tr '\r' '\n' | grep -v 'Publishing packages' |
	sed -n '/published/,$p'

# The examples as pnpm packs them: workspace:^ and catalog: become the published ranges.
mkdir -p "$WORK/examples"
for dir in examples/*/; do
	[ -f "$dir/package.json" ] || continue
	(cd "$dir" && pnpm pack --pack-destination "$WORK/examples" >/dev/null)
done

# --- 3. what the registry serves ----------------------------------------------------------------
step "published tarballs: manifests, publint --strict, attw --profile esm-only"
node "$HERE/check-tarballs.mjs" "$REGISTRY" "$WORK/tarballs" "${PUBLISHED[@]}"

# A fresh consumer directory outside the repo: @vvm/* from the rehearsal registry, the rest from
# the usual registry.
consumer() {
	local dir="$WORK/$1"
	mkdir -p "$dir"
	printf '@vvm:registry=%s\n' "$REGISTRY" >"$dir/.npmrc"
	printf '%s' "$dir"
}

# --- 4. the two install sets of the issue ---------------------------------------------------------
step "npm install @vvm/ielections @vvm/ttlstorage-level; @vvm/isequencer @vvm/seqstorage"
install_set() {
	local name="$1"
	shift
	local dir specs=() pkg
	dir="$(consumer "$name")"
	for pkg in "$@"; do specs+=("$pkg@$(version_of "$pkg")"); done
	(
		cd "$dir"
		npm init -y >/dev/null
		npm pkg set type=module
		npm install "${npm_quiet[@]}" "${specs[@]}"
		npm ls --all | grep -E '@vvm/|lru-cache' | sed 's/^/  /'
		for pkg in "$@"; do
			node -e "import('$pkg').then((m) => console.log('  import $pkg: ' + Object.keys(m).length + ' exports'))"
			node -e "const m = require('$pkg'); console.log('  require $pkg (require(esm)): ' + Object.keys(m).length + ' exports')"
		done
	)
}
install_set elections-level @vvm/ielections @vvm/ttlstorage-level
install_set sequencer @vvm/isequencer @vvm/seqstorage

# --- 5. the examples -----------------------------------------------------------------------------
step "vvm-host for the host-command-fetch example (level storage in the temp dir)"
HOST_PORT="$(free_port)"
node "$COPY/apps/vvm-host/dist/cli.mjs" --storage level --data-dir "$WORK/host-data" --http-port "$HOST_PORT" \
	--work-interval-ms 0 >"$WORK/host.log" 2>&1 &
host_pid=$!
wait_for_url "http://127.0.0.1:$HOST_PORT/readyz" "$host_pid" "$WORK/host.log"
export VVM_HOST_URL="http://127.0.0.1:$HOST_PORT"
echo "rehearse: vvm-host pid $host_pid at $VVM_HOST_URL"

read -r -a NODES <<<"${VVM_REHEARSAL_NODES:-$(command -v node)}"
for tarball in "$WORK"/examples/*.tgz; do
	name="$(basename "$tarball" .tgz | sed -E 's/^example-//; s/-[0-9].*$//')"
	step "example $name: install, tsc --strict, run as TypeScript and as JavaScript"
	dir="$(consumer "example-$name")"
	tar -xzf "$tarball" -C "$dir" --strip-components=1
	(
		cd "$dir"
		{ grep -E '"(@vvm/[^"]+|cassandra-driver|@aws-sdk/client-dynamodb|pg|classic-level|ioredis|redlock|vitest)"' package.json || true; } | sed 's/^/  /'
		npm install "${npm_quiet[@]}"
		npx tsc -p tsconfig.json # type-checked (any error fails), and dist/: plain ESM JavaScript
		for node_bin in "${NODES[@]}"; do
			echo "  on Node $("$node_bin" -v)"
			if [ "$name" = custom-ttl-storage ]; then
				PATH="$(dirname "$node_bin"):$PATH" npx vitest run
				echo 'export default { test: { include: ["dist/test/**/*.test.js"] } };' >vitest.js.config.mjs
				PATH="$(dirname "$node_bin"):$PATH" npx vitest run --config vitest.js.config.mjs
			else
				"$node_bin" "$HERE/run-example.mjs" "$name" ts
				"$node_bin" "$HERE/run-example.mjs" "$name" js
			fi
		done
	)
done

step "stop the vvm-host (SIGTERM to pid $host_pid)"
kill -TERM "$host_pid"
host_status=0
wait "$host_pid" || host_status=$?
host_pid=""
if [ "$host_status" != 0 ]; then
	cat "$WORK/host.log" >&2
	echo "rehearse: vvm-host exited with $host_status, expected 0" >&2
	exit 1
fi

# --- 6. the lowest and the newest version of each client range -------------------------------------
step "lowest and newest client versions the published ranges allow"
bash "$HERE/compat.sh" "$(consumer compat)" "$HERE/compat" "${PUBLISHED[@]}"

step "done: published ${#PUBLISHED[@]} packages at $(version_of @vvm/ttlstorage), installed and run"
printf '  %s\n' "${PUBLISHED[@]}"
