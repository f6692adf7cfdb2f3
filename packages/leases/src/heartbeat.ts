import type { Clock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import { bytesEqual } from "@vvm/ttlstorage";
import { decodeHeartbeat, encodeHeartbeat } from "./heartbeat-codec.ts";
import type { LeaseKeys } from "./keys.ts";
import type { LeaseHolder } from "./model.ts";

/** Options of {@link Heartbeat}. @internal */
export interface HeartbeatOptions {
	readonly storage: TTLStorage;
	readonly keys: LeaseKeys;
	readonly holder: LeaseHolder;
	readonly ttlSeconds: number;
	/** The grants to acknowledge, read at every write. */
	readonly acks: () => ReadonlyMap<number, number>;
	/** The grants being deployed, read at every write. */
	readonly deploying?: () => ReadonlyMap<number, number>;
	/** Whether this host accepts leases now, read at every write. */
	readonly accepting?: () => boolean;
	readonly clock: Clock;
}

/** What a beat found. @internal */
export type BeatResult = "written" | "replaced";

/**
 * This host's member record: `<ns>/members`, cCols = address, value = incarnation, a counter that
 * changes with every write, and the accepted grants; TTL `ttlSeconds`. Joining overwrites the
 * record (a restarted process takes its address over); every later write is a compare-and-swap
 * of the last value written, so a process whose address was taken over finds out (`replaced`).
 * @internal
 */
export class Heartbeat {
	readonly #o: HeartbeatOptions;
	#seq = 0;
	#current: Uint8Array | undefined;

	constructor(options: HeartbeatOptions) {
		this.#o = options;
	}

	#next(): Uint8Array {
		this.#seq++;
		return encodeHeartbeat({
			incarnation: this.#o.holder.incarnation,
			seq: this.#seq,
			acks: this.#o.acks(),
			deploying: this.#o.deploying?.() ?? new Map(),
			accepting: this.#o.accepting?.() ?? true,
		});
	}

	/** Writes the first record, replacing whatever the address had. Rejects on a storage error. */
	async join(): Promise<void> {
		const { storage, keys, holder, ttlSeconds } = this.#o;
		const value = this.#next();
		await storage.put(keys.members, keys.member(holder.address), value, ttlSeconds);
		this.#current = value;
	}

	/**
	 * Renews the record (compare-and-swap from the last value written). A record that expired
	 * (this host could not reach storage for a TTL) is inserted again; a record of another
	 * incarnation means the address was taken over: `replaced`. Storage errors reject.
	 */
	async beat(attempt = 1): Promise<BeatResult> {
		if (attempt > 3) throw new Error("[@vvm/leases] the member record changed under every attempt");
		const { storage, keys, holder, ttlSeconds } = this.#o;
		const pKey = keys.members;
		const cCols = keys.member(holder.address);
		const value = this.#next();
		if (this.#current !== undefined) {
			if (await storage.compareAndSwap(pKey, cCols, this.#current, value, ttlSeconds)) {
				this.#current = value;
				return "written";
			}
		}
		const stored = await storage.get(pKey, cCols);
		if (stored === undefined) {
			if (await storage.insertIfNotExists(pKey, cCols, value, ttlSeconds)) {
				this.#current = value;
				return "written";
			}
			return this.beat(attempt + 1); // someone wrote it meanwhile: look again
		}
		let incarnation: string | undefined;
		try {
			incarnation = decodeHeartbeat(stored).incarnation;
		} catch {
			incarnation = undefined;
		}
		if (incarnation !== holder.incarnation) return "replaced";
		// Ours, but not what we last knew: a write whose outcome was unknown landed. Continue from it.
		if (!bytesEqual(stored, value)) this.#current = stored;
		if (await storage.compareAndSwap(pKey, cCols, stored, value, ttlSeconds)) {
			this.#current = value;
			return "written";
		}
		return this.beat(attempt + 1);
	}

	/** Deletes this host's record if it is still ours (a graceful leave). */
	async leave(): Promise<void> {
		const { storage, keys, holder } = this.#o;
		if (this.#current === undefined) return;
		const current = this.#current;
		this.#current = undefined;
		await storage.compareAndDelete(keys.members, keys.member(holder.address), current);
	}
}
