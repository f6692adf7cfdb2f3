#!/usr/bin/env bash
# The lowest and the newest version each published range allows, in a consumer directory: for every
# client below, install that version, type-check the compat tests against the published types
# (tsc --strict, skipLibCheck off) and run the published suites on it.
#
#   compat.sh <consumer-dir> <compat-sources-dir> <name@version>...   (called by rehearse.sh)
#
#   client                      range from                            suites
#   cassandra-driver            @vvm/ttlstorage-cas peerDependencies  cas.test.ts (real Cassandra)
#   @aws-sdk/client-dynamodb    @vvm/ttlstorage-dyn peerDependencies  dyn.test.ts (DynamoDB Local)
#   pg                          @vvm/ttlstorage-pg peerDependencies   pg.test.ts (real PostgreSQL;
#                               @types/pg: the newest of the same major, for tsc)
#   ioredis                     @vvm/ttlstorage-redis peerDependencies redis.test.ts (real Redis)
#   lru-cache                   @vvm/isequencer dependencies          sequencer.test.ts (forced by an override)
#   vitest                      @vvm/ttlstorage peerDependencies      level.test.ts (the suites run on it)
#   classic-level               LEVEL_DATABASES below (the level      level.test.ts
#                               driver takes any abstract-level db)
set -euo pipefail
dir="$1"
sources="$2"
shift 2
# What the level driver's README promises; it is not a manifest range (the database is the user's).
LEVEL_DATABASES="classic-level@^2.0.0 || ^3.0.0"
npm_quiet=(--no-audit --no-fund --loglevel=error)

published() { local name="$1"; shift; printf '%s\n' "$@" | sed -n "s|^$name@||p"; }
range_of() { # <package> <field> <dependency>
	npm view "$1@$(published "$1" "${ALL[@]}")" "$2" --json | node -e '
		const deps = JSON.parse(require("fs").readFileSync(0, "utf8") || "{}");
		const range = deps[process.argv[1]];
		if (range === undefined) { console.error(`no ${process.argv[1]} in ${process.argv[2]}`); process.exit(1); }
		console.log(range);' "$3" "$1.$2"
}
# The lowest and the newest version a range allows (one line each; one line when they are equal).
ends_of() { # <package> <range>
	npm view "$1@$2" version --json | node -e '
		const v = JSON.parse(require("fs").readFileSync(0, "utf8"));
		const all = (Array.isArray(v) ? v : [v]).filter((x) => !x.includes("-"));
		const key = (x) => x.split(".").map((n) => n.padStart(8, "0")).join(".");
		all.sort((a, b) => (key(a) < key(b) ? -1 : 1));
		console.log([...new Set([all[0], all.at(-1)])].join("\n"));'
}

ALL=("$@")
cd "$dir"
cp "$sources"/*.test.ts "$sources/vitest.config.mjs" "$sources/tsconfig.json" .
deps=()
for pkg in @vvm/ttlstorage @vvm/ttlstorage-mem @vvm/ttlstorage-level @vvm/ttlstorage-cas \
	@vvm/ttlstorage-dyn @vvm/ttlstorage-pg @vvm/ttlstorage-redis @vvm/ielections @vvm/isequencer @vvm/seqstorage; do
	deps+=("$pkg@$(published "$pkg" "${ALL[@]}")")
done
npm init -y >/dev/null
npm pkg set type=module
# @types/redis-errors: ioredis 6.1's own declarations import redis-errors, which ships no types
# (the ttlstorage-redis README tells users the same).
npm install "${npm_quiet[@]}" "${deps[@]}" classic-level cassandra-driver @aws-sdk/client-dynamodb \
	pg @types/pg@8 ioredis @types/redis-errors vitest typescript @types/node@22

# <label> <test file> <install args...>: install, type-check, run; prints one summary line.
results=()
check() {
	local label="$1" file="$2" t
	shift 2
	t=$(date +%s)
	npm install "${npm_quiet[@]}" "$@"
	npx tsc -p tsconfig.json
	npx vitest run --config vitest.config.mjs "$file" --reporter=dot
	results+=("$label: tsc ok, $file passed ($(($(date +%s) - t))s)")
}

for spec in "cassandra-driver cas.test.ts @vvm/ttlstorage-cas peerDependencies" \
	"@aws-sdk/client-dynamodb dyn.test.ts @vvm/ttlstorage-dyn peerDependencies" \
	"pg pg.test.ts @vvm/ttlstorage-pg peerDependencies" \
	"ioredis redis.test.ts @vvm/ttlstorage-redis peerDependencies" \
	"vitest level.test.ts @vvm/ttlstorage peerDependencies"; do
	read -r client file owner field <<<"$spec"
	range="$(range_of "$owner" "$field" "$client")"
	for v in $(ends_of "$client" "$range"); do
		echo "compat: $client@$v (published range $range, from $owner)"
		check "$client@$v (range $range)" "$file" "$client@$v"
	done
done

range="$(range_of @vvm/isequencer dependencies lru-cache)"
for v in $(ends_of lru-cache "$range"); do
	echo "compat: lru-cache@$v under @vvm/isequencer (published range $range)"
	npm pkg set "overrides.@vvm/isequencer.lru-cache=$v"
	check "lru-cache@$v (range $range)" sequencer.test.ts
	npm ls lru-cache | grep -q "lru-cache@$v" || { echo "compat: lru-cache@$v was not installed" >&2; exit 1; }
done
npm pkg delete overrides

client="${LEVEL_DATABASES%%@*}"
range="${LEVEL_DATABASES#*@}"
for v in $(ends_of "$client" "$range"); do
	echo "compat: $client@$v (the level driver's README: $range)"
	check "$client@$v ($range)" level.test.ts "$client@$v"
done

echo
printf 'compat: %s\n' "${results[@]}"
