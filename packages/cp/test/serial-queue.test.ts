import { describe, expect, it } from "vitest";
import { SerialQueue } from "../src/serial-queue.ts";

describe("SerialQueue", () => {
	it("runs tasks one at a time in submission order; a failure does not stop the next", async () => {
		const q = new SerialQueue();
		const log: string[] = [];
		let running = 0;
		const task =
			(name: string, fail = false) =>
			async () => {
				running++;
				expect(running).toBe(1);
				log.push(`start ${name}`);
				await new Promise((resolve) => setTimeout(resolve, 1));
				log.push(`end ${name}`);
				running--;
				if (fail) throw new Error(name);
				return name;
			};
		const results = Promise.allSettled([
			q.run(task("a")),
			q.run(task("b", true)),
			q.run(task("c")),
		]);
		expect(q.length).toBe(3);
		expect((await results).map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
		expect(log).toEqual(["start a", "end a", "start b", "end b", "start c", "end c"]);
		await q.idle();
		expect(q.length).toBe(0);
	});
});
