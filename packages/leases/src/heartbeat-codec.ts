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
	/**
	 * Grants this host is deploying (`onGranted` still running): group → term. The placement
	 * driver prolongs them like accepted ones, so a deployment of any length is served. Absent:
	 * none.
	 */
	readonly deploying?: ReadonlyMap<number, number>;
	/**
	 * `false`: this host cannot serve (it has not read the lease batch for half a lease interval):
	 * the placement driver grants it nothing and prolongs none of its leases, so its groups move.
	 * Absent: `true`.
	 */
	readonly accepting?: boolean;
}

/** Flag of the optional trailing section: the host does not accept leases now. */
const FLAG_NOT_ACCEPTING = 1;

function writeGrants(w: ByteWriter, grants: ReadonlyMap<number, number>): void {
	const groups = [...grants.keys()].sort((a, b) => a - b);
	w.varint(groups.length);
	let prev = 0;
	for (const g of groups) {
		w.varint(g - prev);
		w.byte(grants.get(g) as number);
		prev = g;
	}
}

function readGrants(r: ByteReader): Map<number, number> {
	const n = r.varint();
	const grants = new Map<number, number>();
	let g = 0;
	for (let i = 0; i < n; i++) {
		g += r.varint();
		grants.set(g, r.byte());
	}
	return grants;
}

/**
 * Format, kind, incarnation, seq, then the acknowledgements sorted by group: the group as a
 * varint delta from the previous one, then the term byte (about 2 bytes per lease held). Then,
 * only when there is something to say (so a steady host's record keeps the first format's
 * bytes): a flags byte (`1`: not accepting) and the deploying grants, encoded like the
 * acknowledgements.
 * @internal
 */
export function encodeHeartbeat(record: HeartbeatRecord): Uint8Array {
	const deploying = record.deploying ?? new Map<number, number>();
	const accepting = record.accepting ?? true;
	const w = new ByteWriter(34 + (record.acks.size + deploying.size) * 2);
	w.byte(FORMAT);
	w.byte(KIND_HEARTBEAT);
	w.string(record.incarnation);
	w.varint(record.seq);
	writeGrants(w, record.acks);
	if (!accepting || deploying.size > 0) {
		w.byte(accepting ? 0 : FLAG_NOT_ACCEPTING);
		writeGrants(w, deploying);
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
	const acks = readGrants(r);
	if (r.done) return { incarnation, seq, acks, deploying: new Map(), accepting: true };
	const flags = r.byte();
	const deploying = readGrants(r);
	r.end();
	return { incarnation, seq, acks, deploying, accepting: (flags & FLAG_NOT_ACCEPTING) === 0 };
}
