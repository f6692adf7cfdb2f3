// Histories of conditional writes, checked against what the cluster holds afterwards.
import type { TTLStorage, TTLStorageErrorCode } from "@vvm/ttlstorage";
import { fromUtf8, TTLStorageError, utf8 } from "@vvm/ttlstorage";

/** What a storage call answered: its result, or the code it rejected with. */
export type Answer = boolean | TTLStorageErrorCode | "not a TTLStorageError";

/** One compare-and-swap of a register from `old` to a value no other call writes. */
export interface Swap {
	readonly old: string;
	readonly next: string;
	readonly answer: Answer;
}

/**
 * Waits for elections' `cleanup()` calls. A release is a conditional delete, which a cluster may
 * answer ambiguously under contention (the record then expires by its TTL); any other failure
 * rejects.
 */
export async function cleanupAll(cleanups: readonly Promise<void>[]): Promise<void> {
	for (const outcome of await Promise.allSettled(cleanups)) {
		if (outcome.status === "fulfilled") continue;
		const reason: unknown = outcome.reason;
		const errors = reason instanceof AggregateError ? reason.errors : [reason];
		for (const e of errors) {
			if (answerOf(e) !== "TTLSTORAGE_OUTCOME_UNKNOWN") throw reason;
		}
	}
}

/** The code of a rejection, for a history. */
export function answerOf(error: unknown): Answer {
	return TTLStorageError.is(error) ? error.code : "not a TTLStorageError";
}

/**
 * Checks the swaps of one register against its value afterwards (`final`, read at SERIAL). Each
 * swap writes a unique value, so the values the register went through are found by walking back
 * from `final` along the swaps that wrote them, to `initial`. Then a swap answered `true` must be
 * on that path, and one answered `false` or `TTLSTORAGE_UNAVAILABLE` (nothing written) must not
 * be. `TTLSTORAGE_OUTCOME_UNKNOWN` may be either. Returns the violations; none means every answer
 * was right.
 *
 * @example
 * ```ts
 * checkSwaps("a", [{ old: "a", next: "b", answer: true }], "b"); // []
 * ```
 */
export function checkSwaps(initial: string, swaps: readonly Swap[], final: string): string[] {
	const problems: string[] = [];
	const byNext = new Map<string, Swap>();
	for (const s of swaps) {
		if (byNext.has(s.next) || s.next === initial) problems.push(`value ${s.next} written twice`);
		byNext.set(s.next, s);
	}
	const applied = new Set<Swap>();
	for (let value = final; value !== initial; ) {
		const s = byNext.get(value);
		if (s === undefined) {
			problems.push(`the register holds ${value}, which no swap wrote`);
			break;
		}
		if (applied.has(s)) {
			problems.push(`the swaps to ${value} form a cycle`);
			break;
		}
		applied.add(s);
		value = s.old;
	}
	for (const s of swaps) {
		const label = `swap ${s.old} -> ${s.next} answered ${String(s.answer)}`;
		if (s.answer === true && !applied.has(s)) problems.push(`${label}, but was not applied`);
		if ((s.answer === false || s.answer === "TTLSTORAGE_UNAVAILABLE") && applied.has(s)) {
			problems.push(`${label}, but was applied`);
		}
		if (
			typeof s.answer === "string" &&
			s.answer !== "TTLSTORAGE_UNAVAILABLE" &&
			s.answer !== "TTLSTORAGE_OUTCOME_UNKNOWN"
		) {
			problems.push(`${label}: a cluster with a quorum must not fail that way`);
		}
	}
	return problems;
}

/** One conditional call seen by {@link recordConditions}. */
export interface Condition {
	readonly op: "insertIfNotExists" | "compareAndSwap" | "compareAndDelete";
	readonly cCols: string;
	readonly value: string;
	readonly answer: Answer;
}

/**
 * Wraps a driver so every conditional call is appended to `log` with its answer. `onSwap` runs
 * right after a compare-and-swap was handed to the driver (to kill a node while it is in flight).
 */
export function recordConditions(
	driver: TTLStorage,
	log: Condition[],
	hooks: { onSwap?: () => void } = {},
): TTLStorage {
	const record = async (
		op: Condition["op"],
		cCols: Uint8Array,
		value: Uint8Array,
		call: Promise<boolean>,
	): Promise<boolean> => {
		try {
			const answer = await call;
			log.push({ op, cCols: fromUtf8(cCols), value: fromUtf8(value), answer });
			return answer;
		} catch (error) {
			log.push({ op, cCols: fromUtf8(cCols), value: fromUtf8(value), answer: answerOf(error) });
			throw error;
		}
	};
	return {
		insertIfNotExists: (p, c, v, ttl) =>
			record("insertIfNotExists", c, v, driver.insertIfNotExists(p, c, v, ttl)),
		compareAndSwap: (p, c, old, next, ttl) => {
			const call = driver.compareAndSwap(p, c, old, next, ttl);
			hooks.onSwap?.();
			return record("compareAndSwap", c, next, call);
		},
		compareAndDelete: (p, c, v) =>
			record("compareAndDelete", c, v, driver.compareAndDelete(p, c, v)),
		get: (p, c) => driver.get(p, c),
		put: (p, c, v, ttl) => driver.put(p, c, v, ttl),
		putBatch: (items) => driver.putBatch(items),
		read: (p, range) => driver.read(p, range),
		queryTTL: (p, c) => driver.queryTTL(p, c),
		close: () => driver.close(),
		[Symbol.asyncDispose]: () => driver.close(),
	};
}

/**
 * Compare-and-swap writers on one register until `stop()`: each reads the value, then swaps it for
 * a value of its own (`<writer>-<n>`). Returns every swap with its answer.
 */
export function swapWriters(
	writers: ReadonlyArray<{ readonly name: string; readonly storage: TTLStorage }>,
	pKey: Uint8Array,
	cCols: Uint8Array,
): { stop: () => Promise<Swap[]> } {
	const swaps: Swap[] = [];
	let running = true;
	const loops = writers.map(async ({ name, storage }) => {
		for (let n = 0; running; n++) {
			let old: Uint8Array | undefined;
			try {
				old = await storage.get(pKey, cCols);
			} catch {
				// A read the cluster could not answer: try again.
			}
			if (old !== undefined) {
				const next = `${name}-${n}`;
				try {
					swaps.push({
						old: fromUtf8(old),
						next,
						answer: await storage.compareAndSwap(pKey, cCols, old, utf8(next), 0),
					});
				} catch (error) {
					swaps.push({ old: fromUtf8(old), next, answer: answerOf(error) });
				}
			}
			await new Promise((resolve) => setTimeout(resolve, 50));
		}
	});
	return {
		stop: async () => {
			running = false;
			await Promise.all(loops);
			return swaps;
		},
	};
}
