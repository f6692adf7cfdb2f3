#!/usr/bin/env bash
# Installs what the power-cut test (apps/vvm-host/test/powercut.test.ts) needs and builds
# powercutfs into tooling/powercut/bin/powercutfs:
#   - Debian's fuse3 (fusermount3), when it is missing and apt-get can install it (root);
#     as root the filesystem mounts with mount(2) itself, fusermount3 is the fallback;
#   - the filesystem, with `go build` (its one module, github.com/hanwen/go-fuse/v2, comes from
#     the Go module proxy, pinned by go.sum).
# Idempotent; exits non-zero when the binary cannot be built or /dev/fuse is missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

if ! command -v fusermount3 >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "powercut install: apt-get install fuse3" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fuse3 >/dev/null
	else
		echo "powercut install: no fusermount3 and no apt-get as root; mounting needs root then" >&2
	fi
fi
if [ ! -e /dev/fuse ]; then
	echo "powercut install: /dev/fuse is missing (the fuse kernel module is not loaded)" >&2
	exit 1
fi
if ! command -v go >/dev/null 2>&1; then
	echo "powercut install: go is not on PATH" >&2
	exit 1
fi
go build -o bin/powercutfs .
echo "powercut install: built $(pwd)/bin/powercutfs" >&2
