import type { BatchItem, ConditionalBatchItem, TTLStorage, WriteFence } from "@vvm/ttlstorage";
import { bytesEqual, fencedError, TTLStorageError } from "@vvm/ttlstorage";
import type { CpCommitted, CpKeyInfo } from "./errors.ts";
import { CpError } from "./errors.ts";
import type { StoredCud, StoredEvent, StoredIdempotencyEntry } from "./event.ts";
import {
	decodeLogValue,
	decodeRecordValue,
	encodeJson,
	epochOf,
	markerOf,
	recordValue,
	tombstoneOf,
} from "./event.ts";
import type { StorageKey } from "./keys.ts";
import { cpKeys, keyInfo } from "./keys.ts";

/**
 * SequencesTrustLevel (seed 004, `VVMConfig.SequencesTrustLevel`): how events and new records are
 * written.
 *
 * | level | events (PLog, WLog) | new records | record updates |
 * | --- | --- | --- | --- |
 * | 0 | insert-if-not-exists | insert-if-not-exists | compare-and-swap from the value read |
 * | 1 | insert-if-not-exists | put | put |
 * | 2 | put | put | put |
 *
 * A key written conditionally at a level is only ever written conditionally at that level (a
 * marker or a rollback is a compare-and-swap there), so Cassandra never orders a plain write
 * against a lightweight transaction of the same record by clocks.
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
			{ key: this.key, committed: "no", ...(cause === undefined ? {} : { cause }) },
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

/** @internal Whether a storage error says a newer holder of the partition took it over. */
export function isFenced(error: unknown): boolean {
	return TTLStorageError.is(error) && error.code === "TTLSTORAGE_FENCED";
}

/** @internal An event with its bytes, and what applying it needs beyond the event. */
export interface EncodedEvent {
	readonly event: StoredEvent;
	readonly bytes: Uint8Array;
	/** Level 0: the stored bytes each updated record was read with (its compare-and-swap's old value). */
	readonly readValues?: ReadonlyMap<number, Uint8Array>;
}

interface Keyed {
	readonly key: StorageKey;
	readonly value: Uint8Array;
}

type PutBatchIf = NonNullable<TTLStorage["putBatchIf"]>;

const isConflict = (r: PromiseSettledResult<unknown>): r is PromiseRejectedResult =>
	r.status === "rejected" && r.reason instanceof Conflict;

/**
 * A compare-and-swap refused although the key still holds the expected bytes: over a storage with
 * per-record ("ordered") fencing, a newer holder wrote the key, so the swap's fence is superseded.
 */
function refusedByFence(event: StoredEvent, operation: string): TTLStorageError {
	return new TTLStorageError(
		"TTLSTORAGE_FENCED",
		`a newer holder of partition ${event.p} wrote the key (epoch above ${epochOf(event)}); nothing was written`,
		{ driver: "cp", operation },
	);
}

/** @internal What one partition's writer writes with. */
export interface EventWriterOptions {
	/** Conditional writes and reads (fenced by the partition's epoch when the storage can). */
	readonly storage: TTLStorage;
	/** Unconditional writes, possibly coalesced across partitions (fenced likewise). */
	readonly writes: TTLStorage;
	/**
	 * The same writes without the partition's fence, for what needs none: a WLog entry at level 2
	 * and an idempotency key's entry, once their event is durable in the PLog (confirmed within
	 * the lease, or read from the PLog). Every holder then writes the same bytes there: the next
	 * holder's actualization sees the event and applies it. Not for a batch that also writes the
	 * event (`atomicBatches`): a deposed holder's such batch may carry an event nobody will see.
	 */
	readonly plainWrites?: TTLStorage;
	/** The partition's fence (what `writes` carries), for a batch that mixes fenced and plain items. */
	readonly fence?: WriteFence;
	readonly appId: number;
	readonly level: SequencesTrustLevel;
	/** The storage's `putBatch` is all or nothing: level 2 writes an event and its effects together. */
	readonly atomicBatches: boolean;
	/**
	 * Levels 0/1, and level 2 when `pipelined`: write an event and its effects with one
	 * `putBatchIf` of `storage`.
	 */
	readonly conditionalBatches?: boolean;
	/**
	 * Commands of the partition may be in flight together (`pipelineDepth` above 1 over
	 * conditional batches). At level 2 the event and its effects then go as one `putBatchIf` too,
	 * the PLog entry inserted and the rest put, so that the next command's batch can require the
	 * entry (and a driver such as pg can carry both in one statement).
	 */
	readonly pipelined?: boolean;
	/**
	 * The storage orders fenced writes per record (`"ordered"` fencing): at level 2 recovery then
	 * re-writes each PLog entry of an older epoch under `fence` (see {@link EventWriter.claimPLog}).
	 */
	readonly claimRecovered?: boolean;
	/** How long an idempotency key is kept, s. */
	readonly idempotencyTtlSeconds: number;
}

/**
 * @internal Writes the events of one partition: the PLog entry in the trust level's mode, then its
 * effects (new records, the WLog entry, updates, the idempotency key), idempotently.
 */
export class EventWriter {
	readonly #storage: TTLStorage;
	readonly #writes: TTLStorage;
	readonly #plainWrites: TTLStorage;
	readonly #fence: WriteFence | undefined;
	readonly #appId: number;
	readonly #level: SequencesTrustLevel;
	readonly #atomic: boolean;
	readonly #putBatchIf: PutBatchIf | undefined;
	/** The epoch recovery claims PLog entries for (level 2, `claimRecovered`, fenced). */
	readonly #claimEpoch: bigint | undefined;
	readonly #keyTtl: number;

	constructor(o: EventWriterOptions) {
		this.#storage = o.storage;
		this.#writes = o.writes;
		this.#plainWrites = o.plainWrites ?? o.writes;
		this.#fence = o.plainWrites === undefined ? undefined : o.fence;
		this.#appId = o.appId;
		this.#level = o.level;
		this.#atomic = o.atomicBatches && o.level === 2;
		this.#putBatchIf =
			o.conditionalBatches === true && (o.level !== 2 || o.pipelined === true)
				? o.storage.putBatchIf?.bind(o.storage)
				: undefined;
		this.#claimEpoch = o.claimRecovered === true && o.level === 2 ? o.fence?.epoch : undefined;
		this.#keyTtl = o.idempotencyTtlSeconds;
	}

	/**
	 * Recovery read `bytes` at PLog `offset` (an event of `event`'s epoch, or a value that is none)
	 * and is about to apply it. Level 2 over `"ordered"` fencing puts the entry back under this
	 * holder's epoch first: the driver compares epochs per record, so a deposed holder's late put
	 * of an epoch between the entry's and ours would otherwise replace an event this holder applied
	 * (and its client may have been answered from the idempotency key). What lands between the read
	 * and this put was not acknowledged (its holder's lease ended before ours began), so putting
	 * back what was read loses nothing. Levels 0/1 insert PLog entries (a late insert finds the key
	 * taken); `"epoch"` drivers refuse every older epoch once the fence is raised.
	 */
	async claimPLog(
		partitionId: number,
		offset: number,
		bytes: Uint8Array,
		event: StoredEvent | undefined,
	): Promise<void> {
		const epoch = this.#claimEpoch;
		if (epoch === undefined || (event !== undefined && epochOf(event) >= epoch)) return;
		const { pKey, cCols } = cpKeys.plog(this.#appId, partitionId, offset);
		await this.#writes.put(pKey, cCols, bytes);
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

	/** The idempotency key's index record, when the event has one. */
	#keyEntry(event: StoredEvent): BatchItem | undefined {
		if (event.i === undefined) return undefined;
		const { pKey, cCols } = cpKeys.idempotency(this.#appId, event.ws, event.i.k);
		const entry: StoredIdempotencyEntry = { v: 1, o: event.o, h: event.i.h, r: event.i.r };
		return { pKey, cCols, value: encodeJson(entry), ttlSeconds: this.#keyTtl };
	}

	/**
	 * Writes the PLog entry. Rejects with a `CP_CONFLICT` CpError when another value is there (levels
	 * 0 and 1), with `CP_BUSY` when that value is an event a deposed holder wrote late (the partition
	 * re-actualizes and applies it), or with `CP_STORAGE` saying whether the event is durable. After
	 * a storage error the key is read back: our own bytes there mean the write landed, and the
	 * command goes on. Resolves to `true` when the event's effects went in the same all-or-nothing
	 * batch (level 2 with `atomicBatches`; levels 0 and 1 over a storage with `putBatchIf`, when
	 * every condition held): then there is nothing left to apply. `after` (pipelined, conditional
	 * batches only): the previous command's event, still in flight; the batch also requires it at
	 * its offset, and when that does not hold the write rejects with `CP_BUSY`, committed "no".
	 */
	async writePLog(e: EncodedEvent, after?: EncodedEvent): Promise<boolean> {
		const { pKey, cCols } = this.plogKey(e.event);
		// Whether the outcome in question is a whole conditional batch's (event and effects).
		let batched = false;
		// A pipelined command whose batch was refused because its predecessor's event is not (or
		// not yet) at the previous PLog offset: nothing was written, and nothing will be.
		let orphaned = false;
		const conditional = this.#conditionalBatch(e, after);
		// Only a conditional batch can require the predecessor: nothing else may be pipelined.
		if (after !== undefined && conditional === undefined)
			throw new CpError("CP_INTERNAL", "a pipelined PLog write needs a conditional batch", {
				committed: "no",
			});
		try {
			if (conditional !== undefined) {
				batched = true;
				if (await (this.#putBatchIf as PutBatchIf)(conditional)) return true;
				// A condition failed and nothing was written: the single writes below find which.
				batched = false;
				if (after !== undefined) {
					const k = this.plogKey(after.event);
					const prev = await this.#storage.get(k.pKey, k.cCols);
					orphaned = prev === undefined || !bytesEqual(prev, after.bytes);
				}
			}
			if (orphaned)
				throw new CpError(
					"CP_BUSY",
					`server is busy: an earlier command of partition ${e.event.p} did not reach PLog offset ${e.event.o - 1}; nothing of this one was written (the partition re-actualizes)`,
					{ retryAfterMs: 100, committed: "no" },
				);
			if (this.#atomic) {
				// One all-or-nothing batch under the fence: the event and everything it writes.
				const { records, entries } = this.#effects(e);
				await this.#writes.putBatch([{ pKey, cCols, value: e.bytes }, ...records, ...entries]);
				return true;
			}
			if (this.#level === 2) {
				await this.#writes.put(pKey, cCols, e.bytes);
				return false;
			}
			if (await this.#storage.insertIfNotExists(pKey, cCols, e.bytes, 0)) return false;
		} catch (error) {
			if (isFenced(error) || orphaned) throw error;
			let existing: Uint8Array | undefined;
			try {
				existing = await this.#storage.get(pKey, cCols);
			} catch {
				throw storageFailure(error, "unknown", "PLog write");
			}
			// All or nothing: if the PLog entry landed, so did the effects batched with it.
			if (existing !== undefined && bytesEqual(existing, e.bytes)) return this.#atomic || batched;
			if (existing !== undefined && this.#level !== 2) throw this.#occupied(e, existing, error);
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
		throw this.#occupied(e, existing);
	}

	/**
	 * The error for a PLog key that holds another value than the event's: an event of a newer
	 * holder (we are deposed: `TTLSTORAGE_FENCED`), of an older one (it landed late), or a conflict.
	 */
	#occupied(e: EncodedEvent, existing: Uint8Array | undefined, cause?: unknown): unknown {
		const d = existing === undefined ? undefined : decodeLogValue(existing);
		const ours = d !== undefined && d.event.p === e.event.p && d.event.o === e.event.o;
		if (ours && epochOf(d.event) > epochOf(e.event))
			return fencedError("cp", "PLog write", epochOf(e.event), epochOf(d.event));
		if (ours && epochOf(d.event) < epochOf(e.event))
			return new CpError(
				"CP_BUSY",
				`server is busy: PLog offset ${e.event.o} holds an event of a previous holder (epoch ${epochOf(d.event)}) that landed late; the partition re-actualizes and applies it`,
				{ retryAfterMs: 100, committed: "no", ...(cause === undefined ? {} : { cause }) },
			);
		return new Conflict(this.#plogInfo(e.event)).error(cause);
	}

	/**
	 * Levels 0 and 1 over a storage with `putBatchIf` (and level 2 when pipelined): the event and
	 * all its effects as one all-or-nothing conditional batch, each key in the mode of the level
	 * (the PLog entry inserted; at levels 0 and 1 the WLog entry too, and at level 0 new records;
	 * at level 0 an update swaps from the value the command read; the rest are puts). `undefined`
	 * where the single writes must do it: not `conditionalBatches`, level 2 not pipelined, or an
	 * update without the value it was read with.
	 */
	#conditionalBatch(e: EncodedEvent, after?: EncodedEvent): ConditionalBatchItem[] | undefined {
		if (this.#putBatchIf === undefined) return undefined;
		const { event } = e;
		const level0 = this.#level === 0;
		const items: ConditionalBatchItem[] = [
			{ ...this.plogKey(event), value: e.bytes, expected: null },
		];
		// Pipelined: the batch lands only if the previous command's event is at the previous offset
		// (it rewrites the same bytes), so no event of ours ever lands after a hole in the PLog.
		if (after !== undefined)
			items.push({ ...this.plogKey(after.event), value: after.bytes, expected: after.bytes });
		const updated = new Set<number>();
		for (const cud of event.cuds) {
			const key = cpKeys.record(this.#appId, event.ws, cud.id);
			const value = encodeJson(recordValue(event, cud));
			if (cud.n) {
				items.push(level0 ? { ...key, value, expected: null } : { ...key, value });
				continue;
			}
			if (updated.has(cud.id)) return undefined;
			updated.add(cud.id);
			if (!level0) {
				items.push({ ...key, value });
				continue;
			}
			const read = e.readValues?.get(cud.id);
			if (read === undefined) return undefined;
			items.push({ ...key, value, expected: read });
		}
		// Level 2 trusts the numbers: the WLog entry is put, as its single write would be.
		items.push(
			this.#level === 2
				? { ...this.wlogKey(event), value: e.bytes }
				: { ...this.wlogKey(event), value: e.bytes, expected: null },
		);
		const entry = this.#keyEntry(event);
		if (entry !== undefined) items.push(entry);
		return items;
	}

	/**
	 * Level 2: every effect of an event as puts: `records` (new ones, then updates), which a later
	 * event may change and so go fenced, and `entries` (the WLog entry, the idempotency key's),
	 * whose bytes are the event's whoever writes them.
	 */
	#effects(e: EncodedEvent): { records: BatchItem[]; entries: BatchItem[] } {
		const { event } = e;
		const item = (k: Keyed): BatchItem => ({ ...k.key, value: k.value });
		const records = [
			...this.#records(
				event,
				event.cuds.filter((c) => c.n),
			),
			...this.#records(
				event,
				event.cuds.filter((c) => !c.n),
			),
		].map(item);
		const entries = [item({ key: this.wlogKey(event), value: e.bytes })];
		const entry = this.#keyEntry(event);
		if (entry !== undefined) entries.push(entry);
		return { records, entries };
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
	 * updates, then its idempotency key. Idempotent: a re-applied insert that finds its own bytes
	 * (or, for a record, a record created by this event and updated since) succeeds. `recovery`: the
	 * event may have been applied before, so records written by a later event are not overwritten.
	 * Resolves to the conflict if one was found (the event is then marked corrupted); rejects on
	 * storage errors.
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
			// Nothing can conflict: puts, the records fenced, the entries plain (the event is durable),
			// in one batch (each item carries its own fence, or none).
			const { records, entries } = this.#effects(e);
			const fence = this.#fence;
			if (fence === undefined) {
				await Promise.all([
					records.length === 0 ? undefined : this.#writes.putBatch(records),
					this.#plainWrites.putBatch(entries),
				]);
			} else {
				await this.#plainWrites.putBatch([...records.map((r) => ({ ...r, fence })), ...entries]);
			}
			return undefined;
		}
		const ours = (cud: StoredCud) => (existing: Uint8Array) => {
			const r = decodeRecordValue(existing);
			return r !== undefined && r.d === undefined && r.c === event.o && r.q === cud.q;
		};
		const tasks: Array<Promise<void>> = [];
		if (this.#level === 0)
			for (const r of creates)
				tasks.push(this.#insert(r, () => this.#recordInfo(event, r.cud, r.key), ours(r.cud)));
		else if (recovery) for (const r of creates) tasks.push(this.#putUnlessNewer(event, r));
		else if (creates.length > 0) tasks.push(this.#putAll(creates));
		tasks.push(
			this.#level === 2
				? this.#plainWrites.put(wlog.key.pKey, wlog.key.cCols, wlog.value)
				: this.#insert(
						wlog,
						() => this.#wlogInfo(event),
						() => false,
					),
		);
		const results = await Promise.allSettled(tasks);
		let conflict = results.find(isConflict)?.reason as Conflict | undefined;
		if (conflict === undefined) {
			const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
			if (failed !== undefined) throw failed.reason;
			conflict = await this.#applyUpdates(e, updates, recovery);
		}
		if (conflict !== undefined) {
			try {
				await this.markCorrupted(e, conflict.error().message);
			} catch (error) {
				// Recovery must not move past an event it could not mark; a command still reports
				// the conflict, and the re-actualization marks the event.
				if (recovery) throw error;
				conflict.markError = error;
			}
			return conflict;
		}
		const entry = this.#keyEntry(event);
		if (entry !== undefined) await this.#plainWrites.putBatch([entry]);
		return undefined;
	}

	/** Updates: level 0 by compare-and-swap from the value read, else puts. */
	async #applyUpdates(
		e: EncodedEvent,
		updates: ReadonlyArray<Keyed & { cud: StoredCud }>,
		recovery: boolean,
	): Promise<Conflict | undefined> {
		if (updates.length === 0) return undefined;
		if (this.#level !== 0) {
			if (recovery) await Promise.all(updates.map((r) => this.#putUnlessNewer(e.event, r)));
			else await this.#putAll(updates);
			return undefined;
		}
		const done: Array<{ key: StorageKey; from: Uint8Array; to: Uint8Array }> = [];
		for (const r of updates) {
			const from = recovery ? undefined : e.readValues?.get(r.cud.id);
			const swapped = await this.#swapUpdate(e.event, r, from);
			if (swapped === "conflict") {
				// Undo what this event changed already, where it still holds the event's state.
				for (const d of done.reverse())
					await this.#storage.compareAndSwap(d.key.pKey, d.key.cCols, d.to, d.from, 0);
				return new Conflict(this.#recordInfo(e.event, r.cud, r.key));
			}
			if (swapped !== undefined) done.push({ key: r.key, from: swapped, to: r.value });
		}
		return undefined;
	}

	/**
	 * Level 0: moves a record from the value the command read (`from`; in recovery, the value read
	 * now) to the event's state. Resolves to the value it replaced, `undefined` when there was
	 * nothing to do (already the event's state, or a later event's), or `"conflict"` when the record
	 * holds something else: someone wrote it behind the partition's back.
	 */
	async #swapUpdate(
		event: StoredEvent,
		r: Keyed,
		from: Uint8Array | undefined,
	): Promise<Uint8Array | "conflict" | undefined> {
		let expected = from;
		for (let attempt = 0; attempt < 3; attempt++) {
			const current = expected ?? (await this.#storage.get(r.key.pKey, r.key.cCols));
			const stored = current === undefined ? undefined : decodeRecordValue(current);
			if (current === undefined || stored === undefined || stored.d !== undefined)
				return "conflict";
			if (bytesEqual(current, r.value) || stored.u > event.o) return undefined;
			if (await this.#storage.compareAndSwap(r.key.pKey, r.key.cCols, current, r.value, 0))
				return current;
			// Lost: an earlier attempt of ours may have landed (unknown outcome), a later event wrote
			// the record (a newer holder applied this event and went on), or the fence refused the
			// swap: read and decide again.
			const now = await this.#storage.get(r.key.pKey, r.key.cCols);
			if (now !== undefined && bytesEqual(now, current)) throw refusedByFence(event, "record swap");
			const later = now === undefined ? undefined : decodeRecordValue(now);
			if (
				now !== undefined &&
				(bytesEqual(now, r.value) || (later !== undefined && later.u > event.o))
			)
				return undefined;
			if (from !== undefined) return "conflict";
			expected = now;
		}
		return "conflict";
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
	 * Marks an event corrupted: its PLog entry becomes a marker, the records it created become
	 * tombstones (only where they hold exactly its bytes), and its WLog entry becomes the marker
	 * unless another value holds it. Idempotent, so recovery may repeat it. At levels 0 and 1 the
	 * PLog entry is swapped from the event's bytes (the key is written conditionally there).
	 */
	async markCorrupted(e: EncodedEvent, reason: string): Promise<void> {
		const marker = encodeJson(markerOf(e.event, reason));
		const plog = this.plogKey(e.event);
		if (this.#level === 2) await this.#storage.put(plog.pKey, plog.cCols, marker);
		else await this.#replaceOurs(plog, e.event, marker);
		await this.rollBack(e.event, marker);
	}

	/** Levels 0/1: a log key holding `event` (or nothing) is made to hold `marker`, conditionally. */
	async #replaceOurs(key: StorageKey, event: StoredEvent, marker: Uint8Array): Promise<void> {
		for (;;) {
			if (await this.#storage.insertIfNotExists(key.pKey, key.cCols, marker, 0)) return;
			const existing = await this.#storage.get(key.pKey, key.cCols);
			if (existing === undefined) continue;
			const d = decodeLogValue(existing);
			// Our own event there becomes the marker; a marker or another value (the conflict) stays.
			if (d?.kind !== "event" || d.event.p !== event.p || d.event.o !== event.o) return;
			if (await this.#storage.compareAndSwap(key.pKey, key.cCols, existing, marker, 0)) return;
			const now = await this.#storage.get(key.pKey, key.cCols);
			if (now !== undefined && bytesEqual(now, existing)) throw refusedByFence(event, "marking");
		}
	}

	/** The effects of a marked event: its records tombstones, its WLog entry the marker. */
	async rollBack(event: StoredEvent, marker: Uint8Array): Promise<void> {
		const creates = this.#records(
			event,
			event.cuds.filter((c) => c.n),
		);
		await Promise.all(
			creates.map(async (r) => {
				const tombstone = encodeJson(tombstoneOf(event, r.cud));
				if (this.#level === 0) {
					await this.#storage.compareAndSwap(r.key.pKey, r.key.cCols, r.value, tombstone, 0);
					return;
				}
				// Levels 1/2 put records: read, and replace only the event's own bytes.
				const existing = await this.#storage.get(r.key.pKey, r.key.cCols);
				if (existing !== undefined && bytesEqual(existing, r.value))
					await this.#writes.put(r.key.pKey, r.key.cCols, tombstone);
			}),
		);
		const wlog = this.wlogKey(event);
		if (this.#level !== 2) {
			await this.#replaceOurs(wlog, event, marker);
			return;
		}
		const existing = await this.#storage.get(wlog.pKey, wlog.cCols);
		const d = existing === undefined ? undefined : decodeLogValue(existing);
		if (
			existing === undefined ||
			(d?.kind === "event" && d.event.p === event.p && d.event.o === event.o)
		)
			await this.#writes.put(wlog.pKey, wlog.cCols, marker);
	}
}
