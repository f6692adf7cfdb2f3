// Per-host wall clocks through libfaketime (Debian's faketime): each host's LD_PRELOAD reads its
// offset from a file on every call (FAKETIME_NO_CACHE=1), so writing the file steps the running
// process. CLOCK_MONOTONIC stays real (FAKETIME_DONT_FAKE_MONOTONIC=1): the hosts' leases and the
// `mono` of every log line are untouched, only `Date.now()` moves.
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Where Debian's faketime package puts the library. */
const LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/** The wall-clock offsets of the hosts of a run. */
export interface HostClocks {
	/** The environment that puts host `name` under its offset file. */
	env(name: string): Record<string, string>;
	/** Steps host `name`'s wall clock to `offsetMs` from real time; returns the previous offset. */
	set(name: string, offsetMs: number): number;
	offset(name: string): number;
}

/** libfaketime's offset syntax with a dot (Node runs libc in the C locale): `+0.350s`. */
export function faketimeOffset(offsetMs: number): string {
	const sign = offsetMs < 0 ? "-" : "+";
	return `${sign}${(Math.abs(offsetMs) / 1000).toFixed(3)}s`;
}

/**
 * Creates the offset files under `dir`, all at +0.
 *
 * @example
 * ```ts
 * const clocks = createHostClocks(".chaos/run/clocks", ["H1", "H2"]);
 * clocks.set("H1", -180); // H1's Date.now() is now 180 ms behind
 * ```
 */
export function createHostClocks(dir: string, names: readonly string[]): HostClocks {
	if (!existsSync(LIBFAKETIME)) {
		throw new Error(
			`${LIBFAKETIME} is missing: bash scripts/test-packages.sh (or apt-get install faketime) installs it, or leave clock out of --faults`,
		);
	}
	mkdirSync(dir, { recursive: true });
	const offsets = new Map<string, number>();
	const file = (name: string): string => join(dir, `${name}.faketime`);
	const write = (name: string, offsetMs: number): void => {
		// Replace atomically: libfaketime rereads the file on every clock call.
		const tmp = `${file(name)}.tmp`;
		writeFileSync(tmp, faketimeOffset(offsetMs));
		renameSync(tmp, file(name));
		offsets.set(name, offsetMs);
	};
	for (const n of names) write(n, 0);
	return {
		env: (name) => ({
			LD_PRELOAD: LIBFAKETIME,
			FAKETIME_TIMESTAMP_FILE: file(name),
			FAKETIME_NO_CACHE: "1",
			FAKETIME_DONT_FAKE_MONOTONIC: "1",
		}),
		set(name, offsetMs) {
			const previous = offsets.get(name) ?? 0;
			write(name, offsetMs);
			return previous;
		},
		offset: (name) => offsets.get(name) ?? 0,
	};
}
