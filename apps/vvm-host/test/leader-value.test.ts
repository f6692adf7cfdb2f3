import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { parseHostConfig } from "../src/config.ts";
import { runHost } from "../src/host.ts";

describe("leader value", () => {
	it("two hosts with the same address write different leader values; /leadership shows both parts", async () => {
		const argv = [
			"--storage",
			"mem",
			"--http-port",
			"0",
			"--address",
			"10.0.0.5:8080",
			"--work-interval-ms",
			"0",
		];
		const runOne = async (): Promise<Record<string, unknown>> => {
			const parsed = parseHostConfig(argv, {});
			if (parsed.help) throw new Error("unexpected help");
			const stop = new AbortController();
			const lines: Array<Record<string, unknown>> = [];
			let onLine: (line: Record<string, unknown>) => void = () => {};
			const logDestination = new Writable({
				write(chunk: Buffer, _encoding, done) {
					for (const text of chunk.toString().split("\n")) {
						if (text === "") continue;
						const line = JSON.parse(text) as Record<string, unknown>;
						lines.push(line);
						onLine(line);
					}
					done();
				},
			});
			const servicesStarted = new Promise<void>((resolve) => {
				onLine = (l) => {
					if (l.event === "services-started") resolve();
				};
			});
			const exit = runHost(parsed.config, {
				logDestination,
				killer: { schedule() {} },
				stderr: () => {},
				stop: stop.signal,
			});
			await servicesStarted;
			const port = lines.find((l) => l.event === "listening")?.port as number;
			const body = (await (await fetch(`http://127.0.0.1:${port}/leadership`)).json()) as Record<
				string,
				unknown
			>;
			stop.abort();
			expect(await exit).toBe(0);
			const leader = lines.find((l) => l.event === "leader");
			expect(leader?.address).toBe("10.0.0.5:8080");
			expect(leader?.holder).toBe(body.holder);
			return body;
		};
		const first = await runOne();
		const second = await runOne();
		expect(first).toMatchObject({ leader: true, address: "10.0.0.5:8080" });
		expect(second).toMatchObject({ leader: true, address: "10.0.0.5:8080" });
		expect(first.holder).toMatch(/^10\.0\.0\.5:8080#[0-9a-f]{12}$/);
		expect(second.holder).toMatch(/^10\.0\.0\.5:8080#[0-9a-f]{12}$/);
		expect(first.holder).not.toBe(second.holder);
	});
});
