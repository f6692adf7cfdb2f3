import { closeSync, openSync, writeSync } from "node:fs";

/** An append-only file of lines, written synchronously: nothing is lost if the run is cut short. */
export interface LineFile {
	write(line: string): void;
	close(): void;
}

/**
 * Opens `path` for appending lines.
 *
 * @example
 * ```ts
 * const file = openLineFile(".chaos/run/events.jsonl");
 * file.write(JSON.stringify({ event: "run-start" }));
 * ```
 */
export function openLineFile(path: string): LineFile {
	let fd: number | undefined = openSync(path, "a");
	return {
		write(line) {
			if (fd !== undefined) writeSync(fd, `${line}\n`);
		},
		close() {
			if (fd !== undefined) closeSync(fd);
			fd = undefined;
		},
	};
}
