// The published sequencer with the lru-cache version the rehearsal forced under @vvm/isequencer:
// more workspaces than cached ones, so the cache evicts; numbers stay dense, also after a restart.
import { createSequencer } from "@vvm/isequencer";
import { createMemPLog, createSeqStorage } from "@vvm/seqstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { expect, it } from "vitest";

const WS_KIND = 1;
const WLOG = 1;
const params = {
	seqTypes: { [WS_KIND]: { [WLOG]: 1 } },
	lruCacheSize: 8,
	cache: "lru-cache",
} as const;

async function runCommands(
	sequencer: ReturnType<typeof createSequencer>["sequencer"],
	plog: ReturnType<typeof createMemPLog>,
	commands: number,
	next: Map<number, number>,
): Promise<void> {
	for (let i = 0; i < commands; i++) {
		const wsid = 1000 + ((i * 7) % 40); // 40 workspaces through a cache of 8
		let offset = sequencer.start(WS_KIND, wsid);
		while (offset === undefined) {
			await new Promise((r) => setTimeout(r, 5));
			offset = sequencer.start(WS_KIND, wsid);
		}
		const wlog = await sequencer.next(WLOG);
		expect(wlog).toBe(next.get(wsid) ?? 1);
		next.set(wsid, wlog + 1);
		plog.append(offset, [{ wsid, seqId: WLOG, value: wlog }]);
		sequencer.flush();
	}
}

it("numbers stay dense through evictions and a restart", async () => {
	const storage = createMemTTLStorage();
	const plog = createMemPLog();
	const next = new Map<number, number>();
	const first = createSequencer(
		params,
		createSeqStorage({ storage, appId: 1, partitionId: 0, plog }),
	);
	await runCommands(first.sequencer, plog, 400, next);
	await first.cleanup();
	const second = createSequencer(
		params,
		createSeqStorage({ storage, appId: 1, partitionId: 0, plog }),
	);
	await runCommands(second.sequencer, plog, 400, next);
	await second.cleanup();
	expect(plog.lastOffset).toBe(800);
});
