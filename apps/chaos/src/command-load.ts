// The commands workload's clients: each creates records (its set) and updates the records it
// created with increasing values (its registers), through any host, as the host's README tells a
// client to: follow 421, wait out 503, and retry with the same Idempotency-Key after an answer
// that may have been written (500 committed "yes"/"unknown", no answer at all). Every operation and
// every answer it got goes to history.jsonl for the checker.
import type { ChaosHost } from "./chaos-host.ts";
import type { LineFile } from "./jsonl-file.ts";
import { monoMs, sleep } from "./mono.ts";
import type { Rng } from "./rng.ts";

/** The table every client writes (the host's demo app). */
const TABLE = "app1pkg.Customer";

/** How an operation ended, as its client knows it. */
type OpOutcome =
	/** A 2xx answer: acknowledged. */
	| "ok"
	/** A 4xx answer that says nothing was written (400, 404, 405, 422). */
	| "rejected"
	/** Every attempt was answered "nothing was written" (503 committed no, refused connection). */
	| "not-written"
	/** An attempt may have been written, and no later one said what happened. */
	| "unknown";

/** One operation of a client, with every attempt's answer (history.jsonl). */
export interface OpRecord {
	readonly client: number;
	/** The Idempotency-Key, unique in the run; the payload carries it too. */
	readonly op: string;
	readonly kind: "create" | "update";
	readonly wsid: number;
	/** update: the register (record ID) and the value written. */
	readonly id?: number;
	readonly value?: number;
	readonly outcome: OpOutcome;
	/** The acknowledged answer (`CurrentWLogOffset`, `NewIDs`; `plogOffset` from `vvm-plog-offset`). */
	readonly result?: {
		readonly CurrentWLogOffset: number;
		readonly NewIDs: Record<string, number>;
		readonly plogOffset: number;
	};
	/** Every 2xx answer's body, to check that replays repeat the first answer. */
	readonly okAnswers: readonly string[];
	/** Status codes (or `net`, `timeout`) of every attempt, in order. */
	readonly attempts: readonly string[];
	/** Answers marked `idempotent-replayed: true`. */
	readonly replays: number;
	readonly startMono: number;
	readonly endMono: number;
}

/** Counters of the running clients. */
interface CommandLoadStats {
	ops: number;
	ok: number;
	unknown: number;
	rejected: number;
	notWritten: number;
	retries: number;
}

/** Running clients. */
export interface CommandLoad {
	readonly stats: CommandLoadStats;
	/** Stops new operations; each client finishes (retries) its current one within `drainMs`. */
	stop(drainMs: number): Promise<void>;
}

/** Options of {@link startCommandLoad}. */
export interface CommandLoadOptions {
	readonly clients: number;
	readonly workspaces: readonly number[];
	readonly pauseMs: number;
	/** How long one request may take before it counts as unanswered. */
	readonly requestTimeoutMs: number;
	/** How long a client retries one operation before it gives up (outcome `unknown`/`not-written`). */
	readonly opTimeoutMs: number;
}

interface Register {
	readonly wsid: number;
	readonly id: number;
	value: number;
}

const MAX_REDIRECTS = 5;

/** Parses `Retry-After` seconds, capped so a client keeps probing. */
const retryAfterMs = (res: Response): number => {
	const s = Number(res.headers.get("retry-after"));
	return Number.isFinite(s) && s > 0 ? Math.min(1_000, s * 1000) : 200;
};

/**
 * Starts the clients. Each sends one operation at a time to a random live host (or where the last
 * 421 pointed), and writes its record when the operation ends.
 *
 * @example
 * ```ts
 * const load = startCommandLoad(hosts, openLineFile("history.jsonl"), options, rng.fork("clients"));
 * await load.stop(30_000);
 * ```
 */
export function startCommandLoad(
	hosts: readonly ChaosHost[],
	history: LineFile,
	options: CommandLoadOptions,
	rng: Rng,
): CommandLoad {
	const stats: CommandLoadStats = {
		ops: 0,
		ok: 0,
		unknown: 0,
		rejected: 0,
		notWritten: 0,
		retries: 0,
	};
	const stopping = new AbortController();
	let drainUntil = Number.POSITIVE_INFINITY;
	const dead = new AbortController(); // after the drain: abandon requests in flight

	const liveBase = (r: Rng): string | undefined => {
		const ports = hosts.flatMap((h) => (h.current?.port === undefined ? [] : [h.current.port]));
		return ports.length === 0 ? undefined : `http://127.0.0.1:${r.pick(ports)}`;
	};

	const client = async (id: number): Promise<void> => {
		const r = rng.fork(`client-${id}`);
		const registers: Register[] = [];
		let n = 0;
		while (!stopping.signal.aborted) {
			const op = `c${id}o${++n}`;
			const update = registers.length > 0 && r.chance(0.5);
			const reg = update ? r.pick(registers) : undefined;
			const wsid = reg?.wsid ?? (r.pick(options.workspaces) as number);
			const value = reg === undefined ? undefined : reg.value + 1;
			if (reg !== undefined && value !== undefined) reg.value = value;
			const path =
				reg === undefined
					? `/api/v2/apps/vvm/demo/workspaces/${wsid}/docs/${TABLE}`
					: `/api/v2/apps/vvm/demo/workspaces/${wsid}/docs/${TABLE}/${reg.id}`;
			const body = JSON.stringify(reg === undefined ? { name: op } : { email: `${op}:${value}` });
			const attempts: string[] = [];
			const okAnswers: string[] = [];
			let replays = 0;
			let outcome: OpOutcome | undefined;
			let maybeWritten = false;
			let result: OpRecord["result"];
			let target: string | undefined;
			const startMono = monoMs();
			const giveUpAt = Math.min(startMono + options.opTimeoutMs, drainUntil);
			stats.ops++;
			for (let hop = 0; outcome === undefined; hop++) {
				if (monoMs() > Math.min(giveUpAt, drainUntil) || dead.signal.aborted) {
					outcome = maybeWritten ? "unknown" : "not-written";
					break;
				}
				if (attempts.length > 0) stats.retries++;
				const base = target ?? liveBase(r);
				target = undefined;
				if (base === undefined) {
					await sleep(50, dead.signal);
					continue;
				}
				let res: Response;
				try {
					res = await fetch(`${base}${path}`, {
						method: reg === undefined ? "POST" : "PATCH",
						headers: { "content-type": "application/json", "idempotency-key": `"${op}"` },
						body,
						redirect: "manual",
						signal: AbortSignal.any([AbortSignal.timeout(options.requestTimeoutMs), dead.signal]),
					});
				} catch (error) {
					// Refused: nothing reached a host. Anything else may have reached one.
					const refused = /ECONNREFUSED/.test(
						String((error as { cause?: unknown }).cause ?? error),
					);
					attempts.push(refused ? "refused" : "net");
					if (!refused) maybeWritten = true;
					await sleep(50, dead.signal);
					continue;
				}
				const text = await res.text().catch(() => "");
				attempts.push(String(res.status));
				if (res.status === 200 || res.status === 201) {
					okAnswers.push(text);
					if (res.headers.get("idempotent-replayed") === "true") replays++;
					const answer = JSON.parse(text) as NonNullable<OpRecord["result"]>;
					result = {
						CurrentWLogOffset: answer.CurrentWLogOffset,
						NewIDs: answer.NewIDs,
						plogOffset: Number(res.headers.get("vvm-plog-offset")),
					};
					outcome = "ok";
					break;
				}
				if (res.status === 421) {
					const location = res.headers.get("location");
					if (location !== null && hop < MAX_REDIRECTS) target = new URL(location).origin;
					continue;
				}
				let committed: unknown;
				try {
					committed = (JSON.parse(text) as { committed?: unknown }).committed;
				} catch {
					committed = "unknown";
				}
				if (res.status === 503 || res.status === 409) {
					await sleep(retryAfterMs(res), dead.signal);
					continue;
				}
				if (res.status >= 500) {
					// May be written (committed "yes"/"unknown"): only the same key may be sent again.
					if (committed !== "no") maybeWritten = true;
					await sleep(100, dead.signal);
					continue;
				}
				outcome = maybeWritten ? "unknown" : "rejected";
			}
			if (outcome === "ok" && reg === undefined && result !== undefined) {
				const created = result.NewIDs["1"];
				if (created !== undefined) registers.push({ wsid, id: created, value: 0 });
			}
			const ended = outcome as OpOutcome;
			stats[ended === "not-written" ? "notWritten" : ended]++;
			const record: OpRecord = {
				client: id,
				op,
				kind: reg === undefined ? "create" : "update",
				wsid,
				...(reg === undefined ? {} : { id: reg.id, value: value as number }),
				outcome: ended,
				...(result === undefined ? {} : { result }),
				okAnswers,
				attempts,
				replays,
				startMono,
				endMono: monoMs(),
			};
			history.write(JSON.stringify(record));
			if (options.pauseMs > 0) await sleep(options.pauseMs, stopping.signal);
		}
	};

	const loops = Array.from({ length: options.clients }, (_, i) => client(i + 1));
	return {
		stats,
		async stop(drainMs) {
			drainUntil = monoMs() + drainMs;
			stopping.abort();
			const timer = setTimeout(() => dead.abort(), drainMs + 1_000);
			await Promise.allSettled(loops);
			clearTimeout(timer);
		},
	};
}
