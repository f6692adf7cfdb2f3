import { MockClock } from "@vvm/clock";
import { describe, expect, it } from "vitest";
import { SerialQueue, STANDING_INTERVAL_MS } from "../src/serial-queue.ts";

const LOOSE = { maxWaitMs: 1_000_000, targetMs: 1_000_000 };

/** A task that runs until its release is called. */
function held(): { task: () => Promise<void>; release: () => void; started: () => boolean } {
	let release!: () => void;
	let started = false;
	const gate = new Promise<void>((resolve) => {
		release = resolve;
	});
	return {
		task: () => {
			started = true;
			return gate;
		},
		release,
		started: () => started,
	};
}

/** Lets every settled task's continuation run. */
const settle = async (): Promise<void> => {
	for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe("SerialQueue", () => {
	it("runs tasks one at a time in submission order; a failure does not stop the next", async () => {
		const q = new SerialQueue(new MockClock(0), LOOSE);
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

	it("measures the service time of each task (a moving average) and estimates a newcomer's wait from it", async () => {
		const clock = new MockClock(0);
		const q = new SerialQueue(clock, LOOSE);
		expect(q.waitEstimateMs()).toBe(0);
		// Three tasks of 40, 40, 120 ms, back to back: the average starts at the first and moves 1/8.
		const tasks = [held(), held(), held()];
		const done = tasks.map((t) => q.run(t.task));
		for (const [i, ms] of [40, 40, 120].entries()) {
			await settle();
			expect(tasks[i]?.started()).toBe(true);
			clock.advance(ms);
			tasks[i]?.release();
			await done[i];
			await settle();
		}
		expect(q.serviceMs).toBe(40 + (120 - 40) / 8);
		expect(q.length).toBe(0);
		expect(q.waitEstimateMs()).toBe(0);
		// Two queued, the running one 10 ms in: 2 x the average.
		const a = held();
		const b = held();
		void q.run(a.task);
		void q.run(b.task);
		clock.advance(10);
		expect(q.waitEstimateMs()).toBe(2 * 50);
		// The running one slower than the average: its time so far is the pace (a stall shows).
		clock.advance(70);
		expect(q.waitEstimateMs()).toBe(2 * 80);
		a.release();
		b.release();
		await q.idle();
	});

	it("sheds past maxWaitMs at once, with the backlog's drain time; a stalled task sheds even alone", async () => {
		const clock = new MockClock(0);
		const q = new SerialQueue(clock, { maxWaitMs: 100, targetMs: 100 });
		// One task of 20 ms measured.
		const first = held();
		const p = q.run(first.task);
		clock.advance(20);
		first.release();
		await p;
		await settle();
		expect(q.serviceMs).toBe(20);
		const tasks: ReturnType<typeof held>[] = [];
		// 0..4 ahead: waits 0, 20, ..., 80, then 100 (at the bound: admitted), then 120: shed.
		for (let n = 0; n <= 5; n++) {
			expect(q.shed()).toBe(0);
			const t = held();
			tasks.push(t);
			void q.run(t.task);
		}
		expect(q.length).toBe(6);
		expect(q.shed()).toBe(120);
		expect(q.length).toBe(6);
		// Everything drained: admitted again.
		for (const t of tasks) {
			t.release();
			await settle();
		}
		await q.idle();
		expect(q.shed()).toBe(0);
		// A task that stalls: 150 ms into it, a newcomer would wait at least that: shed.
		const stalled = held();
		void q.run(stalled.task);
		clock.advance(99);
		expect(q.shed()).toBe(0);
		clock.advance(51);
		expect(q.shed()).toBe(150);
		stalled.release();
		await q.idle();
	});

	it("a queue above targetMs for an interval is standing: then only what waits within targetMs (or a lone next) is admitted, until it stayed within targetMs for an interval", async () => {
		const clock = new MockClock(0);
		const q = new SerialQueue(clock, { maxWaitMs: 1000, targetMs: 30 });
		const first = held();
		const p = q.run(first.task);
		clock.advance(10);
		first.release();
		await p;
		await settle();
		expect(q.serviceMs).toBe(10);
		// A burst of 20 (200 ms of work) is absorbed: not standing yet.
		const running: ReturnType<typeof held>[] = [];
		const submit = (): void => {
			const t = held();
			running.push(t);
			void q.run(t.task);
		};
		for (let i = 0; i < 20; i++) {
			expect(q.shed()).toBe(0);
			submit();
		}
		expect(q.standing).toBe(false);
		// The queue drains at 10 ms a task (no time passes inside a task but this).
		const finishOne = async (): Promise<void> => {
			clock.advance(10);
			running.shift()?.release();
			await settle();
		};
		// 100 ms above 30 ms of wait: standing; a newcomer that would wait over 30 ms is shed.
		for (let i = 0; i < 10; i++) await finishOne();
		expect(q.length).toBe(10);
		expect(q.shed()).toBe(100);
		expect(q.standing).toBe(true);
		// It drains to 3 queued (30 ms): admitted; the 4th waiting newcomer is shed again.
		for (let i = 0; i < 7; i++) await finishOne();
		expect(q.length).toBe(3);
		expect(q.shed()).toBe(0);
		submit();
		expect(q.shed()).toBe(40);
		// Sustained overload: arrivals keep it at about 30 ms; it stays standing.
		for (let i = 0; i < 30; i++) {
			await finishOne();
			expect(q.shed()).toBe(0);
			submit();
			expect(q.shed()).toBeGreaterThan(30);
		}
		expect(q.standing).toBe(true);
		// A lone next command is admitted even over targetMs: the partition never idles.
		while (q.length > 0) await finishOne();
		const slow = held();
		void q.run(slow.task);
		clock.advance(45);
		expect(q.shed()).toBe(0);
		submit();
		expect(q.shed()).toBeGreaterThan(30);
		clock.advance(5);
		slow.release();
		await settle();
		while (q.length > 0) await finishOne();
		// Within 30 ms since the slow one ended (10 ms ago) for an interval: no longer standing,
		// bursts are absorbed again.
		expect(q.shed()).toBe(0);
		expect(q.standing).toBe(true);
		clock.advance(STANDING_INTERVAL_MS - 11);
		expect(q.shed()).toBe(0);
		expect(q.standing).toBe(true);
		clock.advance(1);
		expect(q.shed()).toBe(0);
		expect(q.standing).toBe(false);
		for (let i = 0; i < 10; i++) {
			expect(q.shed()).toBe(0);
			submit();
		}
		while (q.length > 0) await finishOne();
		await q.idle();
	});
});
