import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { Logger } from "../src/index.ts";
import { libraryLogger, silentLogger } from "../src/index.ts";

function capture(): { logger: Logger; lines: Array<Record<string, unknown>> } {
	const lines: Array<Record<string, unknown>> = [];
	const logger = pino(
		{ level: "debug" },
		new Writable({
			write(chunk: Buffer, _enc, done) {
				lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
				done();
			},
		}),
	);
	return { logger, lines };
}

describe("libraryLogger", () => {
	it("is silent without a logger", () => {
		expect(libraryLogger(undefined)).toBe(silentLogger);
		expect(() => silentLogger.error({ a: 1 }, "x")).not.toThrow();
	});

	it("passes fields and message to a pino logger, with the bindings on every line", () => {
		const { logger, lines } = capture();
		const log = libraryLogger(logger, { pkg: "@vvm/x" });
		log.warn({ op: "read" }, "storage failed");
		log.debug({ n: 2 });
		expect(lines.map((l) => [l.level, l.pkg, l.op ?? l.n, l.msg])).toEqual([
			[40, "@vvm/x", "read", "storage failed"],
			[20, "@vvm/x", 2, undefined],
		]);
	});

	it("accepts any pino-compatible object, console included", () => {
		const seen: unknown[][] = [];
		const custom: Logger = {
			error: (...a) => seen.push(["error", ...a]),
			warn: (...a) => seen.push(["warn", ...a]),
			info: (...a) => seen.push(["info", ...a]),
			debug: (...a) => seen.push(["debug", ...a]),
		};
		libraryLogger(custom, { pkg: "p" }).info({ a: 1 }, "m");
		expect(seen).toEqual([["info", { pkg: "p", a: 1 }, "m"]]);
		const asLogger: Logger = console; // compiles: console is pino-compatible in shape
		expect(typeof asLogger.error).toBe("function");
	});

	it("never lets a throwing logger break the caller", () => {
		const broken: Logger = {
			error: () => {
				throw new Error("transport down");
			},
			warn: () => {
				throw new Error("transport down");
			},
			info: () => {},
			debug: () => {},
		};
		expect(() => libraryLogger(broken).error({}, "x")).not.toThrow();
	});
});
