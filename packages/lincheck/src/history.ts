// The history of a run: every operation with its call, its answer (or none: unknown), and the
// times of both on one logical clock that every client shares.

/** A fence as the history names it: the window's scope number and the writer's epoch. */
export interface FenceRef {
	readonly scope: number;
	readonly epoch: number;
}

/** One record of a batch: the key's number in the window, the value, its fence, its condition. */
export interface BatchEntry {
	readonly key: number;
	readonly value: string;
	readonly fence?: FenceRef;
	/** `putBatchIf` only: `null` = absent, a value = holds exactly it, omitted = no condition. */
	readonly expected?: string | null;
}

/** What a client called, on the keys of one window (numbers; the workload maps them to bytes). */
export type OpInput =
	| { readonly kind: "get"; readonly key: number }
	| {
			readonly kind: "insertIfNotExists";
			readonly key: number;
			readonly value: string;
			readonly fence?: FenceRef;
	  }
	| {
			readonly kind: "compareAndSwap";
			readonly key: number;
			readonly old: string;
			readonly value: string;
			readonly fence?: FenceRef;
	  }
	| {
			readonly kind: "compareAndDelete";
			readonly key: number;
			readonly expected: string;
			readonly fence?: FenceRef;
	  }
	| {
			readonly kind: "put";
			readonly key: number;
			readonly value: string;
			readonly fence?: FenceRef;
	  }
	| { readonly kind: "putBatch"; readonly items: readonly BatchEntry[] }
	| { readonly kind: "putBatchIf"; readonly items: readonly BatchEntry[] }
	| { readonly kind: "raiseFence"; readonly scope: number; readonly epoch?: number };

/**
 * What it answered. `unknown`: no answer (`TTLSTORAGE_OUTCOME_UNKNOWN`, `TTLSTORAGE_FAILED`, a
 * timeout, any error that does not say "nothing was written"): the operation may take effect at
 * any time after its call, or never.
 */
export type OpOutput =
	| { readonly kind: "ok" }
	| { readonly kind: "bool"; readonly value: boolean }
	| { readonly kind: "value"; readonly value: string | null }
	| { readonly kind: "epoch"; readonly value: number }
	| { readonly kind: "fenced" }
	| { readonly kind: "unknown" };

/** One operation of a history. */
export interface HistoryOp {
	/** Unique within its history. */
	readonly id: number;
	readonly client: number;
	readonly input: OpInput;
	readonly output: OpOutput;
	/** Logical time of the call. */
	readonly call: number;
	/** Logical time of the answer; `Infinity` when there was none (`output.kind === "unknown"`). */
	readonly ret: number;
	/**
	 * Where the driver placed the call among the others (for `"ordered"` fencing: of two writes
	 * under one epoch, the one called later wins, F2). The call time, unless the call reached the
	 * driver later (an in-process fault layer that delays it).
	 */
	readonly stamp: number;
}
