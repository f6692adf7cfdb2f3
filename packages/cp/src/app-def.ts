import type { SeqID, SeqNumber, WSKind } from "@vvm/isequencer";

/**
 * Table kinds, as voedger's. CDoc/CRecord take IDs from the CRecord ID sequence; WDoc/WRecord and
 * ODoc/ORecord from the OWRecord ID sequence. Records (`*Record`) require `sys.ParentID`. ODocs
 * and ORecords are immutable and are created by application commands only.
 */
export type TableKind = "CDoc" | "CRecord" | "WDoc" | "WRecord" | "ODoc" | "ORecord";

/** Types of fields; `ref` holds a record ID (a raw ID of the same command is replaced by the real one). */
export type FieldType = "string" | "int" | "number" | "bool" | "ref";

/** A value stored in a field. */
export type FieldValue = string | number | boolean;

/**
 * One field of a table or of a command's arguments.
 *
 * @example
 * ```ts
 * const name: FieldDef = { type: "string", required: true, maxLength: 100 };
 * ```
 */
export interface FieldDef {
	readonly type: FieldType;
	readonly required?: boolean;
	/** Longest string in UTF-16 code units; default 1024 (`string` only). */
	readonly maxLength?: number;
}

/**
 * A table.
 *
 * @example
 * ```ts
 * const customer: TableDef = { kind: "CDoc", fields: { name: { type: "string", required: true } } };
 * ```
 */
export interface TableDef {
	readonly kind: TableKind;
	/** Fields other than `sys.ID`/`sys.QName`; records get `sys.ParentID` (required ref) added. */
	readonly fields: Readonly<Record<string, FieldDef>>;
}

/**
 * A sequence declared by the application, usable by its commands (`ctx.next(name)`).
 *
 * @example
 * ```ts
 * const invoiceNumber: SequenceDef = { id: 16, initial: 1000 };
 * ```
 */
export interface SequenceDef {
	/** Sequence ID, `16..65535` (1..15 are reserved for the built-in ones). Stored: keep it stable. */
	readonly id: SeqID;
	/** The first number (`>= 1`). */
	readonly initial: SeqNumber;
	/** Workspace kinds (names) that have it; default all. */
	readonly workspaceKinds?: readonly string[];
}

/**
 * A new or updated record in a command's CUDs, voedger `c.sys.CUD` shape: a create carries
 * `fields["sys.ID"]` (a raw ID `1..65535`) and `fields["sys.QName"]`; an update carries the real
 * `"sys.ID"` next to `fields`.
 *
 * @example
 * ```ts
 * const create: CudInput = { fields: { "sys.ID": 1, "sys.QName": "app1pkg.Customer", name: "Ada" } };
 * const update: CudInput = { "sys.ID": 322685000131072, fields: { name: "Ada L." } };
 * ```
 */
export interface CudInput {
	readonly "sys.ID"?: number;
	readonly fields: Readonly<Record<string, unknown>>;
}

/**
 * What an application command sees while it runs (inside the sequencing transaction).
 *
 * @example
 * ```ts
 * const n = await ctx.next("app1pkg.InvoiceNumber");
 * ```
 */
export interface CommandContext {
	readonly wsid: number;
	/** The validated arguments. */
	readonly args: Readonly<Record<string, FieldValue>>;
	/** The next number of an application sequence declared for the workspace's kind. */
	next(sequence: string): Promise<number>;
}

/**
 * What an application command produces: CUDs (raw IDs in creates, as a client sends them) and a
 * result returned to the caller.
 *
 * @example
 * ```ts
 * const out: CommandOutput = { cuds: [{ fields: { "sys.ID": 1, "sys.QName": "app1pkg.Invoice", number: 7 } }], result: { number: 7 } };
 * ```
 */
export interface CommandOutput {
	readonly cuds?: readonly CudInput[];
	readonly result?: Readonly<Record<string, unknown>>;
}

/**
 * An application command. Its `args` are validated before anything happens; `execute` runs after
 * the sequencing transaction started (it may take numbers of application sequences). If it
 * throws, or its output is invalid, nothing is written and the partition re-actualizes.
 *
 * @example
 * ```ts
 * const cmd: CommandDef = { args: { amount: { type: "number", required: true } }, execute: async (ctx) => ({}) };
 * ```
 */
export interface CommandDef {
	readonly args?: Readonly<Record<string, FieldDef>>;
	readonly execute: (ctx: CommandContext) => CommandOutput | Promise<CommandOutput>;
}

/**
 * An application definition: tables, workspace kinds, sequences, commands.
 *
 * @example
 * ```ts
 * const def: AppDefinition = {
 *   workspaceKinds: { "app1pkg.Workspace": 1 },
 *   wsKindOf: () => "app1pkg.Workspace",
 *   tables: { "app1pkg.Customer": { kind: "CDoc", fields: { name: { type: "string" } } } },
 * };
 * ```
 */
export interface AppDefinition {
	/** Workspace kind names to their IDs (`0..65535`, voedger: the QNameID of the descriptor). */
	readonly workspaceKinds: Readonly<Record<string, WSKind>>;
	/** The kind (a name of `workspaceKinds`) of a workspace. */
	readonly wsKindOf: (wsid: number) => string;
	/** Tables by qualified name `pkg.Name`. */
	readonly tables: Readonly<Record<string, TableDef>>;
	readonly sequences?: Readonly<Record<string, SequenceDef>>;
	/** Commands by qualified name `pkg.Name`; `sys.CUD` is built in. */
	readonly commands?: Readonly<Record<string, CommandDef>>;
}

/** Sequence ID of the WLog offset (built in, every workspace kind). */
export const SEQ_WLOG_OFFSET: SeqID = 1;
/** Sequence ID of CDoc/CRecord IDs (built in). */
export const SEQ_CRECORD_ID: SeqID = 2;
/** Sequence ID of WDoc/WRecord/ODoc/ORecord IDs (built in). */
export const SEQ_OWRECORD_ID: SeqID = 3;
/** The first WLog offset of a workspace (and the first PLog offset of a partition). */
export const FIRST_OFFSET = 1;
/** The first CDoc/CRecord ID of a workspace (seed 004: 64537 × 5e9 + 131072). */
export const FIRST_CRECORD_ID = 322_685_000_131_072;
/** The first WDoc/WRecord/ODoc/ORecord ID of a workspace (seed 004: 64536 × 5e9 + 131072). */
export const FIRST_OWRECORD_ID = 322_680_000_131_072;
/** Raw (client-side) IDs are `1..MAX_RAW_ID` (voedger `MaxRawRecordID`). */
export const MAX_RAW_ID = 0xffff;
/** The built-in command that applies client CUDs. */
export const CUD_COMMAND = "sys.CUD";
/** Field holding the parent of a record. */
export const PARENT_FIELD = "sys.ParentID";

const DEFAULT_MAX_LENGTH = 1024;
const QNAME = /^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Whether `name` is a qualified name (`pkg.Name`: two identifiers joined by a dot), the rule of
 * every table, command, sequence and workspace kind name; for callers that parse names from a
 * URL before they reach the command processor.
 *
 * @example
 * ```ts
 * isQName("app1pkg.Customer"); // true
 * isQName("Customer"); // false
 * ```
 */
export function isQName(name: string): boolean {
	return QNAME.test(name);
}
const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const FIELD_TYPES: readonly FieldType[] = ["string", "int", "number", "bool", "ref"];
const TABLE_KINDS: readonly TableKind[] = ["CDoc", "CRecord", "WDoc", "WRecord", "ODoc", "ORecord"];

/** A field after compilation. */
export interface CompiledField {
	readonly name: string;
	readonly type: FieldType;
	readonly required: boolean;
	readonly maxLength: number;
}

/** A table after compilation. */
export interface CompiledTable {
	readonly name: string;
	readonly kind: TableKind;
	/** The ID sequence of its records. */
	readonly idSeq: SeqID;
	readonly fields: ReadonlyMap<string, CompiledField>;
	/** Records of this table need `sys.ParentID`. */
	readonly isRecord: boolean;
	/** ODoc/ORecord: created by application commands only, never updated. */
	readonly immutable: boolean;
}

/** A command after compilation. */
export interface CompiledCommand {
	readonly name: string;
	readonly args: ReadonlyMap<string, CompiledField>;
	readonly execute: CommandDef["execute"] | undefined;
}

/**
 * A validated application definition, as {@link defineApp} returns it.
 *
 * @example
 * ```ts
 * const app: App = defineApp(def);
 * app.table("app1pkg.Customer")?.kind; // "CDoc"
 * ```
 */
export interface App {
	readonly tables: ReadonlyMap<string, CompiledTable>;
	readonly commands: ReadonlyMap<string, CompiledCommand>;
	/** Application sequences by name. */
	readonly sequences: ReadonlyMap<
		string,
		{ readonly id: SeqID; readonly kinds: ReadonlySet<WSKind> }
	>;
	/** For `@vvm/isequencer`: per workspace kind, sequence ID → initial value. */
	readonly seqTypes: ReadonlyMap<WSKind, ReadonlyMap<SeqID, SeqNumber>>;
	/** The workspace kind ID of a workspace (RangeError when the definition maps it to no kind). */
	wsKindOf(wsid: number): WSKind;
	table(name: string): CompiledTable | undefined;
}

function fail(path: string, message: string): never {
	throw new RangeError(`[@vvm/cp] app definition: ${path}: ${message}`);
}

function compileField(path: string, name: string, def: FieldDef): CompiledField {
	if (typeof def !== "object" || def === null) fail(path, "must be a field definition");
	if (!FIELD_TYPES.includes(def.type)) fail(path, `type must be one of ${FIELD_TYPES.join(", ")}`);
	const maxLength = def.maxLength ?? DEFAULT_MAX_LENGTH;
	if (!Number.isSafeInteger(maxLength) || maxLength < 1)
		fail(path, `maxLength must be a positive integer, got ${String(def.maxLength)}`);
	return { name, type: def.type, required: def.required === true, maxLength };
}

function compileFields(
	path: string,
	defs: Readonly<Record<string, FieldDef>> | undefined,
): Map<string, CompiledField> {
	const out = new Map<string, CompiledField>();
	if (defs === undefined) return out;
	if (typeof defs !== "object" || defs === null) fail(path, "must be an object of fields");
	for (const [name, def] of Object.entries(defs)) {
		if (!FIELD_NAME.test(name))
			fail(`${path}.${name}`, "field names are identifiers (sys.* are reserved)");
		out.set(name, compileField(`${path}.${name}`, name, def));
	}
	return out;
}

function compileTable(name: string, def: TableDef): CompiledTable {
	const path = `tables["${name}"]`;
	if (!QNAME.test(name)) fail(path, "table names are qualified: pkg.Name");
	if (typeof def !== "object" || def === null) fail(path, "must be a table definition");
	if (!TABLE_KINDS.includes(def.kind)) fail(path, `kind must be one of ${TABLE_KINDS.join(", ")}`);
	const fields = compileFields(`${path}.fields`, def.fields);
	const isRecord = def.kind.endsWith("Record");
	if (isRecord)
		fields.set(PARENT_FIELD, { name: PARENT_FIELD, type: "ref", required: true, maxLength: 0 });
	return {
		name,
		kind: def.kind,
		idSeq: def.kind === "CDoc" || def.kind === "CRecord" ? SEQ_CRECORD_ID : SEQ_OWRECORD_ID,
		fields,
		isRecord,
		immutable: def.kind === "ODoc" || def.kind === "ORecord",
	};
}

/**
 * Validates an application definition and compiles it. Mistakes throw a `RangeError`/`TypeError`
 * naming the path (e.g. `tables["app1pkg.X"].fields.n: type must be one of …`).
 *
 * Every workspace kind gets the built-in sequences with seed 004's initial values: WLog offset
 * from 1, CRecord IDs from 322685000131072, OWRecord IDs from 322680000131072; plus the
 * application's sequences of that kind.
 *
 * @example
 * ```ts
 * const app = defineApp({
 *   workspaceKinds: { "app1pkg.Workspace": 1 },
 *   wsKindOf: () => "app1pkg.Workspace",
 *   tables: { "app1pkg.Customer": { kind: "CDoc", fields: { name: { type: "string", required: true } } } },
 * });
 * ```
 */
export function defineApp(def: AppDefinition): App {
	if (typeof def !== "object" || def === null)
		throw new TypeError("[@vvm/cp] app definition is required");
	if (typeof def.wsKindOf !== "function")
		throw new TypeError("[@vvm/cp] app definition: wsKindOf must be a function");
	const kindIds = new Map<string, WSKind>();
	for (const [name, id] of Object.entries(def.workspaceKinds ?? {})) {
		if (!QNAME.test(name)) fail(`workspaceKinds["${name}"]`, "kind names are qualified: pkg.Name");
		if (!Number.isInteger(id) || id < 0 || id > 0xffff)
			fail(`workspaceKinds["${name}"]`, `must be an integer in 0..65535, got ${String(id)}`);
		if ([...kindIds.values()].includes(id)) fail(`workspaceKinds["${name}"]`, `duplicate ID ${id}`);
		kindIds.set(name, id);
	}
	if (kindIds.size === 0) fail("workspaceKinds", "declare at least one workspace kind");

	const tables = new Map<string, CompiledTable>();
	for (const [name, t] of Object.entries(def.tables ?? {})) tables.set(name, compileTable(name, t));

	const sequences = new Map<string, { id: SeqID; initial: SeqNumber; kinds: Set<WSKind> }>();
	const seqIds = new Set<number>();
	for (const [name, s] of Object.entries(def.sequences ?? {})) {
		const path = `sequences["${name}"]`;
		if (!QNAME.test(name)) fail(path, "sequence names are qualified: pkg.Name");
		if (!Number.isInteger(s?.id) || s.id < 16 || s.id > 0xffff)
			fail(path, `id must be an integer in 16..65535 (1..15 are built in), got ${String(s?.id)}`);
		if (seqIds.has(s.id)) fail(path, `duplicate sequence id ${s.id}`);
		if (!Number.isSafeInteger(s.initial) || s.initial < 1)
			fail(path, `initial must be a safe integer >= 1, got ${String(s.initial)}`);
		seqIds.add(s.id);
		const kinds = new Set<WSKind>();
		for (const k of s.workspaceKinds ?? [...kindIds.keys()]) {
			const id = kindIds.get(k);
			if (id === undefined) fail(path, `unknown workspace kind "${k}"`);
			kinds.add(id);
		}
		sequences.set(name, { id: s.id, initial: s.initial, kinds });
	}

	const seqTypes = new Map<WSKind, Map<SeqID, SeqNumber>>();
	for (const kind of kindIds.values()) {
		const m = new Map<SeqID, SeqNumber>([
			[SEQ_WLOG_OFFSET, FIRST_OFFSET],
			[SEQ_CRECORD_ID, FIRST_CRECORD_ID],
			[SEQ_OWRECORD_ID, FIRST_OWRECORD_ID],
		]);
		for (const s of sequences.values()) if (s.kinds.has(kind)) m.set(s.id, s.initial);
		seqTypes.set(kind, m);
	}

	const commands = new Map<string, CompiledCommand>();
	commands.set(CUD_COMMAND, { name: CUD_COMMAND, args: new Map(), execute: undefined });
	for (const [name, c] of Object.entries(def.commands ?? {})) {
		const path = `commands["${name}"]`;
		if (!QNAME.test(name) || name === CUD_COMMAND)
			fail(path, "command names are qualified: pkg.Name");
		if (typeof c?.execute !== "function") fail(path, "execute must be a function");
		commands.set(name, { name, args: compileFields(`${path}.args`, c.args), execute: c.execute });
	}

	const wsKindOf = def.wsKindOf;
	return {
		tables,
		commands,
		sequences,
		seqTypes,
		wsKindOf(wsid: number): WSKind {
			const name = wsKindOf(wsid);
			const id = kindIds.get(name);
			if (id === undefined)
				throw new RangeError(
					`[@vvm/cp] wsKindOf(${wsid}) returned an unknown kind "${String(name)}"`,
				);
			return id;
		},
		table: (name) => tables.get(name),
	};
}
