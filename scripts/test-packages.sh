#!/usr/bin/env bash
# Debian packages some tests need, installed only when missing (needs root or sudo), with
# --no-install-recommends (the least that serves). It says what it installs and why before it
# does; where it cannot install, it says which tests will be skipped instead.
#   faketime: libfaketime for the per-process clock tests of apps/vvm-host (clock-faults) and the
#             chaos test;
#   chromium: the headless browser the host's status-page test renders the page in;
#   fuse3:    FUSE for the power-cut test (tooling/powercut: a filesystem that drops unsynced
#             writes at a simulated power cut);
#   redis-server, redis-tools: the Redis 7 of the Redis driver's tests (tooling/servers/redis
#             runs it on 127.0.0.1 with a data directory of its own; redis-cli waits for it),
#             and redis-benchmark for its benchmarks.
set -euo pipefail
missing=()
why=()
if [ ! -f /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ]; then
	missing+=(faketime)
	why+=("faketime (libfaketime: per-process clock skew in the host's clock-faults test and the chaos test)")
fi
if ! command -v chromium >/dev/null 2>&1; then
	missing+=(chromium)
	why+=("chromium (headless: the host's status-page test renders the page)")
fi
if ! command -v fusermount3 >/dev/null 2>&1; then
	missing+=(fuse3)
	why+=("fuse3 (fusermount3: the level driver's power-cut test mounts a FUSE filesystem)")
fi
if ! command -v redis-server >/dev/null 2>&1; then
	missing+=(redis-server)
	why+=("redis-server (Redis 7: the Redis driver's tests, its conformance and linearizability runs)")
fi
if ! command -v redis-cli >/dev/null 2>&1 || ! command -v redis-benchmark >/dev/null 2>&1; then
	missing+=(redis-tools)
	why+=("redis-tools (redis-cli: tooling/servers/redis waits for the server with it; redis-benchmark: the Redis driver's benchmarks)")
fi
if [ "${#missing[@]}" -eq 0 ]; then exit 0; fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
		echo "test-packages: not installing ${missing[*]} (not root, no password-less sudo); the tests that need them are skipped with the reason:" >&2
		printf 'test-packages:   %s\n' "${why[@]}" >&2
		exit 0
	fi
fi
echo "test-packages: installing from Debian (apt-get install --no-install-recommends):"
printf 'test-packages:   %s\n' "${why[@]}"
export DEBIAN_FRONTEND=noninteractive
# Waits for the dpkg lock: tooling/servers/redis/start.sh may be installing redis-server meanwhile.
install() { $sudo apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}" >/dev/null 2>&1; }
if ! install && ! { $sudo apt-get update -q >/dev/null 2>&1 && install; }; then
	echo "test-packages: apt-get could not install ${missing[*]}; the tests that need them are skipped with the reason" >&2
	exit 0
fi
