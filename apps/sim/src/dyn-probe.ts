// The "dyn" profile learns what @vvm/ttlstorage-dyn reports for each raw transport outcome by
// asking the real driver: a DynamoDBClient configured as the host configures it (region,
// endpoint, credentials; the SDK's own retry settings untouched), whose HTTP handler plays the
// outcome instead of a network. The driver's error mapping, its conditional-retry handling and the
// SDK's retry middleware all run for real, so a fixed driver (or SDK configuration) changes the
// profile without a change here.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { TTLStorage } from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";
import { createDynamoTTLStorage } from "@vvm/ttlstorage-dyn";

/** A raw transport outcome of one request, as the fault layer produces it. */
export type RawFailure =
	/** The connection could not be opened: the request never reached the server. */
	| "refused"
	/** The server applied the request; the connection was reset before the answer arrived. */
	| "lost"
	/** The driver's request timeout fired first; the request may still be applied later. */
	| "late";

/** The driver operation classes whose behaviour differs. */
export type OpClass = "conditional" | "put" | "batch" | "get";

/** What the driver reports after the SDK is done with one raw failure. */
interface ProbedFailure {
	/** Requests the SDK sent for the one driver call (1 = no client-library resend). */
	readonly sends: number;
	/** The contract error code the driver threw. */
	readonly code: string;
}

/** What the driver answers when a resent conditional write finds its condition false. */
export type ResendVerdict = "true" | "false" | "unknown";

/** The calibrated "dyn" profile. */
export interface DynProfileTable {
	readonly failures: Readonly<Record<OpClass, Readonly<Record<RawFailure, ProbedFailure>>>>;
	/** A conditional write's first attempt lost, the resend's condition false; the item is ours. */
	readonly resendFoundOurs: ResendVerdict;
	/** Same, the item is someone else's. */
	readonly resendFoundOther: ResendVerdict;
}

const enc = new TextEncoder();
const bytes = (s: string): Uint8Array => enc.encode(s);

function rawError(kind: RawFailure): Error {
	switch (kind) {
		case "refused":
			return Object.assign(new Error("connect ECONNREFUSED (simulated)"), { code: "ECONNREFUSED" });
		case "lost":
			return Object.assign(new Error("socket hang up (simulated)"), { code: "ECONNRESET" });
		case "late":
			// What the SDK's node handler rejects with when the request's abortSignal fires.
			return Object.assign(new Error("Request aborted (simulated)"), { name: "AbortError" });
	}
}

type Script = (attempt: number, body: Record<string, unknown>) => { status: number; body: unknown };

/** A DynamoDB client as the host builds one, whose "network" is `script`. */
function scriptedClient(script: Script): { client: DynamoDBClient; sends: () => number } {
	let sends = 0;
	const requestHandler = {
		metadata: { handlerProtocol: "sim" },
		handle: async (request: { body?: unknown }) => {
			sends++;
			const body =
				typeof request.body === "string"
					? (JSON.parse(request.body) as Record<string, unknown>)
					: request.body instanceof Uint8Array
						? (JSON.parse(Buffer.from(request.body).toString("utf8")) as Record<string, unknown>)
						: {};
			const out = script(sends, body);
			return {
				response: {
					statusCode: out.status,
					headers: { "content-type": "application/x-amz-json-1.0" },
					body: bytes(JSON.stringify(out.body)),
				},
			};
		},
		updateHttpClientConfig: () => {},
		httpHandlerConfigs: () => ({}),
		destroy: () => {},
	};
	const client = new DynamoDBClient({
		region: "us-east-1",
		endpoint: "http://127.0.0.1:1",
		credentials: { accessKeyId: "local", secretAccessKey: "local" },
		requestHandler,
	});
	return { client, sends: () => sends };
}

const P = bytes("probe-p");
const C = bytes("probe-c");
const V = bytes("probe-v");

function call(storage: TTLStorage, op: OpClass): Promise<unknown> {
	switch (op) {
		case "conditional":
			return storage.insertIfNotExists(P, C, V, 0);
		case "put":
			return storage.put(P, C, V, 0);
		case "batch":
			return storage.putBatch([
				{ pKey: P, cCols: C, value: V, ttlSeconds: 0 },
				{ pKey: P, cCols: bytes("probe-c2"), value: V, ttlSeconds: 0 },
			]);
		case "get":
			return storage.get(P, C);
	}
}

async function outcome(
	script: Script,
	op: OpClass,
): Promise<{ sends: number; result: string; code: string }> {
	const { client, sends } = scriptedClient(script);
	const storage = createDynamoTTLStorage({ client, tableName: "sim_probe" });
	try {
		const r = await call(storage, op);
		return { sends: sends(), result: String(r), code: "" };
	} catch (error) {
		const code = TTLStorageError.is(error) ? error.code : `raw:${String(error)}`;
		return { sends: sends(), result: "error", code };
	} finally {
		await storage.close().catch(() => {});
		client.destroy();
	}
}

const CONDITION_FAILED = "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException";

let cached: Promise<DynProfileTable> | undefined;

/**
 * Asks the real driver once per process (about a second: the SDK's retry backoff runs on real
 * timers, outside any simulated run) and caches the answer.
 */
export function probeDynProfile(): Promise<DynProfileTable> {
	cached ??= (async () => {
		const ops: OpClass[] = ["conditional", "put", "batch", "get"];
		const raws: RawFailure[] = ["refused", "lost", "late"];
		const jobs = ops.flatMap((op) =>
			raws.map(async (raw) => {
				const r = await outcome(() => {
					throw rawError(raw);
				}, op);
				return [op, raw, { sends: r.sends, code: r.code || `answered:${r.result}` }] as const;
			}),
		);
		const resend = (ours: boolean): Promise<{ result: string; code: string }> =>
			outcome((attempt, body) => {
				if (attempt === 1) throw rawError("lost");
				const item = { ...(body.Item as Record<string, unknown>) };
				if (!ours) item.v = { B: Buffer.from("someone else").toString("base64") };
				return {
					status: 400,
					body: { __type: CONDITION_FAILED, message: "The conditional request failed", Item: item },
				};
			}, "conditional");
		const [rows, ours, other] = await Promise.all([Promise.all(jobs), resend(true), resend(false)]);
		const failures = {} as Record<OpClass, Record<RawFailure, ProbedFailure>>;
		for (const [op, raw, f] of rows) {
			failures[op] ??= {} as Record<RawFailure, ProbedFailure>;
			failures[op][raw] = f;
		}
		const verdict = (r: { result: string; code: string }): ResendVerdict =>
			r.result === "true" ? "true" : r.result === "false" ? "false" : "unknown";
		return { failures, resendFoundOurs: verdict(ours), resendFoundOther: verdict(other) };
	})();
	return cached;
}
