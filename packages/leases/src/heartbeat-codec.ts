import { FORMAT } from "./batch-codec.ts";
import { ByteReader } from "./codec/byte-reader.ts";
import { ByteWriter } from "./codec/byte-writer.ts";
import { corrupt } from "./errors.ts";

/** @internal */
const KIND_HEARTBEAT = 3;

/**
 * A host's heartbeat: who it is, a counter that changes with every write (the placement driver
 * tells liveness from seeing it change, on its own clock), and the grants it has taken up.
 * @internal
 */
export interface HeartbeatRecord {
	readonly incarnation: string;
	readonly seq: number;
	/** Accepted grants: group → term. */
	readonly acks: ReadonlyMap<number, number>;
}

/**
 * Format, kind, incarnation, seq, then the acknowledgements sorted by group: the group as a
 * varint delta from the previous one, then the term byte (about 2 bytes per lease held).
 * @internal
 */
export function encodeHeartbeat(record: HeartbeatRecord): Uint8Array {
	const groups = [...record.acks.keys()].sort((a, b) => a - b);
	const w = new ByteWriter(32 + groups.length * 2);
	w.byte(FORMAT);
	w.byte(KIND_HEARTBEAT);
	w.string(record.incarnation);
	w.varint(record.seq);
	w.varint(groups.length);
	let prev = 0;
	for (const g of groups) {
		w.varint(g - prev);
		w.byte(record.acks.get(g) as number);
		prev = g;
	}
	return w.finish();
}

/** @internal */
export function decodeHeartbeat(bytes: Uint8Array): HeartbeatRecord {
	const r = new ByteReader(bytes, "heartbeat");
	if (r.byte() !== FORMAT || r.byte() !== KIND_HEARTBEAT)
		throw corrupt("heartbeat: not a heartbeat");
	const incarnation = r.string();
	const seq = r.varint();
	const n = r.varint();
	const acks = new Map<number, number>();
	let g = 0;
	for (let i = 0; i < n; i++) {
		g += r.varint();
		acks.set(g, r.byte());
	}
	r.end();
	return { incarnation, seq, acks };
}
