// A write on a pooled connection that DynamoDB Local has just closed for idleness. The SDK keeps
// idle connections forever; Jetty in DynamoDB Local closes one after 30 s. A write sent on it
// after the server's FIN arrived but before this process's event loop saw it (a busy loop, as on
// a loaded machine: CI got exactly this once, in the deposed-leader suite) fails with `socket hang
// up`, and the driver rightly calls it OUTCOME_UNKNOWN: a write that never arrived, reported as
// unknown. A client with DYNAMO_CLIENT_OPTIONS closed that connection itself at 15 s, so its write
// goes on a new one. Both clients are driven into that moment deterministically: this process
// waits for the server's idle close, then spins (no event loop) reading the kernel's socket table
// until the control's connection is in CLOSE_WAIT, and only then starts both writes.
import { readFileSync } from "node:fs";
import { Agent } from "node:http";
import type { Socket } from "node:net";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { dynamoEnv } from "@vvm/vitest-config/servers";
import { describe, expect, it } from "vitest";
import {
	createDynamoTTLStorage,
	DYNAMO_CLIENT_OPTIONS,
	DYNAMO_IDLE_SOCKET_MS,
} from "../src/index.ts";
import { dynamoGate, useTable } from "./dynamo-local.ts";

const gate = await dynamoGate();
const skip = gate || (process.platform !== "linux" && "reads /proc/net/tcp (Linux only)");
const { tableName } = useTable("idle", skip);

/** DynamoDB Local's idle timeout (Jetty's), measured on the pinned version. */
const SERVER_IDLE_MS = 30_000;

/** The TCP state of this machine's IPv4 connection from local port `port`, from /proc/net/tcp. */
function tcpState(port: number): string | undefined {
	const hex = port.toString(16).toUpperCase().padStart(4, "0");
	for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
		const [, local, , state] = line.trim().split(/\s+/);
		if (local?.endsWith(`:${hex}`)) return state;
	}
	return undefined;
}

describe.skipIf(skip)("a write on a connection the server closed for idleness", () => {
	it("with DYNAMO_CLIENT_OPTIONS it goes on a new connection and is applied; without, it is reset and OUTCOME_UNKNOWN though nothing arrived", {
		timeout: SERVER_IDLE_MS + 60_000,
	}, async () => {
		expect(DYNAMO_IDLE_SOCKET_MS).toBeLessThan(SERVER_IDLE_MS);
		// The control: the SDK's default pool (keep-alive, 50 sockets, no idle timeout), held here
		// to find its connection.
		const pool = new Agent({ keepAlive: true, maxSockets: 50 });
		const control = new DynamoDBClient({ ...dynamoEnv(), requestHandler: { httpAgent: pool } });
		const fixed = new DynamoDBClient({ ...dynamoEnv(), ...DYNAMO_CLIENT_OPTIONS });
		try {
			const p = utf8(`idle-${process.pid}-${Date.now()}`);
			const [sc, sf] = [control, fixed].map((client) =>
				createDynamoTTLStorage({ client, tableName }),
			);
			if (sc === undefined || sf === undefined) throw new Error("unreachable");
			await Promise.all([sc.put(p, utf8("c0"), utf8("v"), 0), sf.put(p, utf8("f0"), utf8("v"), 0)]);
			const free = Object.values(pool.freeSockets).flat() as Socket[];
			expect(free).toHaveLength(1);
			const port = free[0]?.localPort ?? 0;
			expect(tcpState(port)).toBe("01"); // ESTABLISHED
			// Real time, on purpose: what is awaited is a real server's idle timer.
			await new Promise((r) => setTimeout(r, SERVER_IDLE_MS - 2_000));
			const spinUntil = performance.now() + 20_000;
			while (tcpState(port) !== "08" && performance.now() < spinUntil); // 08: CLOSE_WAIT
			expect(tcpState(port), "DynamoDB Local closed the idle connection").toBe("08");
			const [c1, f1] = await Promise.allSettled([
				sc.put(p, utf8("c1"), utf8("v"), 0),
				sf.put(p, utf8("f1"), utf8("v"), 0),
			]);
			expect(f1.status).toBe("fulfilled");
			expect(await sf.get(p, utf8("f1"))).toEqual(utf8("v"));
			// The control's write: reset before it arrived, reported as unknown, and not applied.
			expect(c1.status).toBe("rejected");
			const error = c1.status === "rejected" ? c1.reason : undefined;
			expect(TTLStorageError.is(error) && error.code).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
			expect((error as Error).message).toMatch(/socket hang up|ECONNRESET|EPIPE/);
			expect(await sc.get(p, utf8("c1"))).toBeUndefined();
		} finally {
			control.destroy();
			fixed.destroy();
			pool.destroy();
		}
	});
});
