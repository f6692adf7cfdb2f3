#!/usr/bin/env bash
# Makes the repo ready on a machine with only Node and npm: a repo-local pnpm (no global state,
# no corepack: Node 20's corepack fails its signature check for pnpm) and the locked dependencies.
# Source it (`. scripts/bootstrap.sh`) to get pnpm on PATH, or run it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PNPM_VERSION="$(node -p "require('$ROOT/package.json').packageManager.split('@')[1]")"
TOOLS="$ROOT/.tools"

node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 20 ]; then
	echo "bootstrap: Node >= 20 is required, found $(node -v)" >&2
	exit 1
fi

if [ ! -x "$TOOLS/node_modules/.bin/pnpm" ] || [ "$("$TOOLS/node_modules/.bin/pnpm" -v)" != "$PNPM_VERSION" ]; then
	echo "bootstrap: installing pnpm $PNPM_VERSION into .tools/"
	npm install --silent --no-audit --no-fund --no-save --prefix "$TOOLS" "pnpm@$PNPM_VERSION" >/dev/null
fi
export PATH="$TOOLS/node_modules/.bin:$PATH"

echo "bootstrap: pnpm install (frozen lockfile)"
(cd "$ROOT" && pnpm install --frozen-lockfile --reporter=append-only 2>&1 | grep -Ev '^(Progress|Packages:)' | tail -n 5)
