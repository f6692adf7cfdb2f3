// EventWriter over a storage with per-record ("ordered") fencing, where a superseded
// compare-and-swap answers `false` rather than an error: the writer must tell that refusal from a
// conflict and stop, never retry forever.

import { TTLStorageError, withFence } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../src/event.ts";
import { encodeJson } from "../src/event.ts";
import { EventWriter } from "../src/event-writer.ts";
import { fenceScope } from "../src/keys.ts";

const APP = 7;
const event = (epoch: bigint): StoredEvent => ({
	v: 1,
	k: "e",
	p: 0,
	o: 3,
	ws: 1000,
	w: 2,
	t: 1,
	c: "sys.CUD",
	s: [[1, 2]],
	cuds: [],
	f: epoch.toString(),
});

function writer(storage: ReturnType<typeof createMemTTLStorage>, epoch: bigint, level: 0 | 1) {
	const fence = { scope: fenceScope(APP, 0), epoch };
	const view = withFence(storage, fence);
	return new EventWriter({
		storage: view,
		writes: view,
		appId: APP,
		level,
		atomicBatches: false,
		idempotencyTtlSeconds: 60,
	});
}

describe("EventWriter under ordered fencing", () => {
	for (const level of [0, 1] as const)
		it(`level ${level}: marking an event whose entries a newer holder rewrote rejects TTLSTORAGE_FENCED`, async () => {
			const storage = createMemTTLStorage({ fencing: "ordered" });
			const e = event(10n);
			const bytes = encodeJson(e);
			const a = writer(storage, 10n, level);
			expect(await a.writePLog({ event: e, bytes })).toBe(false);
			// The newer holder (epoch 20) re-applies the event: the same bytes, now under its epoch.
			const b = writer(storage, 20n, level);
			await storage.raiseFence?.(fenceScope(APP, 0), 20n);
			for (const k of [b.plogKey(e), b.wlogKey(e)])
				await storage.put(k.pKey, k.cCols, bytes, 0, {
					fence: { scope: fenceScope(APP, 0), epoch: 20n },
				});
			// The deposed holder marks it corrupted: its swaps are refused although the bytes match.
			const marked = a.markCorrupted({ event: e, bytes }, "test");
			await expect(marked).rejects.toSatisfy(
				(error: unknown) => TTLStorageError.is(error) && error.code === "TTLSTORAGE_FENCED",
			);
			// Nothing changed: the newer holder's entries stay.
			for (const k of [b.plogKey(e), b.wlogKey(e)])
				expect(await storage.get(k.pKey, k.cCols)).toEqual(new Uint8Array(bytes));
		});
});
