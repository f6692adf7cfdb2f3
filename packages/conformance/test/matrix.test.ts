// The list and the test files agree: each driver runs from exactly one file, which runs only it.
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { drivers } from "../src/drivers.ts";

const here = new URL(".", import.meta.url);
const fileOf = (d: { name: string; needsServer: boolean }): string =>
	`${d.name}${d.needsServer ? ".integration" : ""}.test.ts`;

describe("the conformance matrix", () => {
	it("names every driver once, as a package suffix and a --storage value can", () => {
		const names = drivers.map((d) => d.name);
		expect(new Set(names).size).toBe(names.length);
		for (const name of names) expect(name).toMatch(/^[a-z][a-z0-9]*$/);
	});

	it("runs each driver from test/<name>.test.ts, or <name>.integration.test.ts when it needs a server", () => {
		// The review cases (review4-*.test.ts) run cases of their own over a driver, not the matrix.
		const files = readdirSync(here).filter(
			(f) => f.endsWith(".test.ts") && f !== "matrix.test.ts" && !f.startsWith("review"),
		);
		expect(files.sort()).toEqual(drivers.map(fileOf).sort());
		for (const d of drivers)
			expect(readFileSync(new URL(fileOf(d), here), "utf8")).toContain(`runMatrix("${d.name}")`);
	});
});
