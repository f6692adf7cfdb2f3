// A TCP proxy in front of PostgreSQL that reads the frontend/backend protocol's messages (a type
// byte and an int32 length; the client's first message, the startup, has no type byte; no TLS).
// It counts the statements that reach the server (simple `Q` and extended `E` Execute messages),
// and once armed holds the next statement (from its first `P`, `B` or `Q` message on) until
// `deliver()`, then drops the server's answer: a statement delivered after its client's timeout.
import type { AddressInfo, Socket } from "node:net";
import { connect, createServer } from "node:net";

/** Message types that start sending a statement. */
const STARTS = new Set(["P", "B", "Q"]);
/** Message types that run a statement. */
const RUNS = new Set(["E", "Q"]);

/** A started proxy. */
export interface PgLateProxy {
	readonly port: number;
	/** Statements (`Q`, `E`) forwarded to the server so far. */
	statements(): number;
	/**
	 * Holds the next statement; `held` resolves when it is held, `answered` once the server,
	 * after `deliver()`, answered it up to its `ReadyForQuery` (the statement committed or not).
	 */
	arm(): { readonly held: Promise<void>; readonly answered: Promise<void> };
	/** Sends the held messages to the server now (their client may have gone meanwhile). */
	deliver(): void;
	close(): Promise<void>;
}

/** Splits a byte stream into whole messages; `typed` tells whether the next one has a type byte. */
function messages(
	typedFromStart: boolean,
	onMessage: (type: string, message: Buffer) => void,
): (chunk: Buffer) => void {
	let pending = Buffer.alloc(0);
	let typed = typedFromStart;
	return (chunk) => {
		pending = Buffer.concat([pending, chunk]);
		for (;;) {
			const head = typed ? 5 : 4;
			if (pending.length < head) return;
			const size = (typed ? 1 : 0) + pending.readInt32BE(typed ? 1 : 0);
			if (pending.length < size) return;
			onMessage(typed ? String.fromCharCode(pending[0] as number) : "", pending.subarray(0, size));
			pending = pending.subarray(size);
			typed = true;
		}
	};
}

export async function startPgLateProxy(target: {
	host: string;
	port: number;
}): Promise<PgLateProxy> {
	let statements = 0;
	let armed: { held: () => void; answered: () => void } | undefined;
	let deliverHeld: (() => void) | undefined;
	const sockets = new Set<Socket>();
	const proxy = createServer((client) => {
		const server = connect(target.port, target.host);
		sockets.add(client).add(server);
		let holding: Buffer[] | undefined;
		/** Set once the held statement was delivered: its answer is dropped up to `Z`. */
		let dropping: (() => void) | undefined;
		const forward = (type: string, message: Buffer) => {
			if (RUNS.has(type)) statements++;
			server.write(message);
		};
		client.on(
			"data",
			messages(false, (type, message) => {
				if (holding === undefined && armed !== undefined && STARTS.has(type)) {
					const { held, answered } = armed;
					armed = undefined;
					const queue: Buffer[] = [];
					holding = queue;
					deliverHeld = () => {
						holding = undefined;
						dropping = answered;
						for (const m of queue) forward(String.fromCharCode(m[0] as number), m);
					};
					held();
				}
				if (holding !== undefined) holding.push(message);
				else forward(type, message);
			}),
		);
		server.on(
			"data",
			messages(true, (type, message) => {
				if (dropping !== undefined) {
					if (type === "Z") {
						const answered = dropping;
						dropping = undefined;
						answered();
						server.destroy();
					}
					return;
				}
				if (!client.destroyed) client.write(message);
			}),
		);
		client.on("error", () => {});
		server.on("error", () => {});
		client.on("close", () => {
			// A held statement is still delivered, and answered, after its client went away.
			if (holding === undefined && dropping === undefined) server.destroy();
		});
		server.on("close", () => client.destroy());
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
