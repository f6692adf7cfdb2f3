#!/usr/bin/env bash
# Runs an example of examples/ from this repository, on any Node with npm (Node 20 is enough):
#
#   bash scripts/example.sh <example> [<script>]     e.g. bash scripts/example.sh sequencer-level
#
# <script> is one of the example's package.json scripts (the ones a user outside the repository
# runs with `npm run <script>`); the default is `start`, or `test` when the example has no `start`.
# Environment variables pass through (`CRASH_AFTER=2 bash scripts/example.sh sequencer-level`).
#
# Why not `npm install` and `node src/x.ts` in the example's directory: its package.json names the
# toolkit's packages as `workspace:^` (npm cannot resolve that; pnpm pack turns it into the
# published range), and Node runs TypeScript only from 22.18 on. So this script:
#   1. sources scripts/bootstrap.sh: the pinned Node 22 and pnpm in .tools/, the locked
#      dependencies installed (nothing global);
#   2. runs the script in the example's directory under that Node, the workspace packages resolved
#      to their TypeScript sources (the `@vvm/source` export condition), so nothing is built;
#      a vitest script (`test`) first builds the packages the example imports
#      (`pnpm turbo run build --filter=<example>^...`), since vitest resolves them to their dist/.
# The node process replaces this shell (exec): Ctrl-C and SIGTERM reach the example itself.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
	echo "usage: bash scripts/example.sh <example> [<script>]; examples:" \
		"$(cd "$ROOT/examples" && for d in */; do [ -f "$d/package.json" ] && printf '%s ' "${d%/}"; done)" >&2
	exit 2
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
case "$1" in -h | --help) usage ;; esac
name="${1%/}"
name="${name#examples/}"
dir="$ROOT/examples/$name"
[ -f "$dir/package.json" ] || {
	echo "example: no example '$name' in examples/" >&2
	usage
}

cd "$ROOT"
. scripts/bootstrap.sh >&2
NODE_NEED=22.18.0 # TypeScript by type stripping, without a flag
current="$(node -p 'process.versions.node')"
if [ "$(printf '%s\n%s\n' "$NODE_NEED" "$current" | sort -V | head -n1)" != "$NODE_NEED" ]; then
	echo "example: the examples run TypeScript directly and need Node >= $NODE_NEED, found $current (unset VVM_NODE, or set it to 22 or 24)" >&2
	exit 1
fi

# The script's command line, from the example's package.json.
script="${2:-}"
# typecheck and build are for the workspace, not programs to run.
scripts="$(node -p "Object.keys(require('$dir/package.json').scripts ?? {}).filter((s) => s !== 'typecheck' && s !== 'build').join(' ')")"
if [ -z "$script" ]; then
	case " $scripts " in
	*" start "*) script=start ;;
	*" test "*) script=test ;;
	*)
		echo "example: $name has several programs, name one: $scripts" >&2
		exit 2
		;;
	esac
fi
command="$(node -p "require('$dir/package.json').scripts?.['$script'] ?? ''")"
case " $scripts " in *" $script "*) ;; *) command="" ;; esac
if [ -z "$command" ]; then
	echo "example: $name has no program '$script'; its programs: $scripts" >&2
	exit 2
fi

cd "$dir"
export PATH="$dir/node_modules/.bin:$PATH"
case "$command" in
vitest*)
	pkg="$(node -p "require('./package.json').name")"
	echo "example: building the packages $name imports (turbo, cached after the first run)" >&2
	(cd "$ROOT" && pnpm turbo run build --filter="$pkg^..." --output-logs=errors-only >&2)
	;;
*)
	export NODE_OPTIONS="--conditions=@vvm/source${NODE_OPTIONS:+ $NODE_OPTIONS}"
	;;
esac
echo "example: $name: $command (Node $current, in examples/$name)" >&2
# The package.json scripts are plain command lines (`node src/main.ts`, `vitest run`).
eval "exec $command"
