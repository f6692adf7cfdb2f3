import type { Bytes } from "@vvm/ttlstorage";
import { decodeValue, lockKeyOf } from "./encoding.ts";

/** A record as stored: its expiry (ms, 0 = none) and value. @internal */
export interface Decoded {
	readonly expireAt: number;
	readonly value: Uint8Array;
}

/** One LevelDB batch operation, on the data or the index sublevel. @internal */
export type Op<S> =
	| { type: "put"; sublevel: S; key: Uint8Array; value: Uint8Array }
	| { type: "del"; sublevel: S; key: Uint8Array };

/**
 * One write of the driver (a conditional write, a batch of puts, a fence raise, a cleaner page),
 * decided inside its group. @internal
 */
export interface Job<S> {
	readonly operation: string;
	/** Data keys whose stored records `decide` looks at: read once for the whole group. */
	readonly reads: readonly Uint8Array[];
	/** Fence scopes (`lockKeyOf(scope)` → scope) whose epochs `decide` checks or raises. */
	readonly scopes: ReadonlyMap<string, Bytes> | undefined;
	/**
	 * Decides against the group's view and adds its operations; returns the job's result or throws
	 * (the job then fails alone). Everything that can throw must happen before the view changes.
	 */
	decide(view: GroupView<S>): unknown;
	readonly resolve: (value: unknown) => void;
	readonly reject: (error: unknown) => void;
}

/**
 * What the jobs of one group see: the records read for the group, overlaid by what the group's
 * earlier jobs wrote; likewise the fence epochs. Nothing of it is stored before the group's one
 * batch is (and no other group's batch is at the database meanwhile).
 * @internal
 */
export class GroupView<S> {
	readonly ops: Op<S>[] = [];
	/** What this group's jobs wrote, by data key (`undefined`: deleted). */
	readonly #written = new Map<string, Decoded | undefined>();
	/** Stored bytes read for the group, decoded on first use (a corrupt record fails its job). */
	readonly #raw = new Map<string, Uint8Array | undefined>();
	readonly #decoded = new Map<string, Decoded | undefined>();
	/** Epochs raised by this group's jobs. */
	readonly epochs: Map<string, bigint> = new Map();

	constructor(keys: readonly string[], stored: readonly (Uint8Array | undefined)[]) {
		keys.forEach((k, i) => {
			this.#raw.set(k, stored[i]);
		});
	}

	/** The record at `key` as the group sees it; throws on a corrupt stored record. */
	record(key: string): Decoded | undefined {
		if (this.#written.has(key)) return this.#written.get(key);
		if (this.#decoded.has(key)) return this.#decoded.get(key);
		const raw = this.#raw.get(key);
		const decoded = raw === undefined ? undefined : decodeValue(raw);
		this.#decoded.set(key, decoded);
		return decoded;
	}

	/** The epoch raised for a scope by this group, if any. */
	raised(name: string): bigint | undefined {
		return this.epochs.get(name);
	}

	/** Notes what a job of the group wrote at `key` (`undefined`: deleted). */
	set(key: string, record: Decoded | undefined): void {
		this.#written.set(key, record);
	}
}

/** Collects the distinct data keys a group reads. @internal */
export class ReadSet {
	readonly keys: Uint8Array[] = [];
	readonly names: string[] = [];
	readonly #seen = new Set<string>();

	add(key: Uint8Array, name: string = lockKeyOf(key)): void {
		if (this.#seen.has(name)) return;
		this.#seen.add(name);
		this.keys.push(key);
		this.names.push(name);
	}
}
