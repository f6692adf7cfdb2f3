// The in-process stand-in for the fault proxy (mem, level): each call passes, waits before or
// after reaching the storage, loses its answer after it was applied, reaches the storage only
// after its caller timed out (a request delivered late), or fails before reaching it.
import type { TTLStorage, TTLStorageErrorCode } from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";
import { Delegate } from "./delegate.ts";
import type { Rng } from "./rng.ts";
import { createRng } from "./rng.ts";
import type { StampingStorage } from "./workload.ts";

/** Options of {@link withFaultLayer}. */
export interface FaultLayerOptions {
	readonly seed: number;
	/** Share of calls that meet a fault; default 0.3. */
	readonly faultRate?: number;
	/** The callers' timeout: a late call reaches the storage after it; default 5 ms. */
	readonly timeoutMs?: number;
	/**
	 * The error of a call whose answer was lost; default `TTLSTORAGE_OUTCOME_UNKNOWN`. A broken
	 * driver says `TTLSTORAGE_UNAVAILABLE` ("nothing was written"): the check must catch it.
	 */
	readonly lostAnswerCode?: TTLStorageErrorCode;
}

/** What the layer did, by fault. */
export interface FaultCounts {
	pass: number;
	delayBefore: number;
	delayAfter: number;
	lostAnswer: number;
	late: number;
	notSent: number;
}

/** A storage behind the fault layer. */
export interface FaultLayer extends StampingStorage {
	counts(): FaultCounts;
	/** Resolves once every late call reached the storage and settled. */
	drain(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

class FaultLayerStorage extends Delegate implements FaultLayer {
	readonly #rng: Rng;
	readonly #rate: number;
	readonly #timeoutMs: number;
	readonly #lostCode: TTLStorageErrorCode;
	readonly #counts: FaultCounts = {
		pass: 0,
		delayBefore: 0,
		delayAfter: 0,
		lostAnswer: 0,
		late: 0,
		notSent: 0,
	};
	readonly #late = new Set<Promise<unknown>>();
	#onReach: (() => void) | undefined;

	constructor(inner: TTLStorage, options: FaultLayerOptions) {
		super(inner);
		this.#rng = createRng(options.seed);
		this.#rate = options.faultRate ?? 0.3;
		this.#timeoutMs = options.timeoutMs ?? 5;
		this.#lostCode = options.lostAnswerCode ?? "TTLSTORAGE_OUTCOME_UNKNOWN";
	}

	nextCall(onReach: () => void): void {
		this.#onReach = onReach;
	}

	counts(): FaultCounts {
		return { ...this.#counts };
	}

	async drain(): Promise<void> {
		while (this.#late.size > 0) await Promise.allSettled([...this.#late]);
	}

	#lost(operation: string): TTLStorageError {
		return new TTLStorageError(this.#lostCode, "the answer was lost (fault layer)", {
			driver: "lincheck",
			operation,
		});
	}

	protected override async call<T>(operation: string, run: () => Promise<T>): Promise<T> {
		const onReach = this.#onReach;
		this.#onReach = undefined;
		const reach = (): Promise<T> => {
			onReach?.();
			return run();
		};
		const r = this.#rng;
		if (!r.chance(this.#rate)) {
			this.#counts.pass++;
			return reach();
		}
		const fault = r.next();
		if (fault < 0.35) {
			this.#counts.delayBefore++;
			await sleep(r.int(8));
			return reach();
		}
		if (fault < 0.7) {
			this.#counts.delayAfter++;
			const settled = reach().then(
				(value) => ({ value }),
				(error: unknown) => ({ error }),
			);
			const result = await settled;
			await sleep(r.int(8));
			if ("error" in result) throw result.error;
			return result.value;
		}
		if (fault < 0.8) {
			this.#counts.lostAnswer++;
			await reach().catch(() => {});
			throw this.#lost(operation);
		}
		if (fault < 0.9) {
			this.#counts.late++;
			const delay = this.#timeoutMs + r.int(25);
			const late = sleep(delay)
				.then(reach)
				.catch(() => {});
			this.#late.add(late);
			void late.finally(() => this.#late.delete(late));
			await sleep(this.#timeoutMs);
			throw this.#lost(operation);
		}
		this.#counts.notSent++;
		throw new TTLStorageError("TTLSTORAGE_UNAVAILABLE", "not sent (fault layer)", {
			driver: "lincheck",
			operation,
		});
	}
}

/**
 * `storage` behind seeded in-process faults, for drivers without a network (mem, level).
 *
 * @example
 * ```ts
 * const storage = withFaultLayer(createMemTTLStorage(), { seed: 1 });
 * const report = await runLincheck(storage, { ...options, afterWindow: () => storage.drain() });
 * ```
 */
export function withFaultLayer(storage: TTLStorage, options: FaultLayerOptions): FaultLayer {
	return new FaultLayerStorage(storage, options);
}
