// How another process starts this host's CLI (its tests, the chaos tool, the benchmark): the build
// when it is up to date, since it starts in a third of the time the sources take through tsx
// (about 250 ms against 600 on the 2-core CI machine, paid at every restart of a kill or chaos
// run); else the sources, because a stale build could lack a fix or a test-only mutant.
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The directory of `@vvm/vvm-host` (this file is its `src/launch.ts` or a `dist/` chunk). */
export const HOST_DIR: string = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** What the CLI runs from: the build (`dist/cli.mjs`) or the sources (`src/cli.ts` through tsx). */
export type HostBuild = "dist" | "source";

function newestMtime(dir: string): number {
	if (!existsSync(dir)) return 0;
	let newest = 0;
	for (const entry of readdirSync(dir, { withFileTypes: true })) {
		const path = join(dir, entry.name);
		newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
	}
	return newest;
}

let fresh: boolean | undefined;

/**
 * `"dist"` when `dist/cli.mjs` is at least as new as every source it bundles (the host's `src/`
 * and each workspace package's: see tsdown.config.ts), else `"source"`; `from` other than
 * `"auto"` is returned as is. The source trees are walked once per process.
 */
export function chooseHostBuild(from: "auto" | HostBuild = "auto"): HostBuild {
	if (from !== "auto") return from;
	if (fresh === undefined) {
		const cli = join(HOST_DIR, "dist/cli.mjs");
		const packages = resolve(HOST_DIR, "../../packages");
		const sources = [
			join(HOST_DIR, "src"),
			...(existsSync(packages) ? readdirSync(packages).map((p) => join(packages, p, "src")) : []),
		];
		const built = existsSync(cli) ? statSync(cli).mtimeMs : 0;
		fresh = built > 0 && sources.every((dir) => newestMtime(dir) <= built);
	}
	return fresh ? "dist" : "source";
}

/**
 * The Node arguments that start the CLI (its flags follow), to run with `process.execPath` in
 * {@link HOST_DIR}.
 *
 * @example
 * ```ts
 * spawn(process.execPath, [...hostCliArgs(chooseHostBuild()), "--storage", "mem"], { cwd: HOST_DIR });
 * ```
 */
export function hostCliArgs(build: HostBuild): string[] {
	return build === "dist"
		? [join(HOST_DIR, "dist/cli.mjs")]
		: ["--import", "tsx", "--conditions=@vvm/source", join(HOST_DIR, "src/cli.ts")];
}
