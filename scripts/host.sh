#!/usr/bin/env bash
# Runs the VVM host on the embedded level storage in ./.vvm-data (override any flag after --,
# e.g. `npm run host -- --http-port 9090`). Installs and builds what is missing first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
. scripts/bootstrap.sh >&2
# --help and --version only print: no build when one exists, and no exit line.
for arg in "$@"; do
	case "$arg" in
	-h | --help | -V | --version)
		[ -f apps/vvm-host/dist/cli.mjs ] ||
			pnpm turbo run build --filter=@vvm/vvm-host... --output-logs=errors-only >&2
		exec node apps/vvm-host/dist/cli.mjs "$@"
		;;
	esac
done
echo "host: building" >&2
pnpm turbo run build --filter=@vvm/vvm-host... --output-logs=errors-only >&2
# Not exec'd, so the host's own exit status is printed: on Ctrl-C npm (which gets the SIGINT
# too) may report a failure of its own whatever the host did; the line below says what the host did.
status=0
# The defaults as variables, not flags: the host refuses a flag given twice (`-- --storage mem`
# would repeat --storage) and --data-dir beside another storage; a flag after -- wins over them.
VVM_STORAGE="${VVM_STORAGE:-level}" VVM_DATA_DIR="${VVM_DATA_DIR:-$ROOT/.vvm-data}" \
	node apps/vvm-host/dist/cli.mjs "$@" || status=$?
echo "host: vvm-host exited with code $status (0 = graceful shutdown)" >&2
exit "$status"
