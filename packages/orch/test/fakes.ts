// Small in-test doubles that isolate orch logic from @vvm/ielections: a map-backed ITTLStorage on a
// clock, a recording killer, and a minimal Elections (insert, renew every d/4, release on a failed
// renewal, cleanup). The real elections run the same cases in vvm-real-elections.test.ts.
import type { Clock } from "@vvm/clock";
import type {
	Elections,
	ElectionsOptions,
	ITTLStorage,
	Killer,
	LeadershipEvent,
	LeadershipState,
} from "@vvm/ielections";

export class MapTTLStorage implements ITTLStorage<number, string> {
	readonly #clock: Clock;
	readonly #map = new Map<number, { value: string; expireAt: number }>();
	constructor(clock: Clock) {
		this.#clock = clock;
	}
	#live(key: number): string | undefined {
		const e = this.#map.get(key);
		if (e === undefined) return undefined;
		if (this.#clock.now() >= e.expireAt) {
			this.#map.delete(key);
			return undefined;
		}
		return e.value;
	}
	async insertIfNotExist(key: number, value: string, ttlSeconds: number): Promise<boolean> {
		if (this.#live(key) !== undefined) return false;
		this.#map.set(key, { value, expireAt: this.#clock.now() + ttlSeconds * 1000 });
		return true;
	}
	async compareAndSwap(
		key: number,
		oldValue: string,
		newValue: string,
		ttlSeconds: number,
	): Promise<boolean> {
		if (this.#live(key) !== oldValue) return false;
		this.#map.set(key, { value: newValue, expireAt: this.#clock.now() + ttlSeconds * 1000 });
		return true;
	}
	async compareAndDelete(key: number, value: string): Promise<boolean> {
		if (this.#live(key) !== value) return false;
		this.#map.delete(key);
		return true;
	}
	async get(key: number): Promise<string | undefined> {
		return this.#live(key);
	}
}

export class FakeKiller implements Killer {
	readonly scheduled: Array<{ delayMs: number; reason: string }> = [];
	schedule(delayMs: number, reason: string): void {
		this.scheduled.push({ delayMs, reason });
	}
}

interface Entry {
	state: {
		value: string;
		durationSeconds: number;
		acquiredAt: number;
		renewals: number;
		lastRenewedAt: number;
		leaseDeadline: number;
	};
	controller: AbortController;
	timer: { cancel(): void } | undefined;
	loop: Promise<void>;
}

/** A minimal Elections for orch's unit tests (no retries: any failed renewal loses). */
export function createFakeElections(
	storage: ITTLStorage<number, string>,
	options: ElectionsOptions<number, string>,
): Elections<number, string> {
	const clock = options.clock as Clock;
	const killer = options.killer as Killer;
	const emit = (e: LeadershipEvent<number, string>): void => options.onEvent?.(e);
	const held = new Map<number, Entry>();
	let finalized = false;

	const release = async (key: number, entry: Entry): Promise<void> => {
		held.delete(key);
		entry.timer?.cancel();
		try {
			await storage.compareAndDelete(key, entry.state.value);
		} finally {
			entry.controller.abort(new Error("released"));
		}
	};

	return {
		async acquireLeadership(key, value, durationSeconds) {
			if (finalized || held.has(key)) return undefined;
			const at = clock.monotonic();
			if (!(await storage.insertIfNotExist(key, value, durationSeconds))) {
				emit({ type: "acquire-failed", key, value, at: clock.now(), reason: "held" });
				return undefined;
			}
			if (finalized) {
				// cleanup() began while the insert was in flight: undo it, as the real elections do
				await storage.compareAndDelete(key, value);
				emit({ type: "acquire-failed", key, value, at: clock.now(), reason: "finalized" });
				return undefined;
			}
			const d = durationSeconds * 1000;
			killer.schedule(0.8 * d, "acquired");
			let done: () => void = () => {};
			const entry: Entry = {
				state: {
					value,
					durationSeconds,
					acquiredAt: at,
					renewals: 0,
					lastRenewedAt: at,
					leaseDeadline: at + 0.8 * d,
				},
				controller: new AbortController(),
				timer: undefined,
				loop: new Promise<void>((resolve) => {
					done = resolve;
				}),
			};
			entry.controller.signal.addEventListener("abort", () => done(), { once: true });
			const arm = (): void => {
				entry.timer = clock.setTimer(d / 4, () => {
					void renew();
				});
			};
			const renew = async (): Promise<void> => {
				if (held.get(key) !== entry) return;
				arm();
				killer.schedule(0.75 * d, "before CAS");
				const sent = clock.monotonic();
				let ok = false;
				try {
					ok = await storage.compareAndSwap(key, value, value, durationSeconds);
				} catch {
					ok = false;
				}
				if (held.get(key) !== entry) return;
				if (ok) {
					killer.schedule(0.8 * d, "renewed");
					entry.state.renewals++;
					entry.state.lastRenewedAt = sent;
					entry.state.leaseDeadline = sent + 0.8 * d;
					emit({
						type: "renewed",
						key,
						value,
						at: clock.now(),
						leaseDeadline: sent + 0.8 * d,
						leaseLeftMs: sent + 0.8 * d - clock.monotonic(),
						latencyMs: 0,
					});
				} else {
					emit({ type: "lost", key, value, at: clock.now(), reason: "ELECTIONS_LOST" });
					await release(key, entry).catch(() => {});
				}
			};
			held.set(key, entry);
			arm();
			emit({
				type: "acquired",
				key,
				value,
				at: clock.now(),
				leaseDeadline: entry.state.leaseDeadline,
				leaseLeftMs: entry.state.leaseDeadline - clock.monotonic(),
			});
			return entry.controller.signal;
		},
		async releaseLeadership(key) {
			const entry = held.get(key);
			if (entry !== undefined) await release(key, entry);
		},
		async cleanup() {
			finalized = true;
			for (const [key, entry] of [...held]) {
				emit({
					type: "released",
					key,
					value: entry.state.value,
					at: clock.now(),
					reason: "ELECTIONS_CLEANUP",
				});
				await release(key, entry);
			}
		},
		currentLeader: (key) => storage.get(key),
		async [Symbol.asyncDispose]() {
			await this.cleanup();
		},
		leadership(key): LeadershipState<string> | undefined {
			const entry = held.get(key);
			return entry === undefined
				? undefined
				: {
						...entry.state,
						leaseTimeLeftMs: entry.state.leaseDeadline - clock.monotonic(),
						fencingToken: undefined,
						signal: entry.controller.signal,
					};
		},
	};
}
