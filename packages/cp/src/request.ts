import type {
	App,
	CompiledCommand,
	CompiledField,
	CompiledTable,
	CudInput,
	FieldValue,
} from "./app-def.ts";
import { CUD_COMMAND, MAX_RAW_ID, PARENT_FIELD } from "./app-def.ts";
import { badRequest, CpError } from "./errors.ts";
import { isWsid } from "./partition.ts";

/** Most CUDs in one command. */
export const MAX_CUDS = 1000;

/**
 * What every command request may carry.
 *
 * @example
 * ```ts
 * const base: CommandRequestBase = { idempotencyKey: "8e03978e-40d5-43e8-bc93-6894a57f9324" };
 * ```
 */
export interface CommandRequestBase {
	/**
	 * A client-chosen key (1..255 printable ASCII characters) that makes the command idempotent
	 * (the IETF `Idempotency-Key` header): sent again, on this or any later holder of the
	 * partition, it answers the first execution's result and writes nothing, for the key's lifetime
	 * (`idempotencyTtlSeconds`). The same key with a different request is refused
	 * (`CP_IDEMPOTENCY_KEY_REUSED`); while the first is still running, `CP_IDEMPOTENCY_KEY_IN_FLIGHT`.
	 */
	readonly idempotencyKey?: string;
}

/**
 * Creates one record (API v2 `POST …/docs/{pkg}.{table}`). `fields` may carry a raw
 * `"sys.ID"` (default 1), which keys `NewIDs` in the result.
 *
 * @example
 * ```ts
 * const req: CreateRecordRequest = { wsid: 1001, table: "app1pkg.Customer", fields: { name: "Ada" } };
 * ```
 */
export interface CreateRecordRequest extends CommandRequestBase {
	readonly wsid: number;
	readonly table: string;
	readonly fields: Readonly<Record<string, unknown>>;
}

/**
 * Updates one record (API v2 `PATCH …/docs/{pkg}.{table}/{id}`): the given fields; `null` clears
 * an optional field.
 *
 * @example
 * ```ts
 * const req: UpdateRecordRequest = { wsid: 1001, table: "app1pkg.Customer", id: 322685000131072, fields: { vip: true } };
 * ```
 */
export interface UpdateRecordRequest extends CommandRequestBase {
	readonly wsid: number;
	readonly table: string;
	readonly id: number;
	readonly fields: Readonly<Record<string, unknown>>;
}

/**
 * Executes a command (API v2 `POST …/commands/{pkg}.{command}`): `sys.CUD` or an application
 * command, with CUDs in voedger's `c.sys.CUD` shape (raw IDs `1..65535` in creates; fields that
 * refer to a raw ID get the real one).
 *
 * @example
 * ```ts
 * const req: ExecuteCommandRequest = {
 *   wsid: 1001,
 *   command: "sys.CUD",
 *   cuds: [{ fields: { "sys.ID": 1, "sys.QName": "app1pkg.Customer", name: "Ada" } }],
 * };
 * ```
 */
export interface ExecuteCommandRequest extends CommandRequestBase {
	readonly wsid: number;
	readonly command: string;
	readonly args?: Readonly<Record<string, unknown>>;
	readonly cuds?: readonly CudInput[];
}

/**
 * The answer to a command, in the shape of API v2 (voedger's names).
 *
 * @example
 * ```ts
 * const r: CommandResult = { CurrentWLogOffset: 13, NewIDs: { "1": 322685000131072 } };
 * ```
 */
export interface CommandResult {
	/** The WLog offset of the command's event in its workspace. */
	readonly CurrentWLogOffset: number;
	/** Raw ID (as a string) → real ID of every record the command created. */
	readonly NewIDs: Readonly<Record<string, number>>;
	/** An application command's result. */
	readonly Result?: Readonly<Record<string, unknown>>;
	/** The PLog offset of the event (not part of API v2; for logs and the kill-test checker). */
	readonly plogOffset: number;
	/**
	 * `true` when the answer is the first execution's, replayed for its idempotency key: nothing
	 * was written this time (not part of API v2).
	 */
	readonly replayed?: true;
}

/** @internal A record to create. */
export interface PlannedCreate {
	readonly rawId: number;
	readonly table: CompiledTable;
	/** Validated fields; refs may still hold raw IDs. */
	readonly fields: Record<string, FieldValue>;
	readonly path: string;
}

/** @internal A record to update; `table` is known for the docs API, found by reading for CUDs. */
export interface PlannedUpdate {
	readonly id: number;
	readonly table: CompiledTable | undefined;
	/** Field values (`null` clears); validated against `table` once it is known. */
	readonly patch: Readonly<Record<string, unknown>>;
	readonly path: string;
}

/** @internal A validated request. */
export interface Plan {
	readonly wsid: number;
	readonly command: CompiledCommand;
	readonly args: Readonly<Record<string, FieldValue>> | undefined;
	readonly creates: PlannedCreate[];
	readonly updates: PlannedUpdate[];
}

const isObj = (v: unknown): v is Record<string, unknown> =>
	typeof v === "object" && v !== null && !Array.isArray(v);

const isRealId = (v: unknown): v is number =>
	typeof v === "number" && Number.isSafeInteger(v) && v > MAX_RAW_ID;

/** @internal Validates one value against its field. */
function checkValue(field: CompiledField, value: unknown, path: string): FieldValue {
	switch (field.type) {
		case "string":
			if (typeof value !== "string") throw badRequest(path, "must be a string");
			if (value.length > field.maxLength)
				throw badRequest(path, `is longer than ${field.maxLength} characters`);
			return value;
		case "int":
			if (typeof value !== "number" || !Number.isSafeInteger(value))
				throw badRequest(path, "must be an integer");
			return value;
		case "number":
			if (typeof value !== "number" || !Number.isFinite(value))
				throw badRequest(path, "must be a finite number");
			return value;
		case "bool":
			if (typeof value !== "boolean") throw badRequest(path, "must be true or false");
			return value;
		case "ref":
			if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1)
				throw badRequest(path, "must be a record ID (a raw ID 1..65535 or a real ID)");
			return value;
	}
}

function fieldOf(table: CompiledTable, name: string, path: string): CompiledField {
	const f = table.fields.get(name);
	if (f === undefined) throw badRequest(path, `unknown field of ${table.name}`);
	return f;
}

function checkCreateFields(
	table: CompiledTable,
	input: Readonly<Record<string, unknown>>,
	path: string,
): Record<string, FieldValue> {
	const out: Record<string, FieldValue> = {};
	for (const [name, value] of Object.entries(input)) {
		if (name === "sys.ID" || name === "sys.QName" || value === null) continue;
		const p = `${path}.${name}`;
		if (name.startsWith("sys.") && name !== PARENT_FIELD)
			throw badRequest(p, "is not a field that can be set");
		out[name] = checkValue(fieldOf(table, name, p), value, p);
	}
	for (const f of table.fields.values())
		if (f.required && out[f.name] === undefined)
			throw badRequest(`${path}.${f.name}`, `is required by ${table.name}`);
	return out;
}

/** @internal Validates an update's patch against the record's table; returns the new full state. */
export function applyPatch(
	table: CompiledTable,
	current: Readonly<Record<string, FieldValue>>,
	patch: Readonly<Record<string, unknown>>,
	path: string,
): Record<string, FieldValue> {
	if (table.immutable)
		throw new CpError("CP_NOT_ALLOWED", `${path}: ${table.kind} ${table.name} cannot be updated`, {
			field: path,
		});
	const next: Record<string, FieldValue> = { ...current };
	for (const [name, value] of Object.entries(patch)) {
		const p = `${path}.${name}`;
		if (name.startsWith("sys.")) throw badRequest(p, "cannot be updated");
		const field = fieldOf(table, name, p);
		if (value === null) {
			if (field.required) throw badRequest(p, `is required by ${table.name} and cannot be cleared`);
			delete next[name];
		} else next[name] = checkValue(field, value, p);
	}
	return next;
}

function checkPatchShape(patch: unknown, path: string): Readonly<Record<string, unknown>> {
	if (!isObj(patch)) throw badRequest(path, "must be an object of fields");
	if (Object.keys(patch).length === 0) throw badRequest(path, "nothing to update");
	return patch;
}

function checkRealId(id: unknown, path: string): number {
	if (!isRealId(id)) throw badRequest(path, `must be a real record ID (> ${MAX_RAW_ID})`);
	return id;
}

/**
 * @internal Validates CUDs (creates fully; updates as far as possible without reading the record).
 * `fromApp`: CUDs produced by an application command, which may create ODocs/ORecords.
 */
export function checkCuds(
	app: App,
	cuds: unknown,
	path: string,
	fromApp: boolean,
	into: { creates: PlannedCreate[]; updates: PlannedUpdate[] },
): void {
	if (!Array.isArray(cuds)) throw badRequest(path, "must be an array");
	if (into.creates.length + into.updates.length + cuds.length > MAX_CUDS)
		throw badRequest(path, `at most ${MAX_CUDS} CUDs per command`);
	cuds.forEach((cud: unknown, i) => {
		const p = `${path}[${i}]`;
		if (!isObj(cud)) throw badRequest(p, "must be an object");
		const fields = cud.fields;
		if (!isObj(fields)) throw badRequest(`${p}.fields`, "must be an object");
		if (cud["sys.ID"] !== undefined) {
			into.updates.push({
				id: checkRealId(cud["sys.ID"], `${p}.sys.ID`),
				table: undefined,
				patch: checkPatchShape(fields, `${p}.fields`),
				path: `${p}.fields`,
			});
			return;
		}
		const rawId = fields["sys.ID"];
		if (typeof rawId !== "number" || !Number.isInteger(rawId) || rawId < 1 || rawId > MAX_RAW_ID)
			throw badRequest(`${p}.fields.sys.ID`, `a new record needs a raw ID 1..${MAX_RAW_ID}`);
		const qname = fields["sys.QName"];
		if (typeof qname !== "string")
			throw badRequest(`${p}.fields.sys.QName`, "a new record needs its table");
		const table = app.table(qname);
		if (table === undefined)
			throw new CpError("CP_NOT_FOUND", `${p}.fields.sys.QName: no table ${qname}`, {
				field: `${p}.fields.sys.QName`,
			});
		if (table.immutable && !fromApp)
			throw new CpError(
				"CP_NOT_ALLOWED",
				`${p}.fields.sys.QName: ${table.kind} ${qname} is created by application commands only`,
				{ field: `${p}.fields.sys.QName` },
			);
		into.creates.push({
			rawId,
			table,
			fields: checkCreateFields(table, fields, `${p}.fields`),
			path: `${p}.fields`,
		});
	});
}

/**
 * @internal Checks raw IDs: unique among the creates, every raw reference names one of them, no
 * record updated twice. Updates whose table is not known yet are checked again once it is.
 */
export function checkRawIds(plan: Pick<Plan, "creates" | "updates">): void {
	const raws = new Set<number>();
	for (const c of plan.creates) {
		if (raws.has(c.rawId)) throw badRequest(`${c.path}.sys.ID`, `raw ID ${c.rawId} is used twice`);
		raws.add(c.rawId);
	}
	const checkRefs = (
		table: CompiledTable,
		values: Readonly<Record<string, unknown>>,
		path: string,
	): void => {
		for (const f of table.fields.values()) {
			const v = values[f.name];
			if (f.type === "ref" && typeof v === "number" && v <= MAX_RAW_ID && !raws.has(v))
				throw badRequest(`${path}.${f.name}`, `raw ID ${v} is not created by this command`);
		}
	};
	for (const c of plan.creates) checkRefs(c.table, c.fields, c.path);
	const updated = new Set<number>();
	for (const u of plan.updates) {
		if (updated.has(u.id)) throw badRequest(u.path, `record ${u.id} is updated twice`);
		updated.add(u.id);
		if (u.table !== undefined) checkRefs(u.table, u.patch, u.path);
	}
}

function checkArgs(
	command: CompiledCommand,
	args: unknown,
): Readonly<Record<string, FieldValue>> | undefined {
	if (args === undefined || args === null) {
		for (const f of command.args.values())
			if (f.required) throw badRequest(`args.${f.name}`, `is required by ${command.name}`);
		return undefined;
	}
	if (!isObj(args)) throw badRequest("args", "must be an object");
	const out: Record<string, FieldValue> = {};
	for (const [name, value] of Object.entries(args)) {
		const p = `args.${name}`;
		const f = command.args.get(name);
		if (f === undefined) throw badRequest(p, `unknown argument of ${command.name}`);
		if (value !== null) out[name] = checkValue(f, value, p);
	}
	for (const f of command.args.values())
		if (f.required && out[f.name] === undefined)
			throw badRequest(`args.${f.name}`, `is required by ${command.name}`);
	return command.args.size === 0 && Object.keys(out).length === 0 ? undefined : out;
}

function checkWsid(wsid: unknown): number {
	if (!isWsid(wsid)) throw badRequest("wsid", "must be a safe integer >= 1");
	return wsid;
}

function tableOf(app: App, name: unknown): CompiledTable {
	if (typeof name !== "string") throw badRequest("table", "must be a qualified name pkg.Name");
	const table = app.table(name);
	if (table === undefined)
		throw new CpError("CP_NOT_FOUND", `table: no table ${name}`, { field: "table" });
	return table;
}

function cudCommand(app: App): CompiledCommand {
	return app.commands.get(CUD_COMMAND) as CompiledCommand;
}

/** @internal Validates a create-record request. */
export function planCreate(app: App, req: CreateRecordRequest): Plan {
	if (!isObj(req)) throw badRequest("request", "must be an object");
	const wsid = checkWsid(req.wsid);
	const table = tableOf(app, req.table);
	if (table.immutable)
		throw new CpError(
			"CP_NOT_ALLOWED",
			`table: ${table.kind} ${table.name} is created by application commands only`,
			{
				field: "table",
			},
		);
	const fields = req.fields;
	if (!isObj(fields)) throw badRequest("fields", "must be an object");
	const rawId = fields["sys.ID"] ?? 1;
	if (typeof rawId !== "number" || !Number.isInteger(rawId) || rawId < 1 || rawId > MAX_RAW_ID)
		throw badRequest("fields.sys.ID", `must be a raw ID 1..${MAX_RAW_ID}`);
	if (fields["sys.QName"] !== undefined && fields["sys.QName"] !== table.name)
		throw badRequest("fields.sys.QName", `must be ${table.name} or absent`);
	const plan: Plan = {
		wsid,
		command: cudCommand(app),
		args: undefined,
		creates: [{ rawId, table, fields: checkCreateFields(table, fields, "fields"), path: "fields" }],
		updates: [],
	};
	checkRawIds(plan);
	return plan;
}

/** @internal Validates an update-record request. */
export function planUpdate(app: App, req: UpdateRecordRequest): Plan {
	if (!isObj(req)) throw badRequest("request", "must be an object");
	const wsid = checkWsid(req.wsid);
	const table = tableOf(app, req.table);
	if (table.immutable)
		throw new CpError("CP_NOT_ALLOWED", `table: ${table.kind} ${table.name} cannot be updated`, {
			field: "table",
		});
	const id = checkRealId(req.id, "id");
	const patch = checkPatchShape(req.fields, "fields");
	// Validate the patch now (no read needed): the stored fields only fill in the rest.
	applyPatch(table, {}, patch, "fields");
	const plan: Plan = {
		wsid,
		command: cudCommand(app),
		args: undefined,
		creates: [],
		updates: [{ id, table, patch, path: "fields" }],
	};
	checkRawIds(plan);
	return plan;
}

/** @internal Validates an execute-command request. */
export function planCommand(app: App, req: ExecuteCommandRequest): Plan {
	if (!isObj(req)) throw badRequest("request", "must be an object");
	const wsid = checkWsid(req.wsid);
	if (typeof req.command !== "string")
		throw badRequest("command", "must be a qualified name pkg.Name");
	const command = app.commands.get(req.command);
	if (command === undefined)
		throw new CpError("CP_NOT_FOUND", `command: no command ${req.command}`, { field: "command" });
	const args = checkArgs(command, req.args);
	const plan: Plan = { wsid, command, args, creates: [], updates: [] };
	if (req.cuds !== undefined) checkCuds(app, req.cuds, "cuds", false, plan);
	if (command.execute === undefined && plan.creates.length + plan.updates.length === 0)
		throw badRequest("cuds", `${CUD_COMMAND} needs at least one CUD`);
	checkRawIds(plan);
	return plan;
}
