// A TCP proxy in front of Cassandra that reads the CQL native protocol v4 frames (9-byte header:
// version, flags, stream, opcode, body length; the client must use `maxVersion: 4`, no
// compression). It counts the requests that execute statements (QUERY, EXECUTE, BATCH) reaching
// the server, and once armed holds the next such request until `deliver()`, then drops its answer:
// a request delivered after its client's timeout.
import type { AddressInfo, Socket } from "node:net";
import { connect, createServer } from "node:net";

const HEADER = 9;
const STATEMENT_OPCODES = new Set([0x07, 0x0a, 0x0d]); // QUERY, EXECUTE, BATCH

/** A started proxy. */
export interface CqlLateProxy {
	readonly port: number;
	/** QUERY, EXECUTE and BATCH frames forwarded to the server so far. */
	statements(): number;
	/** Holds the next statement frame; resolves once the server answered it after `deliver()`. */
	arm(): { readonly held: Promise<void>; readonly answered: Promise<void> };
	/** Sends the held frame to the server now. */
	deliver(): void;
	close(): Promise<void>;
}

/** Splits a byte stream into whole frames. */
function framer(onFrame: (frame: Buffer) => void): (chunk: Buffer) => void {
	let pending = Buffer.alloc(0);
	return (chunk) => {
		pending = Buffer.concat([pending, chunk]);
		while (pending.length >= HEADER) {
			const size = HEADER + pending.readUInt32BE(5);
			if (pending.length < size) return;
			onFrame(pending.subarray(0, size));
			pending = pending.subarray(size);
		}
	};
}

export async function startCqlLateProxy(target: {
	host: string;
	port: number;
}): Promise<CqlLateProxy> {
	let statements = 0;
	let armed: { held: () => void; answered: () => void } | undefined;
	let deliverHeld: (() => void) | undefined;
	const sockets = new Set<Socket>();
	const proxy = createServer((client) => {
		const server = connect(target.port, target.host);
		sockets.add(client).add(server);
		/** The stream id whose next answer is dropped (the late request's). */
		let dropAnswerOf: number | undefined;
		let onDropped: (() => void) | undefined;
		const forward = (frame: Buffer) => {
			if (STATEMENT_OPCODES.has(frame.readUInt8(4))) statements++;
			server.write(frame);
		};
		client.on(
			"data",
			framer((frame) => {
				if (armed !== undefined && STATEMENT_OPCODES.has(frame.readUInt8(4))) {
					const { held, answered } = armed;
					armed = undefined;
					const stream = frame.readInt16BE(2);
					deliverHeld = () => {
						dropAnswerOf = stream;
						onDropped = answered;
						forward(frame);
					};
					held();
					return;
				}
				forward(frame);
			}),
		);
		server.on(
			"data",
			framer((frame) => {
				if (dropAnswerOf !== undefined && frame.readInt16BE(2) === dropAnswerOf) {
					dropAnswerOf = undefined;
					onDropped?.();
					return;
				}
				if (!client.destroyed) client.write(frame);
			}),
		);
		const end = () => {
			client.destroy();
			server.destroy();
		};
		client.on("error", end).on("close", end);
		server.on("error", end).on("close", end);
	});
	await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
	return {
		port: (proxy.address() as AddressInfo).port,
		statements: () => statements,
		arm() {
			let held!: () => void;
			let answered!: () => void;
			const heldP = new Promise<void>((r) => {
				held = r;
			});
			const answeredP = new Promise<void>((r) => {
				answered = r;
			});
			armed = { held, answered };
			return { held: heldP, answered: answeredP };
		},
		deliver() {
			const d = deliverHeld;
			deliverHeld = undefined;
			d?.();
		},
		async close() {
			for (const s of sockets) s.destroy();
			await new Promise<void>((resolve) => proxy.close(() => resolve()));
		},
	};
}
