import { describe, expect, it } from "vitest";
import { KeyLock } from "../src/key-lock.ts";

describe("KeyLock", () => {
	it("runs holders of one key one at a time, in call order, and forgets idle keys", async () => {
		const lock = new KeyLock();
		const order: string[] = [];
		let inside = 0;
		let maxInside = 0;
		const work = (name: string) =>
			lock.run("k", async () => {
				inside++;
				maxInside = Math.max(maxInside, inside);
				await new Promise((r) => setImmediate(r));
				order.push(name);
				inside--;
			});
		await Promise.all([work("a"), work("b"), work("c")]);
		expect(order).toEqual(["a", "b", "c"]);
		expect(maxInside).toBe(1);
		expect(lock.size).toBe(0);
	});

	it("lets different keys run concurrently and releases after a failure", async () => {
		const lock = new KeyLock();
		const releaseX = await lock.acquire("x");
		let yRan = false;
		await lock.run("y", async () => {
			yRan = true;
		});
		expect(yRan).toBe(true);
		releaseX();
		await expect(
			lock.run("x", async () => {
				throw new Error("boom");
			}),
		).rejects.toThrow("boom");
		expect(await lock.run("x", async () => 42)).toBe(42);
		expect(lock.size).toBe(0);
	});

	it("acquireAll in sorted order cannot deadlock against itself", async () => {
		const lock = new KeyLock();
		const runs = Array.from({ length: 20 }, (_, i) =>
			(async () => {
				const release = await lock.acquireAll(i % 2 === 0 ? ["a", "b", "c"] : ["c", "b", "a", "a"]);
				await new Promise((r) => setImmediate(r));
				release();
				return i;
			})(),
		);
		expect(await Promise.all(runs)).toHaveLength(20);
		expect(lock.size).toBe(0);
	});
});
