// Sends a command to a running vvm-host with Node's global fetch and prints the answers: creates a
// Customer record in a workspace, then reads it back. Every command carries an Idempotency-Key, so
// its retries apply it once. No dependency but Node 22.18+.
//
//   VVM_HOST_URL  the host (default http://127.0.0.1:8080)
//   WSID          the workspace (default 1001); the host serves it from partition WSID mod --partitions
import { randomUUID } from "node:crypto";
import { setTimeout } from "node:timers/promises";

const host = process.env.VVM_HOST_URL ?? "http://127.0.0.1:8080";
const wsid = Number(process.env.WSID ?? 1001);
const workspace = `/api/v2/apps/vvm/demo/workspaces/${wsid}`;

/** An error answer of the host: `{ status, code, message, committed, … }`, plus `holder` on 421. */
interface HostError {
	readonly status: number;
	readonly code: string;
	readonly message: string;
	/** Whether the command is written: "no" (nothing was), "yes", or "unknown" (it may be). */
	readonly committed?: "no" | "yes" | "unknown";
	readonly field?: string;
	readonly holder?: string;
}

/**
 * One request, the way a client of a cluster sends it. A command carries an `Idempotency-Key`,
 * drawn once and sent with every attempt, so whatever happened to an attempt the command is
 * applied at most once: a 503 (nothing was written: the partition is starting, busy or has no
 * holder yet) or a 409 with Retry-After (the first attempt is still running) is retried after
 * its Retry-After; a 421 names the host that serves the partition, and the request goes there; a
 * host that does not answer, or a 500 that says the command may be written (`committed` "yes" or
 * "unknown"), is retried with the same key, which answers the first execution's result if there
 * was one (`idempotent-replayed: true`).
 */
async function call(method: string, path: string, body?: unknown): Promise<unknown> {
	let base = host;
	const key = method === "GET" ? undefined : randomUUID();
	for (let attempt = 1; ; attempt++) {
		let res: Response;
		try {
			res = await fetch(`${base}${path}`, {
				method,
				headers: {
					"content-type": "application/json",
					...(key === undefined ? {} : { "idempotency-key": `"${key}"` }),
				},
				...(body === undefined ? {} : { body: JSON.stringify(body) }),
				signal: AbortSignal.timeout(10_000),
			});
		} catch (error) {
			// Not listening (yet), or the connection broke: the command may have landed; the key
			// makes the retry safe.
			if (attempt >= 30) throw error;
			console.log(`${base} does not answer (${(error as Error).cause ?? error}): retrying in 1 s`);
			await setTimeout(1000);
			continue;
		}
		const answer: unknown = await res.json();
		if (res.ok) {
			if (res.headers.get("idempotent-replayed") === "true")
				console.log("(the first attempt's answer, replayed: the command was applied once)");
			return answer;
		}
		const error = answer as HostError;
		const retryAfter = Number(res.headers.get("retry-after") ?? 1);
		if (res.status === 421 && error.holder !== undefined) {
			console.log(`421: partition served by ${error.holder}; sending there`);
			base = `http://${error.holder}`;
		} else if (
			(res.status === 503 || (res.status === 409 && res.headers.has("retry-after"))) &&
			attempt < 30
		) {
			console.log(`${res.status} (${error.message}): retrying in ${retryAfter} s`);
			await setTimeout(retryAfter * 1000);
		} else if (
			res.status === 500 &&
			key !== undefined &&
			error.committed !== "no" &&
			attempt < 30
		) {
			console.log(`500 (committed: ${error.committed}): retrying with the same Idempotency-Key`);
			await setTimeout(1000);
		} else {
			throw new Error(`${method} ${path}: ${res.status} ${error.code}: ${error.message}`);
		}
	}
}

const created = (await call("POST", `${workspace}/docs/app1pkg.Customer`, {
	name: "Ada Lovelace",
	email: "ada@example.com",
})) as { CurrentWLogOffset: number; NewIDs: Record<string, number> };
console.log(`created: ${JSON.stringify(created)}`);

const id = created.NewIDs["1"]; // the real ID the host gave raw ID 1 (the default of a create)
const record = await call("GET", `${workspace}/docs/app1pkg.Customer/${id}`);
console.log(`read: ${JSON.stringify(record)}`);
