import { describe, expect, it } from "vitest";
import { parseHostConfig } from "../src/config.ts";
import { EXIT, startHost } from "../src/host.ts";

describe("startHost", () => {
	it("runs in-process and stops gracefully at the end of an await using scope", async () => {
		const parsed = parseHostConfig(["--storage", "mem", "--http-port", "0"], {});
		if (parsed.help) throw new Error("unexpected help");
		const events: string[] = [];
		const logDestination = {
			write: (line: string) => {
				events.push(String((JSON.parse(line) as { event?: string }).event));
			},
		};
		let done: Promise<number> | undefined;
		{
			await using host = startHost(parsed.config, {
				killer: { schedule: () => {}, disarm: () => {} },
				logDestination,
			});
			done = host.done;
			for (let i = 0; i < 200 && !events.includes("services-started"); i++) {
				await new Promise((r) => setTimeout(r, 10));
			}
			expect(events).toContain("services-started");
		}
		expect(await done).toBe(EXIT.OK);
		expect(events).toContain("released");
	});
});
