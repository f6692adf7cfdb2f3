import type { BatchItem, TTLStorage } from "@vvm/ttlstorage";
import { bytesEqual, TTLStorageError } from "@vvm/ttlstorage";
import type { CpCommitted, CpKeyInfo } from "./errors.ts";
import { CpError } from "./errors.ts";
import type { StoredCud, StoredEvent } from "./event.ts";
import { decodeLogValue, decodeRecordValue, encodeJson, markerOf, recordValue } from "./event.ts";
import type { StorageKey } from "./keys.ts";
import { cpKeys, keyInfo } from "./keys.ts";

/**
 * SequencesTrustLevel (seed 004, `VVMConfig.SequencesTrustLevel`): how events and new records are
 * written.
 *
 * | level | events (PLog, WLog) | new records |
 * | --- | --- | --- |
 * | 0 | insert-if-not-exists | insert-if-not-exists |
 * | 1 | insert-if-not-exists | put |
 * | 2 | put | put |
 *
 * Record updates and the "mark event corrupted" write always use put.
 */
export type SequencesTrustLevel = 0 | 1 | 2;

/** @internal Where a conflict was found and what it means. */
export class Conflict {
	readonly key: CpKeyInfo;
	/** Set when marking the event corrupted failed (recovery marks it later). */
	markError: unknown;
	constructor(key: CpKeyInfo) {
		this.key = key;
	}
	error(cause?: unknown): CpError {
		return new CpError(
			"CP_CONFLICT",
			`sequences violation: ${this.key.description} already holds another value (pKey ${this.key.pKey}, cCols ${this.key.cCols}); nothing was overwritten`,
			{ key: this.key, ...(cause === undefined ? {} : { cause }) },
		);
	}
}

/** @internal A storage failure while writing an event, and whether the event is durable. */
export function storageFailure(cause: unknown, committed: CpCommitted, what: string): CpError {
	const code = TTLStorageError.is(cause) ? ` (${cause.code})` : "";
	return new CpError("CP_STORAGE", `${what} failed${code}; committed: ${committed}`, {
		cause,
		committed,
	});
}

/** @internal An event with its bytes and keys. */
export interface EncodedEvent {
	readonly event: StoredEvent;
	readonly bytes: Uint8Array;
}

interface Keyed {
	readonly key: StorageKey;
	readonly value: Uint8Array;
}

const isConflict = (r: PromiseSettledResult<unknown>): r is PromiseRejectedResult =>
	r.status === "rejected" && r.reason instanceof Conflict;

/**
 * @internal Writes events of one partition: the PLog entry in the trust level's mode, then its
 * effects (new records, the WLog entry, updates), idempotently. `writes` may coalesce unconditional
 * writes across partitions; conditional writes and reads use `storage` directly.
 */
export class EventWriter {
	readonly #storage: TTLStorage;
	readonly #writes: TTLStorage;
	readonly #appId: number;
	readonly #level: SequencesTrustLevel;
	readonly #atomic: boolean;

	constructor(
		storage: TTLStorage,
		writes: TTLStorage,
		appId: number,
		level: SequencesTrustLevel,
		atomicBatches = false,
	) {
		this.#storage = storage;
		this.#writes = writes;
		this.#appId = appId;
		this.#level = level;
		this.#atomic = atomicBatches && level === 2;
	}

	plogKey(event: StoredEvent): StorageKey {
		return cpKeys.plog(this.#appId, event.p, event.o);
	}

	wlogKey(event: StoredEvent): StorageKey {
		return cpKeys.wlog(this.#appId, event.ws, event.w);
	}

	#plogInfo(event: StoredEvent): CpKeyInfo {
		return keyInfo("plog", `PLog partition ${event.p} offset ${event.o}`, this.plogKey(event));
	}

	#wlogInfo(event: StoredEvent): CpKeyInfo {
		return keyInfo("wlog", `WLog wsid ${event.ws} offset ${event.w}`, this.wlogKey(event));
	}

	#records(event: StoredEvent, cuds: readonly StoredCud[]): Array<Keyed & { cud: StoredCud }> {
		return cuds.map((cud) => ({
			cud,
			key: cpKeys.record(this.#appId, event.ws, cud.id),
			value: encodeJson(recordValue(event, cud)),
		}));
	}

	#recordInfo(event: StoredEvent, cud: StoredCud, key: StorageKey): CpKeyInfo {
		return keyInfo("record", `record wsid ${event.ws} id ${cud.id} (${cud.q})`, key);
	}

	/**
	 * Writes the PLog entry. Rejects with a `CP_CONFLICT` CpError when another value is there (levels
	 * 0 and 1), or with `CP_STORAGE` saying whether the event is durable. After a storage error the
	 * key is read back: our own bytes there mean the write landed, and the command goes on. Resolves
	 * to `true` when the event's effects went in the same all-or-nothing batch (level 2 with
	 * `atomicBatches`): then there is nothing left to apply.
	 */
	async writePLog(e: EncodedEvent): Promise<boolean> {
		const { pKey, cCols } = this.plogKey(e.event);
		try {
			if (this.#atomic) {
				await this.#writes.putBatch([{ pKey, cCols, value: e.bytes }, ...this.#effects(e)]);
				return true;
			}
			if (this.#level === 2) {
				await this.#writes.put(pKey, cCols, e.bytes);
				return false;
			}
			if (await this.#storage.insertIfNotExists(pKey, cCols, e.bytes, 0)) return false;
		} catch (error) {
			let existing: Uint8Array | undefined;
			try {
				existing = await this.#storage.get(pKey, cCols);
			} catch {
				throw storageFailure(error, "unknown", "PLog write");
			}
			// All or nothing: if the PLog entry landed, so did the effects batched with it.
			if (existing !== undefined && bytesEqual(existing, e.bytes)) return this.#atomic;
			if (existing !== undefined && this.#level !== 2)
				throw new Conflict(this.#plogInfo(e.event)).error(error);
			const sure =
				TTLStorageError.is(error) &&
				(error.code === "TTLSTORAGE_UNAVAILABLE" ||
					error.code === "TTLSTORAGE_THROTTLED" ||
					error.code === "TTLSTORAGE_CLOSED");
			throw storageFailure(error, sure && existing === undefined ? "no" : "unknown", "PLog write");
		}
		// insert-if-not-exists returned false: ours (a re-applied write) or a conflict.
		const existing = await this.#storage.get(pKey, cCols);
		if (existing !== undefined && bytesEqual(existing, e.bytes)) return false;
		throw new Conflict(this.#plogInfo(e.event)).error();
	}

	/** Level 2: every effect of an event as puts (new records, the WLog entry, updates). */
	#effects(e: EncodedEvent): BatchItem[] {
		const { event } = e;
		return [
			...this.#records(
				event,
				event.cuds.filter((c) => c.n),
			),
			{ key: this.wlogKey(event), value: e.bytes },
			...this.#records(
				event,
				event.cuds.filter((c) => !c.n),
			),
		].map((k) => ({ ...k.key, value: k.value }));
	}

	/** Inserts (level 0/1 events, level 0 records); identical bytes or `isOurs` count as written. */
	async #insert(
		k: Keyed,
		conflict: () => CpKeyInfo,
		isOurs: (existing: Uint8Array) => boolean,
	): Promise<void> {
		if (await this.#storage.insertIfNotExists(k.key.pKey, k.key.cCols, k.value, 0)) return;
		const existing = await this.#storage.get(k.key.pKey, k.key.cCols);
		if (existing !== undefined && (bytesEqual(existing, k.value) || isOurs(existing))) return;
		throw new Conflict(conflict());
	}

	/**
	 * Applies an event whose PLog entry is durable: new records and the WLog entry first, then
	 * updates. Idempotent: a re-applied insert that finds its own bytes (or, for a record, a record
	 * created by this event and updated since) succeeds. `recovery`: the event may have been applied
	 * before, so records written by a later event are not overwritten. Resolves to the conflict if
	 * one was found (the event is then marked corrupted); rejects on storage errors.
	 */
	async apply(e: EncodedEvent, recovery: boolean): Promise<Conflict | undefined> {
		const { event } = e;
		const creates = this.#records(
			event,
			event.cuds.filter((c) => c.n),
		);
		const updates = this.#records(
			event,
			event.cuds.filter((c) => !c.n),
		);
		const wlog: Keyed = { key: this.wlogKey(event), value: e.bytes };
		if (this.#level === 2 && !recovery) {
			// Nothing can conflict: one batch of puts.
			await this.#writes.putBatch(this.#effects(e));
			return undefined;
		}
		const ours = (cud: StoredCud) => (existing: Uint8Array) => {
			const r = decodeRecordValue(existing);
			return r !== undefined && r.c === event.o && r.q === cud.q;
		};
		const tasks: Array<Promise<void>> = [];
		if (this.#level === 0)
			for (const r of creates)
				tasks.push(this.#insert(r, () => this.#recordInfo(event, r.cud, r.key), ours(r.cud)));
		else if (recovery) for (const r of creates) tasks.push(this.#putUnlessNewer(event, r));
		else if (creates.length > 0) tasks.push(this.#putAll(creates));
		tasks.push(
			this.#level === 2
				? this.#writes.put(wlog.key.pKey, wlog.key.cCols, wlog.value)
				: this.#insert(
						wlog,
						() => this.#wlogInfo(event),
						() => false,
					),
		);
		const results = await Promise.allSettled(tasks);
		const conflict = results.find(isConflict);
		if (conflict !== undefined) {
			const c = conflict.reason as Conflict;
			try {
				await this.markCorrupted(e, c.error().message);
			} catch (error) {
				// Recovery must not move past an event it could not mark; a command still reports
				// the conflict, and the re-actualization marks the event.
				if (recovery) throw error;
				c.markError = error;
			}
			return c;
		}
		const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
		if (failed !== undefined) throw failed.reason;
		if (recovery) await Promise.all(updates.map((r) => this.#putUnlessNewer(event, r)));
		else if (updates.length > 0) await this.#putAll(updates);
		return undefined;
	}

	#putAll(items: readonly Keyed[]): Promise<void> {
		return this.#writes.putBatch(items.map((k): BatchItem => ({ ...k.key, value: k.value })));
	}

	/** Recovery: a record last written by a later event keeps its newer state. */
	async #putUnlessNewer(event: StoredEvent, r: Keyed): Promise<void> {
		const existing = await this.#storage.get(r.key.pKey, r.key.cCols);
		const stored = existing === undefined ? undefined : decodeRecordValue(existing);
		if (stored !== undefined && stored.u > event.o) return;
		await this.#writes.put(r.key.pKey, r.key.cCols, r.value);
	}

	/**
	 * Marks an event corrupted: its PLog entry becomes a marker (always put), the records it created
	 * are removed (only where they hold exactly its bytes), and its WLog entry becomes the marker
	 * unless another value holds it. Idempotent, so recovery may repeat it.
	 */
	async markCorrupted(e: EncodedEvent, reason: string): Promise<void> {
		const marker = encodeJson(markerOf(e.event, reason));
		const plog = this.plogKey(e.event);
		await this.#storage.put(plog.pKey, plog.cCols, marker);
		await this.rollBack(e.event, marker);
	}

	/** The effects of a marked event: its records removed, its WLog entry the marker. */
	async rollBack(event: StoredEvent, marker: Uint8Array): Promise<void> {
		const creates = this.#records(
			event,
			event.cuds.filter((c) => c.n),
		);
		await Promise.all(
			creates.map((r) => this.#storage.compareAndDelete(r.key.pKey, r.key.cCols, r.value)),
		);
		const { pKey, cCols } = this.wlogKey(event);
		if (await this.#storage.insertIfNotExists(pKey, cCols, marker, 0)) return;
		const existing = await this.#storage.get(pKey, cCols);
		const d = existing === undefined ? undefined : decodeLogValue(existing);
		// Our own event there becomes the marker; another value (the conflict itself) stays.
		if (d?.kind === "event" && d.event.p === event.p && d.event.o === event.o)
			await this.#storage.put(pKey, cCols, marker);
	}
}
