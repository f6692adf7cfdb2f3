import { afterEach, describe, expect, it } from "vitest";
import type { ApiV2ServerOptions } from "./support/api-v2-server.ts";
import { serveApiV2 } from "./support/api-v2-server.ts";

const SELF = "127.0.0.1:8081";
const CUSTOMER = "app1pkg.Customer";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
	for (const c of closers.splice(0)) await c();
});

/** The API v2 routes of a host at {@link SELF} whose partitions get token 42. */
const serve = (options: Omit<ApiV2ServerOptions, "self" | "fencingToken">) =>
	serveApiV2(
		{
			...options,
			self: SELF,
			fencingToken: (p) => (options.serving.includes(p) ? 42n : undefined),
		},
		closers,
	);

const post = (url: string, body: unknown, method = "POST") =>
	fetch(url, { method, body: typeof body === "string" ? body : JSON.stringify(body) });

describe("API v2 over the command processor", () => {
	it("creates, reads, updates, runs sys.CUD and reads the WLog, with the partition's fencing token", async () => {
		const { base, registry } = await serve({ serving: [1] });
		const ws = `${base}/1001`; // 1001 mod 4 = 1
		const created = await post(`${ws}/docs/${CUSTOMER}`, { name: "Ada" });
		expect(created.status).toBe(201);
		expect(await created.json()).toEqual({
			CurrentWLogOffset: 1,
			NewIDs: { "1": 322685000131072 },
		});
		expect(created.headers.get("vvm-fencing-token")).toBe("42");
		expect(created.headers.get("vvm-partition")).toBe("1");
		expect(created.headers.get("vvm-plog-offset")).toBe("1");
		const patched = await post(`${ws}/docs/${CUSTOMER}/322685000131072`, { vip: true }, "PATCH");
		expect(patched.status).toBe(200);
		expect(await patched.json()).toEqual({ CurrentWLogOffset: 2, NewIDs: {} });
		const read = await fetch(`${ws}/docs/${CUSTOMER}/322685000131072`);
		expect(await read.json()).toEqual({
			"sys.ID": 322685000131072,
			"sys.QName": CUSTOMER,
			name: "Ada",
			vip: true,
		});
		const cud = await post(`${ws}/commands/sys.CUD`, {
			cuds: [
				{ fields: { "sys.ID": 1, "sys.QName": CUSTOMER, name: "Bob" } },
				{
					fields: { "sys.ID": 2, "sys.QName": "app1pkg.Address", "sys.ParentID": 1, city: "Oslo" },
				},
			],
		});
		expect(cud.status).toBe(200);
		expect(await cud.json()).toEqual({
			CurrentWLogOffset: 3,
			NewIDs: { "1": 322685000131073, "2": 322685000131074 },
		});
		const wlog = await fetch(`${ws}/wlog?offset=2&count=5`);
		const entries = ((await wlog.json()) as { results: { offset: number }[] }).results;
		expect(entries.map((e) => e.offset)).toEqual([2, 3]);
		const metrics = await registry.metrics();
		expect(metrics).toContain('vvm_cp_commands_total{outcome="ok"} 3');
		expect(metrics).toContain('vvm_cp_requests_total{kind="wlog",outcome="ok"} 1');
		expect(metrics).toContain("vvm_cp_partitions_served 1");
	});

	it("Idempotency-Key: a retry answers the first result and writes nothing; another request with the key is 422; a bad key is 400", async () => {
		const { base, cp } = await serve({ serving: [1] });
		const url = `${base}/1001/docs/${CUSTOMER}`;
		const send = (body: unknown, key: string) =>
			fetch(url, {
				method: "POST",
				headers: { "idempotency-key": key },
				body: JSON.stringify(body),
			});
		const first = await send({ name: "Ada" }, '"order-1"');
		expect(first.status).toBe(201);
		const answer = await first.json();
		expect(first.headers.get("idempotent-replayed")).toBeNull();
		// The same key, quoted (an sf-string) or bare as many clients send it.
		for (const key of ['"order-1"', "order-1"]) {
			const again = await send({ name: "Ada" }, key);
			expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([201, "true"]);
			expect(await again.json()).toEqual(answer);
		}
		const other = await send({ name: "Bob" }, "order-1");
		expect(other.status).toBe(422);
		expect(await other.json()).toMatchObject({
			code: "CP_IDEMPOTENCY_KEY_REUSED",
			committed: "no",
			field: "idempotencyKey",
		});
		const bad = await send({ name: "Eve" }, "x".repeat(256));
		expect(bad.status).toBe(400);
		expect(await bad.json()).toMatchObject({ field: "idempotencyKey" });
		const wlog = await cp.partition(1)?.readWLog({ wsid: 1001, from: 1 });
		expect(wlog?.map((e) => e.offset)).toEqual([1]);
	});

	it("answers 400 naming the field and writes nothing", async () => {
		const { base, cp } = await serve({ serving: [1] });
		const ws = `${base}/1001`;
		const missing = await post(`${ws}/docs/${CUSTOMER}`, { email: "a@b.c" });
		expect(missing.status).toBe(400);
		expect(await missing.json()).toMatchObject({
			status: 400,
			code: "CP_BAD_REQUEST",
			field: "fields.name",
		});
		const notJson = await post(`${ws}/docs/${CUSTOMER}`, "{name:");
		expect(notJson.status).toBe(400);
		expect(await notJson.json()).toMatchObject({ field: "body" });
		const array = await post(`${ws}/commands/sys.CUD`, "[]");
		expect(await array.json()).toMatchObject({
			field: "body",
			message: "body: must be a JSON object",
		});
		const badWsid = await post(`${base}/0/docs/${CUSTOMER}`, { name: "A" });
		expect(await badWsid.json()).toMatchObject({ status: 400, field: "wsid" });
		const unknown = await post(`${ws}/docs/app1pkg.Nope`, { name: "A" });
		expect(unknown.status).toBe(404);
		expect(await unknown.json()).toMatchObject({ field: "table" });
		const big = await post(`${ws}/docs/${CUSTOMER}`, { name: "x".repeat(300_000) });
		expect(big.status).toBe(413);
		expect(await (cp.partition(1)?.readWLog({ wsid: 1001 }) ?? [])).toEqual([]);
		expect(cp.partition(1)?.stats().nextPLogOffset).toBe(1);
	});

	it("answers 421 with the holder for a partition served elsewhere", async () => {
		const holders = new Map([[2, { address: "10.0.0.2:8080" }]]);
		const { base, registry } = await serve({ serving: [1], holders });
		const res = await post(`${base}/1002/docs/${CUSTOMER}`, { name: "Ada" }); // 1002 mod 4 = 2
		expect(res.status).toBe(421);
		const location = `http://10.0.0.2:8080/api/v2/apps/vvm/demo/workspaces/1002/docs/${CUSTOMER}`;
		expect(res.headers.get("location")).toBe(location);
		expect(await res.json()).toMatchObject({
			status: 421,
			holder: "10.0.0.2:8080",
			partition: 2,
			location,
		});
		expect(res.headers.get("vvm-fencing-token")).toBeNull();
		// undici's fetch retries a 421 once on a new connection (it is the HTTP/2 coalescing answer).
		expect(await registry.metrics()).toMatch(/vvm_cp_misdirected_total [12]\n/);
	});

	it("answers 503 with Retry-After when no holder is known or this host cannot serve it yet", async () => {
		const holders = new Map([[3, { address: SELF }]]);
		const { base, registry } = await serve({ serving: [1, 0], deploy: [1], holders });
		const nobody = await post(`${base}/1002/docs/${CUSTOMER}`, { name: "Ada" });
		expect(nobody.status).toBe(503);
		expect(nobody.headers.get("retry-after")).toBe("1");
		expect(await nobody.json()).toMatchObject({ reason: "no_holder", partition: 2 });
		const mine = await post(`${base}/1003/docs/${CUSTOMER}`, { name: "Ada" }); // held by me, not served
		expect(mine.status).toBe(503);
		expect(await mine.json()).toMatchObject({ reason: "not_ready", partition: 3 });
		const deploying = await fetch(`${base}/1000/wlog`); // served, not deployed yet
		expect(deploying.status).toBe(503);
		expect(await deploying.json()).toMatchObject({ reason: "not_ready", partition: 0 });
		const metrics = await registry.metrics();
		expect(metrics).toContain('vvm_cp_unavailable_total{reason="no_holder"} 1');
		expect(metrics).toContain('vvm_cp_unavailable_total{reason="not_ready"} 2');
	});

	it("answers 503 busy while a partition actualizes and 503 closed once it is undeployed", async () => {
		const { base, cp } = await serve({ serving: [1] });
		await cp.undeploy(1);
		const partition = cp.deploy(1); // actualizing: the cp answers CP_BUSY until ready
		const busy = await post(`${base}/1001/docs/${CUSTOMER}`, { name: "Ada" });
		if (busy.status === 503) {
			expect(busy.headers.get("retry-after")).toBe("1");
			expect(await busy.json()).toMatchObject({ code: "CP_BUSY", reason: "busy" });
		} else {
			expect(busy.status).toBe(201); // actualization of an empty PLog won the race
		}
		await partition.ready();
		const closing = cp.undeploy(1);
		const closed = await post(`${base}/1001/docs/${CUSTOMER}`, { name: "Ada" });
		await closing;
		expect([503]).toContain(closed.status);
	});

	it("bounds a WLog reply in bytes and says where to continue; the pages together are the log", async () => {
		const { base } = await serve({ serving: [1] });
		const ws = `${base}/1001`;
		// 80 events of about 61 KB (under the 62 KiB event limit): about 4.9 MB, above the 4 MiB
		// a reply holds.
		const text = "a".repeat(4000);
		const cuds = Array.from({ length: 15 }, (_, i) => ({
			fields: { "sys.ID": i + 1, "sys.QName": "app1pkg.Note", text },
		}));
		for (let i = 0; i < 80; i++)
			expect((await post(`${ws}/commands/sys.CUD`, { cuds })).status).toBe(200);
		const first = await fetch(`${ws}/wlog?count=100`);
		const page1 = (await first.json()) as { results: { offset: number }[]; next?: number };
		expect(page1.results.length).toBeGreaterThan(0);
		expect(page1.results.length).toBeLessThan(80);
		expect(Number(first.headers.get("content-length"))).toBeLessThanOrEqual(4 * 1024 * 1024 + 64);
		expect(page1.next).toBe((page1.results.at(-1)?.offset ?? 0) + 1);
		const second = await fetch(`${ws}/wlog?offset=${page1.next}&count=100`);
		const page2 = (await second.json()) as { results: { offset: number }[]; next?: number };
		expect(page2.next).toBeUndefined();
		expect([...page1.results, ...page2.results].map((e) => e.offset)).toEqual(
			Array.from({ length: 80 }, (_, i) => i + 1),
		);
	});
});
