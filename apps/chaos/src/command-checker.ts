// The commands workload's checker: what the clients were told (history.jsonl) against what the
// storage holds once the run is over, read directly (not through a host). It proves, or reports
// the counterexample:
// - no acknowledged create or update lost: its event is in the logs, applied, with the answer's
//   WLog offset and record ID;
// - no record ID or WLog offset given to two commands (among acknowledged answers, and in storage:
//   `checkCpStorage` of @vvm/cp);
// - no command applied twice (its payload carries its idempotency key: one applied event at most);
// - an answer that said "nothing was written" (4xx, or 503 on every attempt) was true;
// - every replay of an idempotency key repeats the first answer;
// - no register below its last acknowledged value, and its value is one a client sent;
// - no event whose payload no client sent;
// - no reverted update, no orphan record, dense logs (`checkCpStorage`).
import type { ScannedEvent } from "@vvm/cp/testing";
import { checkCpStorage, readCpRecord, scanCpEvents } from "@vvm/cp/testing";
import type { TTLStorage } from "@vvm/ttlstorage";
import type { OpRecord } from "./command-load.ts";

/** An update's payload: `op:value` in `email` (the op is its idempotency key). */
function updatePayload(email: unknown): { op: string; value: number } | undefined {
	const m = typeof email === "string" ? /^(c\d+o\d+):(\d+)$/.exec(email) : null;
	return m === null ? undefined : { op: m[1] as string, value: Number(m[2]) };
}

/** A register as stored: its name (the create's key) and the last update's key and value. */
async function readRegister(
	storage: TTLStorage,
	appId: number,
	wsid: number,
	id: number,
): Promise<{ name: unknown; op?: string; value: number } | undefined> {
	const f = await readCpRecord({ storage, appId }, wsid, id);
	if (f === undefined) return undefined;
	return { name: f.name, ...(updatePayload(f.email) ?? { value: 0 }) };
}

/**
 * The least share of a run's operations that must be acknowledged for its check to count: every
 * check here is about acknowledged answers, so a run whose hosts answered nothing (or almost
 * nothing) "ok" passes them all while checking nothing (found by review: a run of 500 operations
 * all refused with 503 passed). Measured runs acknowledge 85–99 % under all fault kinds (README,
 * "The commands workload"); a quarter is far below that and far above a host that never commits.
 */
export const MIN_ACKED_SHARE = 0.25;

/**
 * Why a history of `ops` operations, `acknowledged` of them "ok", checked too little to be a pass
 * (none, or below {@link MIN_ACKED_SHARE}); `undefined` when it checked enough.
 */
export function tooLittleAcknowledged(ops: number, acknowledged: number): string | undefined {
	if (ops === 0) return "no client operation at all: nothing was checked";
	if (acknowledged === 0)
		return `no operation acknowledged (0 of ${ops}): nothing acknowledged was checked`;
	if (acknowledged / ops < MIN_ACKED_SHARE)
		return `too few operations acknowledged: ${acknowledged} of ${ops} (${((acknowledged * 100) / ops).toFixed(1)} %, below ${MIN_ACKED_SHARE * 100} %)`;
	return undefined;
}

/** What the checker found. */
export interface CommandReport {
	/** No anomaly, and enough operations acknowledged ({@link CommandReport.tooLittle}). */
	readonly ok: boolean;
	/** Why the run checked too little to pass ({@link tooLittleAcknowledged}), if it did. */
	readonly tooLittle?: string;
	readonly ops: number;
	readonly creates: number;
	readonly updates: number;
	readonly acknowledged: number;
	readonly unknown: number;
	readonly rejected: number;
	readonly notWritten: number;
	/** Acknowledged answers that were replays of an idempotency key. */
	readonly replays: number;
	/** Ops whose client retried at least once. */
	readonly retried: number;
	/** Unknown ops whose event is in the logs (applied once), and those that never were. */
	readonly unknownApplied: number;
	readonly events: number;
	readonly markedEvents: number;
	/** Every violation, one line each (empty when ok). */
	readonly anomalies: readonly string[];
	/** Counts per kind of anomaly. */
	readonly anomalyKinds: Readonly<Record<string, number>>;
	/** What `checkCpStorage` reported. */
	readonly storageProblems: readonly string[];
}

/** The idempotency key an event's payload carries (`name` of a create, `email` `op:value` of an update). */
function payloadOf(e: ScannedEvent): { op: string; value?: number } | undefined {
	const cud = e.cuds[0];
	if (e.cuds.length !== 1 || cud === undefined) return undefined;
	if (cud.isNew) {
		const name = cud.fields.name;
		return typeof name === "string" ? { op: name } : undefined;
	}
	return updatePayload(cud.fields.email);
}

/**
 * Checks a run's history against its storage.
 *
 * @example
 * ```ts
 * const report = await checkCommandHistory(ops, storage, { appId: 1, partitions: 8 });
 * ```
 */
export async function checkCommandHistory(
	ops: readonly OpRecord[],
	storage: TTLStorage,
	options: { readonly appId: number; readonly partitions: number },
): Promise<CommandReport> {
	const anomalies: string[] = [];
	const kinds: Record<string, number> = {};
	const flag = (kind: string, line: string): void => {
		anomalies.push(`${kind}: ${line}`);
		kinds[kind] = (kinds[kind] ?? 0) + 1;
	};
	const byOp = new Map(ops.map((o) => [o.op, o]));
	const acked = ops.filter((o) => o.outcome === "ok");

	// Dense logs, no reused numbers, no reverted update, no orphan, every acknowledged answer
	// readable as given (its PLog offset from the answer's vvm-plog-offset header).
	const storageCheck = await checkCpStorage({
		storage,
		...options,
		acknowledged: acked.flatMap((o) =>
			o.result === undefined ? [] : [{ wsid: o.wsid, result: o.result }],
		),
	});

	// Applied events per op (marked ones are not applied).
	const events = await scanCpEvents({ storage, ...options });
	const applied = new Map<string, ScannedEvent[]>();
	for (const e of events) {
		const p = payloadOf(e);
		if (p === undefined || !byOp.has(p.op)) {
			flag("foreign-event", `PLog ${e.partitionId}/${e.plogOffset}: a payload no client sent`);
			continue;
		}
		const op = byOp.get(p.op) as OpRecord;
		if (
			op.wsid !== e.wsid ||
			(op.kind === "update" && (e.cuds[0]?.id !== op.id || p.value !== op.value)) ||
			(op.kind === "create") !== e.cuds[0]?.isNew
		)
			flag(
				"foreign-event",
				`PLog ${e.partitionId}/${e.plogOffset}: ${p.op}'s key with another payload`,
			);
		if (e.idempotencyKey !== p.op)
			flag(
				"foreign-event",
				`PLog ${e.partitionId}/${e.plogOffset}: ${p.op} without its idempotency key`,
			);
		if (e.corrupted) continue;
		const list = applied.get(p.op) ?? [];
		list.push(e);
		applied.set(p.op, list);
	}

	const wlogTaken = new Map<string, string>();
	const idTaken = new Map<string, string>();
	let replays = 0;
	let unknownApplied = 0;
	for (const o of ops) {
		const mine = applied.get(o.op) ?? [];
		if (mine.length > 1)
			flag(
				"applied-twice",
				`${o.op} (${o.kind} ws ${o.wsid}) is in ${mine.length} events: PLog ${mine.map((e) => `${e.partitionId}/${e.plogOffset}`).join(", ")}`,
			);
		for (const a of o.attempts)
			if (/^4\d\d$/.test(a) && a !== "421" && a !== "409")
				flag("false-refusal", `${o.op}: a valid request was answered ${a}`);
		replays += o.replays;
		switch (o.outcome) {
			case "ok": {
				const r = o.result;
				const e = mine[0];
				if (e === undefined || r === undefined) {
					flag(
						"lost",
						`${o.op} (${o.kind} ws ${o.wsid}) was acknowledged, no applied event has it`,
					);
					break;
				}
				if (e.wlogOffset !== r.CurrentWLogOffset)
					flag(
						"wrong-answer",
						`${o.op}: answered WLog offset ${r.CurrentWLogOffset}, its event has ${e.wlogOffset}`,
					);
				if (o.kind === "create" && e.cuds[0]?.id !== r.NewIDs["1"])
					flag(
						"wrong-answer",
						`${o.op}: answered ID ${r.NewIDs["1"]}, its event created ${e.cuds[0]?.id}`,
					);
				if (new Set(o.okAnswers).size > 1)
					flag("replay-differs", `${o.op}: ${o.okAnswers.length} answers, not all the same`);
				const w = `${o.wsid}/${r.CurrentWLogOffset}`;
				const prevW = wlogTaken.get(w);
				if (prevW !== undefined)
					flag("reused-offset", `WLog ${w} acknowledged to ${prevW} and ${o.op}`);
				wlogTaken.set(w, o.op);
				const id = r.NewIDs["1"];
				if (o.kind === "create" && id !== undefined) {
					const k = `${o.wsid}/${id}`;
					const prev = idTaken.get(k);
					if (prev !== undefined)
						flag("reused-id", `record ${k} acknowledged to ${prev} and ${o.op}`);
					idTaken.set(k, o.op);
				}
				break;
			}
			case "rejected":
			case "not-written":
				if (mine.length > 0)
					flag(
						"false-not-written",
						`${o.op}: every answer said nothing was written (${o.attempts.join(",")}), yet PLog ${mine[0]?.partitionId}/${mine[0]?.plogOffset} applied it`,
					);
				break;
			case "unknown":
				if (mine.length > 0) unknownApplied++;
				break;
		}
	}

	// Registers: the final value of every acknowledged create's record.
	const updatesOf = new Map<string, OpRecord[]>();
	for (const o of ops)
		if (o.kind === "update") {
			const k = `${o.wsid}/${o.id}`;
			const list = updatesOf.get(k) ?? [];
			list.push(o);
			updatesOf.set(k, list);
		}
	for (const o of acked) {
		if (o.kind !== "create") continue;
		const id = o.result?.NewIDs["1"];
		const k = `${o.wsid}/${id}`;
		const ackedValues = (updatesOf.get(k) ?? [])
			.filter((u) => u.outcome === "ok")
			.map((u) => u.value as number);
		const maxAcked = ackedValues.length === 0 ? 0 : Math.max(...ackedValues);
		const stored = await readRegister(storage, options.appId, o.wsid, id as number);
		if (stored === undefined) {
			flag("lost", `register ${k} (${o.op}) is gone`);
			continue;
		}
		if (stored.name !== o.op)
			flag("foreign-value", `register ${k}: name ${stored.name}, created by ${o.op}`);
		if (stored.value < maxAcked)
			flag(
				"register-regressed",
				`register ${k}: holds ${stored.value}, ${maxAcked} was acknowledged`,
			);
		if (stored.op !== undefined) {
			const writer = byOp.get(stored.op);
			if (writer === undefined || writer.kind !== "update" || `${writer.wsid}/${writer.id}` !== k)
				flag("foreign-value", `register ${k}: holds a value ${stored.op} did not send to it`);
		}
	}

	for (const p of storageCheck.problems) flag("storage", p);
	const tooLittle = tooLittleAcknowledged(ops.length, acked.length);
	return {
		ok: anomalies.length === 0 && tooLittle === undefined,
		...(tooLittle === undefined ? {} : { tooLittle }),
		ops: ops.length,
		creates: ops.filter((o) => o.kind === "create").length,
		updates: ops.filter((o) => o.kind === "update").length,
		acknowledged: acked.length,
		unknown: ops.filter((o) => o.outcome === "unknown").length,
		rejected: ops.filter((o) => o.outcome === "rejected").length,
		notWritten: ops.filter((o) => o.outcome === "not-written").length,
		replays,
		retried: ops.filter((o) => o.attempts.length > 1).length,
		unknownApplied,
		events: events.length,
		markedEvents: events.filter((e) => e.corrupted).length,
		anomalies,
		anomalyKinds: kinds,
		storageProblems: storageCheck.problems,
	};
}
