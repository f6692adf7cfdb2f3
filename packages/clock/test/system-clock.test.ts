import { spawnSync } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, vi } from "vitest";
import { systemClock } from "../src/index.ts";

describe("systemClock", () => {
	it("reads the wall clock", () => {
		const before = Date.now();
		const now = systemClock.now();
		expect(now).toBeGreaterThanOrEqual(before);
		expect(now).toBeLessThanOrEqual(Date.now());
	});

	it("reads a monotonic clock that only moves forward", async () => {
		const a = systemClock.monotonic();
		await systemClock.sleep(5);
		const b = systemClock.monotonic();
		expect(b - a).toBeGreaterThanOrEqual(4);
		expect(Math.abs(b - performance.now())).toBeLessThan(50);
	});

	it("an unref'd timer does not keep the process alive; a plain one does", () => {
		const run = (unref: boolean): { out: string; code: number | null } => {
			const script = `
				import { systemClock } from "@vvm/clock";
				systemClock.setTimer(30_000, () => console.log("fired"), { unref: ${unref} });
				console.log("armed");
			`;
			const child = spawnSync(
				process.execPath,
				["--import", "tsx", "--conditions=@vvm/source", "--input-type=module", "-e", script],
				{
					cwd: resolve(dirname(fileURLToPath(import.meta.url)), ".."),
					encoding: "utf8",
					timeout: 3_000,
					killSignal: "SIGKILL",
				},
			);
			return { out: child.stdout, code: child.status };
		};
		expect(run(true)).toEqual({ out: "armed\n", code: 0 });
		// Killed by the 3 s timeout: the plain timer held the event loop open.
		expect(run(false)).toEqual({ out: "armed\n", code: null });
	}, 20_000);

	it("fires a timer once and honours cancel", async () => {
		let count = 0;
		await new Promise<void>((resolve) => {
			systemClock.setTimer(1, () => {
				count++;
				resolve();
			});
		});
		const cancelled = systemClock.setTimer(1, () => count++);
		cancelled.cancel();
		await systemClock.sleep(10);
		expect(count).toBe(1);
	});

	it("sleep rejects with the abort reason", async () => {
		const ac = new AbortController();
		const p = systemClock.sleep(60_000, ac.signal);
		ac.abort(new Error("bye"));
		await expect(p).rejects.toThrow("bye");
	});

	it("supports delays beyond Node's 24.8-day timer limit without firing early", () => {
		// The long-delay chain is measured on performance.now(), so it is faked too.
		vi.useFakeTimers({ now: 0, toFake: ["setTimeout", "clearTimeout", "Date", "performance"] });
		try {
			let fired = false;
			const year = 365 * 24 * 3600 * 1000;
			systemClock.setTimer(year, () => {
				fired = true;
			});
			vi.advanceTimersByTime(2_147_483_647);
			expect(fired).toBe(false);
			vi.advanceTimersByTime(year - 2_147_483_647 - 1);
			expect(fired).toBe(false);
			vi.advanceTimersByTime(1);
			expect(fired).toBe(true);
		} finally {
			vi.useRealTimers();
		}
	});

	it("rejects bad delays", () => {
		expect(() => systemClock.setTimer(-5, () => {})).toThrow(RangeError);
		expect(() => systemClock.sleep(Number.NaN)).toThrow(RangeError);
	});
});
