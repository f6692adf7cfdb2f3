import { readFileSync } from "node:fs";

let cached: string | undefined;

/** The host's version, from its manifest (one level above src/ and dist/). */
export function hostVersion(): string {
	cached ??= (
		JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
			version: string;
		}
	).version;
	return cached;
}
