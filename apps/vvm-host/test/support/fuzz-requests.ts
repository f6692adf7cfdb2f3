// Requests for the host's fuzz test, generated from its OpenAPI document: each operation's path,
// query and header parameters and body, with values drawn from their schemas (valid ones, their
// edges, and what the schemas exclude), plus requests no schema describes (bad targets, methods,
// encodings, repeated headers, truncated and slow sends). Seeded: one seed, one sequence.
import type { OperationKey } from "../../src/http/openapi.ts";

/** A small seeded PRNG (mulberry32): the same seed draws the same requests. */
export class Rng {
	#s: number;
	constructor(seed: number) {
		this.#s = seed >>> 0;
	}
	next(): number {
		this.#s = (this.#s + 0x6d2b79f5) >>> 0;
		let t = this.#s;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
	}
	int(n: number): number {
		return Math.floor(this.next() * n);
	}
	pick<T>(items: readonly T[]): T {
		return items[this.int(items.length)] as T;
	}
	chance(p: number): boolean {
		return this.next() < p;
	}
}

/** One generated request. `raw` requests go over a socket as they are (the HTTP client would refuse them). */
export type FuzzRequest =
	| {
			readonly kind: "http";
			readonly method: string;
			readonly path: string;
			readonly headers: Record<string, string | string[]>;
			readonly body?: Buffer;
			/** The workspace a write targets, when its path names one. */
			readonly wsid?: number;
			readonly write: boolean;
	  }
	| {
			readonly kind: "raw";
			readonly bytes: Buffer;
			readonly slow: boolean;
			readonly label: string;
	  };

interface Schema {
	readonly type?: string;
	readonly const?: unknown;
	readonly minimum?: number;
	readonly maximum?: number;
	readonly pattern?: string;
	readonly maxLength?: number;
}
interface Parameter {
	readonly name: string;
	readonly in: "path" | "query" | "header";
	readonly required?: boolean;
	readonly schema: Schema;
}
interface Operation {
	readonly parameters?: readonly Parameter[];
	readonly requestBody?: unknown;
}

const TABLES = [
	"app1pkg.Customer",
	"app1pkg.Note",
	"app1pkg.Address",
	"app1pkg.Invoice",
	"app1pkg.Nope",
	"sys.CUD",
];
const COMMANDS = ["sys.CUD", "app1pkg.Nope", "sys.Nothing"];
const JUNK = [
	"",
	"-1",
	"0",
	"1.5",
	"1e3",
	"abc",
	"%zz",
	"%00",
	"9".repeat(30),
	"ä",
	"..",
	"%2e%2e",
	" ",
];

function integerFor(rng: Rng, s: Schema): string {
	const min = s.minimum ?? 0;
	const max = Math.min(s.maximum ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
	if (rng.chance(0.12)) return rng.pick([String(min - 1), String(max + 1), ...JUNK]);
	if (rng.chance(0.1)) return String(rng.pick([min, max]));
	if (min >= 1000) return String(min + rng.int(Math.min(1_000_000, max - min)));
	// Workspace IDs and offsets: a few small ones, so writes and reads meet.
	return String(min + rng.int(Math.min(40, max - min + 1)));
}

function stringFor(rng: Rng, p: Parameter): string {
	const s = p.schema;
	if (s.const !== undefined)
		return rng.chance(0.95) ? String(s.const) : rng.pick(["x", "VVM", "%76vm"]);
	if (p.name === "table") return rng.chance(0.9) ? rng.pick(TABLES) : rng.pick(JUNK);
	if (p.name === "command") return rng.chance(0.9) ? rng.pick(COMMANDS) : rng.pick(JUNK);
	if (p.name === "id")
		return integerFor(rng, { minimum: 322_685_000_131_072, maximum: 322_685_000_131_200 });
	return rng.pick(JUNK);
}

function valueFor(rng: Rng, p: Parameter): string {
	if (p.name === "id") return stringFor(rng, p);
	return p.schema.type === "integer" ? integerFor(rng, p.schema) : stringFor(rng, p);
}

function fieldValue(rng: Rng): unknown {
	switch (rng.int(9)) {
		case 0:
			return rng.pick(["Ada", "", "é\u0000x", "x".repeat(rng.int(5000)), "\u{1F600}"]);
		case 1:
			return rng.int(1000) - 500;
		case 2:
			return rng.chance(0.5);
		case 3:
			return null;
		case 4:
			return [1, "a"];
		case 5:
			return { nested: 1 };
		case 6:
			return 1e308 * 10; // Infinity becomes null in JSON
		case 7:
			return Number.MAX_SAFE_INTEGER + 2;
		default:
			return `v${rng.int(100)}`;
	}
}

function bodyFor(rng: Rng, command: boolean): Buffer {
	if (rng.chance(0.08))
		return Buffer.from(rng.pick(["", "{", "[]", "null", "1", '"x"', '{"a":', "{}".repeat(100)]));
	if (rng.chance(0.02))
		return Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc1, 0xe9]), Buffer.from('"}')]);
	if (rng.chance(0.005)) return Buffer.alloc(300 * 1024, 0x20); // over the 256 KiB bound
	if (command) {
		const cuds = Array.from({ length: rng.int(4) }, (_, i) => ({
			fields: {
				"sys.ID": rng.chance(0.9) ? i + 1 : rng.pick([0, -1, "x", 322_685_000_131_072]),
				"sys.QName": rng.pick(TABLES),
				...(rng.chance(0.5) ? { name: fieldValue(rng) } : {}),
				...(rng.chance(0.2) ? { "sys.ParentID": 1, city: fieldValue(rng) } : {}),
			},
		}));
		return Buffer.from(
			JSON.stringify(rng.chance(0.9) ? { cuds } : { args: { x: fieldValue(rng) } }),
		);
	}
	const fields: Record<string, unknown> = {};
	for (const name of ["name", "email", "vip", "text", "sys.ID", "nope"])
		if (rng.chance(name === "name" ? 0.85 : 0.15)) fields[name] = fieldValue(rng);
	return Buffer.from(JSON.stringify(fields));
}

function idempotencyHeader(rng: Rng): string | string[] | undefined {
	if (!rng.chance(0.3)) return undefined;
	const key = `k${rng.int(50)}`; // few keys: retries and reuse both happen
	return rng.pick<string | string[]>([
		key,
		`"${key}"`,
		[key, `${key}b`],
		"",
		'"',
		"a\\b",
		"x".repeat(300),
	]);
}

/**
 * Builds the generator of one fuzz run over `doc`'s operations.
 *
 * @example
 * ```ts
 * const next = fuzzRequests(openApiDocument("x"), new Rng(1));
 * ```
 */
export function fuzzRequests(
	doc: { readonly paths: Readonly<Record<string, Readonly<Record<string, unknown>>>> },
	rng: Rng,
): () => FuzzRequest {
	const ops: Array<OperationKey & { readonly op: Operation }> = Object.entries(doc.paths).flatMap(
		([path, item]) =>
			Object.entries(item).map(([method, op]) => ({ path, method, op: op as Operation })),
	);
	const api = ops.filter((o) => o.path.startsWith("/api/"));
	return () => {
		if (rng.chance(0.03)) return rawRequest(rng);
		// Half the requests are valid, so writes run (and the storage check has work); half are
		// drawn from everything the schemas allow and exclude.
		if (rng.chance(0.5)) return validRequest(rng);
		// Mostly the API (its writes and reads are what can break storage), sometimes the rest.
		const { path, method, op } = rng.chance(0.85) ? rng.pick(api) : rng.pick(ops);
		const params = op.parameters ?? [];
		let target = path;
		let wsid: number | undefined;
		const query: string[] = [];
		const headers: Record<string, string | string[]> = {};
		for (const p of params) {
			if (p.in === "path") {
				const value = valueFor(rng, p);
				if (p.name === "wsid" && /^[0-9]{1,15}$/.test(value)) wsid = Number(value);
				target = target.replace(`{${p.name}}`, encodeURIComponent(value));
			} else if (p.in === "query") {
				if (rng.chance(0.6)) query.push(`${p.name}=${encodeURIComponent(valueFor(rng, p))}`);
			} else if (p.name === "Idempotency-Key") {
				const key = idempotencyHeader(rng);
				if (key !== undefined) headers["idempotency-key"] = key;
			}
		}
		if (rng.chance(0.05)) query.push(rng.pick(["x=1", "count", "offset=&count=", "%zz=1"]));
		const chosen = rng.chance(0.04)
			? rng.pick(["GET", "POST", "PATCH", "PUT", "DELETE", "OPTIONS", "HEAD"])
			: method.toUpperCase();
		const write = ["POST", "PATCH"].includes(chosen) && path.startsWith("/api/");
		if (rng.chance(0.1))
			headers["content-type"] = rng.pick(["text/plain", "application/json; charset=latin1", "x"]);
		if (rng.chance(0.05)) headers.authorization = rng.pick(["Bearer x", "Basic y", "Bearer"]);
		const body =
			chosen === "GET" || chosen === "HEAD" ? undefined : bodyFor(rng, path.includes("/commands/"));
		return {
			kind: "http",
			method: chosen,
			path: query.length === 0 ? target : `${target}?${query.join("&")}`,
			headers,
			...(body === undefined ? {} : { body }),
			...(wsid === undefined ? {} : { wsid }),
			write,
		};
	};
}

const WS = "/api/v2/apps/vvm/demo/workspaces";
const CREATE = `${WS}/1001/docs/app1pkg.Customer`;
/** The first record ID of a workspace (`@vvm/cp`: 322685000131072 + n). */
const FIRST_ID = 322_685_000_131_072;

/** A request the host accepts (unless a key collides): creates, updates, commands and reads. */
function validRequest(rng: Rng): FuzzRequest {
	const wsid = 1000 + rng.int(24);
	const key = rng.chance(0.3) ? { "idempotency-key": `"v${wsid}-${rng.int(200)}"` } : {};
	const json = (v: unknown) => Buffer.from(JSON.stringify(v));
	const customer = () => ({
		name: `n${rng.int(1000)}`,
		...(rng.chance(0.5) ? { email: `e${rng.int(100)}@x` } : {}),
		...(rng.chance(0.5) ? { vip: rng.chance(0.5) } : {}),
	});
	const id = FIRST_ID + rng.int(40);
	switch (rng.int(6)) {
		case 0:
		case 1:
			return {
				kind: "http",
				method: "POST",
				path: `${WS}/${wsid}/docs/app1pkg.Customer`,
				headers: key,
				body: json(customer()),
				wsid,
				write: true,
			};
		case 2:
			return {
				kind: "http",
				method: "PATCH",
				path: `${WS}/${wsid}/docs/app1pkg.Customer/${id}`,
				headers: key,
				body: json({ vip: rng.chance(0.5) }),
				wsid,
				write: true,
			};
		case 3:
			return {
				kind: "http",
				method: "POST",
				path: `${WS}/${wsid}/commands/sys.CUD`,
				headers: key,
				body: json({
					cuds: [
						{ fields: { "sys.ID": 1, "sys.QName": "app1pkg.Customer", ...customer() } },
						{
							fields: {
								"sys.ID": 2,
								"sys.QName": "app1pkg.Address",
								"sys.ParentID": 1,
								city: "Oslo",
							},
						},
					],
				}),
				wsid,
				write: true,
			};
		case 4:
			return {
				kind: "http",
				method: "GET",
				path: `${WS}/${wsid}/docs/app1pkg.Customer/${id}`,
				headers: {},
				wsid,
				write: false,
			};
		default:
			return {
				kind: "http",
				method: "GET",
				path: `${WS}/${wsid}/wlog?offset=${1 + rng.int(20)}&count=${1 + rng.int(50)}`,
				headers: {},
				wsid,
				write: false,
			};
	}
}

function rawRequest(rng: Rng): FuzzRequest {
	const body = '{"name":"Ada"}';
	const cases: Array<[string, string | Buffer]> = [
		["bad target //", "GET // HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
		["bad target //a:99999/x", "GET //a:99999/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
		["bad target *", "GET * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
		["absolute target", "GET http://other/metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
		["long target", `GET /${"a".repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`],
		["space in target", "GET /a b HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
		["no version", "GET /healthz\r\n\r\n"],
		["HTTP/1.0", "GET /healthz HTTP/1.0\r\n\r\n"],
		["garbage", "\u0000\u0001\u0002 not http\r\n\r\n"],
		[
			"truncated body",
			`POST ${CREATE} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{"na`,
		],
		[
			"bad chunked",
			`POST ${CREATE} HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nx\r\n0\r\n\r\n`,
		],
		[
			"two lengths",
			`POST ${CREATE} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 14\r\nContent-Length: 15\r\n\r\n${body}`,
		],
		[
			"two keys",
			`POST ${CREATE} HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: a\r\nIdempotency-Key: b\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
		],
		[
			"huge header",
			`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: ${"a".repeat(20_000)}\r\n\r\n`,
		],
		[
			"latin1 body",
			Buffer.concat([
				Buffer.from(
					`POST ${CREATE} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 13\r\n\r\n{"name":"`,
				),
				Buffer.from([0xc1, 0xe9]),
				Buffer.from('"}'),
			]),
		],
	];
	const [label, bytes] = rng.pick(cases);
	return {
		kind: "raw",
		bytes: Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes, "latin1"),
		slow: rng.chance(0.1),
		label,
	};
}
