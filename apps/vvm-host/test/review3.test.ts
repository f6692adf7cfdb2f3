// Review 3: defects of the host's partition code (apps/vvm-host); every case fails on commit 16ce4c7.
// Copied from ../shared/review3/vvm-host.test.ts; its assertions unchanged, its server fixture is the
// one the API v2 tests use (test/support/api-v2-server.ts; the placement contract is @vvm/appparts');
// its gate also holds a putBatchIf (the event and its effects in one call, since @vvm/cp uses it).
// `cd apps/vvm-host && npx vitest run test/review3.test.ts` (after `. scripts/bootstrap.sh` and
// `pnpm turbo run build`). The review: shared/review3/README.md.
import { PKEY_PREFIX_PLOG, PKEY_PREFIX_RECORDS } from "@vvm/cp";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { afterEach, describe, expect, it } from "vitest";
import { serveApiV2 } from "./support/api-v2-server.ts";

const CUSTOMER = "app1pkg.Customer";

/**
 * A storage view whose next matching call (`op` on a key with pKey prefix `prefix`, once armed)
 * waits until `release()`; `reached` resolves when it arrives.
 */
function gatedStorage(
	inner: TTLStorage,
	ops: ReadonlyArray<"insertIfNotExists" | "putBatchIf" | "get">,
	prefix: number,
) {
	let release: () => void = () => {};
	let reached: () => void = () => {};
	const reachedP = new Promise<void>((r) => {
		reached = r;
	});
	const released = new Promise<void>((r) => {
		release = r;
	});
	const armed = { on: false };
	const storage = new Proxy(inner, {
		get(target, prop, receiver) {
			const op = ops.find((o) => o === prop);
			if (op !== undefined && typeof target[op] === "function")
				return async (first: unknown, ...rest: unknown[]) => {
					// A putBatchIf's first item is the PLog entry's (an event and its effects at once).
					const pKey = (Array.isArray(first) ? first[0]?.pKey : first) as Uint8Array | undefined;
					if (armed.on && pKey?.[3] === prefix) {
						armed.on = false;
						reached();
						await released;
					}
					return (target[op] as (...a: unknown[]) => unknown).call(target, first, ...rest);
				};
			const v = Reflect.get(target, prop, receiver);
			return typeof v === "function" ? v.bind(target) : v;
		},
	});
	return { storage, armed, reached: reachedP, release: () => release() };
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
	for (const c of closers.splice(0)) await c();
});

const serve = (storage: TTLStorage, serving: number[]) =>
	serveApiV2({ storage, serving, fencingToken: () => 7n }, closers);

describe("review3: undeploy racing an in-flight command", () => {
	it("a command whose event is durable when the partition is undeployed is not answered with a retryable 503", async () => {
		const gate = gatedStorage(
			createMemTTLStorage(),
			["insertIfNotExists", "putBatchIf"],
			PKEY_PREFIX_PLOG,
		);
		const { cp, base } = await serve(gate.storage, [1]);
		gate.armed.on = true;
		const reply = fetch(`${base}/1001/docs/${CUSTOMER}`, {
			method: "POST",
			body: JSON.stringify({ name: "Ada" }),
		});
		await gate.reached; // the PLog write of the create is at the storage
		const undeployed = cp.undeploy(1); // the lease ended / leadership lost meanwhile
		gate.release();
		const res = await reply;
		const body = (await res.json()) as Record<string, unknown>;
		await undeployed;
		// The event is durable and its record written: redeploy and look.
		const p = cp.deploy(1);
		await p.ready();
		const wlog = await p.readWLog({ wsid: 1001, from: 1 });
		const record = await p
			.readRecord({ wsid: 1001, id: 322685000131072 })
			.catch((e: unknown) => String(e));
		const observed = {
			status: res.status,
			retryAfter: res.headers.get("retry-after"),
			committed: body.committed,
			wlogOffsets: wlog.map((e) => e.offset),
			record,
		};
		// A 503 tells the client "nothing was written: retry" (README, Errors): a retry creates a
		// second customer. Either the success (the event is durable and applied) or a 500 with
		// committed "yes" (the README's "read the WLog before sending it again") is right.
		expect(observed.wlogOffsets).toEqual([1]);
		expect(observed.record).toMatchObject({ "sys.ID": 322685000131072, name: "Ada" });
		expect(
			observed.status === 201 || (observed.status === 500 && observed.committed === "yes"),
			JSON.stringify(observed),
		).toBe(true);
		expect(observed.retryAfter).toBeNull();
	});
});

describe("review3: undeploy while an update reads its record", () => {
	it("is answered 503 CP_CLOSED (nothing was written), not 500 HOST_INTERNAL", async () => {
		const gate = gatedStorage(createMemTTLStorage(), ["get"], PKEY_PREFIX_RECORDS);
		const { cp, base } = await serve(gate.storage, [1]);
		const created = await fetch(`${base}/1001/docs/${CUSTOMER}`, {
			method: "POST",
			body: JSON.stringify({ name: "Ada" }),
		});
		expect(created.status).toBe(201);
		gate.armed.on = true;
		const reply = fetch(`${base}/1001/docs/${CUSTOMER}/322685000131072`, {
			method: "PATCH",
			body: JSON.stringify({ vip: true }),
		});
		await gate.reached; // the update reads the record (before the sequencer's start)
		const undeployed = cp.undeploy(1);
		gate.release();
		const res = await reply;
		const body = (await res.json()) as Record<string, unknown>;
		await undeployed;
		expect({ status: res.status, code: body.code, reason: body.reason }).toEqual({
			status: 503,
			code: "CP_CLOSED",
			reason: "closed",
		});
	});
});
