import type { Bytes } from "@vvm/ttlstorage";
import { bytesEqual, fromUtf8 } from "@vvm/ttlstorage";
import type { HeartbeatRecord } from "./heartbeat-codec.ts";
import { decodeHeartbeat } from "./heartbeat-codec.ts";
import type { LeaseHolder } from "./model.ts";

/** One host as the placement driver sees it. @internal */
export interface ObservedMember {
	readonly holder: LeaseHolder;
	readonly heartbeat: HeartbeatRecord;
	/**
	 * The latest `clock.monotonic()` of THIS process at which the host is known to have been alive:
	 * the start of the read before the one that first saw its current heartbeat. `undefined` until
	 * a change was seen.
	 */
	readonly aliveAt: number | undefined;
}

interface Entry extends ObservedMember {
	readonly bytes: Uint8Array;
}

/**
 * Tells liveness from heartbeats the way client-go does, without comparing another host's clock:
 * a host proved it was alive after the previous read started when a read shows its heartbeat
 * changed (the counter moves with every write). Only the placement driver's monotonic clock is
 * involved.
 * @internal
 */
export class MemberView {
	#members = new Map<string, Entry>();
	#lastReadStart: number | undefined;

	/** Feeds one complete read of the member records, started at `readStartedAt` (monotonic). */
	observe(
		records: ReadonlyArray<{ cCols: Bytes; value: Uint8Array }>,
		readStartedAt: number,
	): void {
		const prevStart = this.#lastReadStart;
		const next = new Map<string, Entry>();
		for (const { cCols, value } of records) {
			const address = fromUtf8(cCols);
			const prev = this.#members.get(address);
			if (prev !== undefined && bytesEqual(prev.bytes, value)) {
				next.set(address, prev);
				continue;
			}
			let heartbeat: HeartbeatRecord;
			try {
				heartbeat = decodeHeartbeat(value);
			} catch {
				continue; // not ours: such a record is never a member
			}
			const sameIncarnation =
				prev !== undefined && prev.holder.incarnation === heartbeat.incarnation;
			const holder = sameIncarnation
				? prev.holder
				: { address, incarnation: heartbeat.incarnation };
			// Changed since the previous read (or new): it was written after that read started.
			const aliveAt = prevStart ?? (sameIncarnation ? prev.aliveAt : undefined);
			next.set(address, { holder, heartbeat, aliveAt, bytes: value });
		}
		this.#members = next;
		this.#lastReadStart = readStartedAt;
	}

	/** The members of the last read. */
	get members(): ReadonlyMap<string, ObservedMember> {
		return this.#members;
	}

	/** Forgets everything (a new view needs two reads before anyone counts as alive). */
	clear(): void {
		this.#members = new Map();
		this.#lastReadStart = undefined;
	}
}
