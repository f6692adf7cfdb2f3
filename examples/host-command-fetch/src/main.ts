// Sends a command to a running vvm-host with Node's global fetch and prints the answers: creates a
// Customer record in a workspace, then reads it back. No dependency but Node 22.18+.
//
//   VVM_HOST_URL  the host (default http://127.0.0.1:8080)
//   WSID          the workspace (default 1001); the host serves it from partition WSID mod --partitions
import { setTimeout } from "node:timers/promises";

const host = process.env.VVM_HOST_URL ?? "http://127.0.0.1:8080";
const wsid = Number(process.env.WSID ?? 1001);
const workspace = `/api/v2/apps/vvm/demo/workspaces/${wsid}`;

/** An error answer of the host: `{ status, code, message, field? }`, plus `holder` on 421. */
interface HostError {
	readonly status: number;
	readonly code: string;
	readonly message: string;
	readonly field?: string;
	readonly holder?: string;
}

/**
 * One request, the way a client of a cluster sends it: a 503 (the partition is starting, busy or
 * has no holder yet) is retried after its Retry-After; a 421 names the host that serves the
 * partition, and the request goes there instead; a host that does not answer is tried again.
 */
async function call(method: string, path: string, body?: unknown): Promise<unknown> {
	let base = host;
	for (let attempt = 1; ; attempt++) {
		let res: Response;
		try {
			res = await fetch(`${base}${path}`, {
				method,
				headers: { "content-type": "application/json" },
				...(body === undefined ? {} : { body: JSON.stringify(body) }),
				signal: AbortSignal.timeout(10_000),
			});
		} catch (error) {
			// Not listening (yet): a host that starts or restarts. A create may have landed before
			// the connection broke: a real client would read the WLog before sending it again.
			if (attempt >= 30) throw error;
			console.log(`${base} does not answer (${(error as Error).cause ?? error}): retrying in 1 s`);
			await setTimeout(1000);
			continue;
		}
		const answer: unknown = await res.json();
		if (res.ok) return answer;
		const error = answer as HostError;
		if (res.status === 421 && error.holder !== undefined) {
			console.log(`421: partition served by ${error.holder}; sending there`);
			base = `http://${error.holder}`;
		} else if (res.status === 503 && attempt < 30) {
			const seconds = Number(res.headers.get("retry-after") ?? 1);
			console.log(`503 (${error.message}): retrying in ${seconds} s`);
			await setTimeout(seconds * 1000);
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
