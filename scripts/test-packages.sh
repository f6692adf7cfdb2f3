#!/usr/bin/env bash
# Debian packages some tests need (installed only when missing; needs root or sudo):
#   faketime: libfaketime for the per-process clock tests of apps/vvm-host (clock-faults) and the
#             chaos test;
#   chromium: the headless browser the host's status-page test renders the page in.
set -euo pipefail
missing=()
[ -f /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || missing+=(faketime)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ "${#missing[@]}" -eq 0 ]; then exit 0; fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else
		echo "test-packages: ${missing[*]} missing and not root (no sudo): those tests will be skipped" >&2
		exit 0
	fi
fi
echo "test-packages: installing ${missing[*]} from Debian"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 ||
	{ $sudo apt-get update -q >/dev/null 2>&1 && $sudo apt-get install -y -q "${missing[@]}" >/dev/null; }
