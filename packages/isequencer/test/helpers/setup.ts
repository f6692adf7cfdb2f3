import { MockClock } from "@vvm/clock";
import { afterEach, beforeEach, describe } from "vitest";
import type { CacheKind, SequencerHandle, SequencerParams } from "../../src/index.ts";
import { createSequencer } from "../../src/index.ts";
import { CACHE_KINDS } from "../../src/record-cache.ts";
import type { SequencerImpl } from "../../src/sequencer.ts";
import { MockSeqStorage } from "./mock-storage.ts";

const handles: SequencerHandle[] = [];
/** The cache `setup` uses unless its params name one; set by {@link describeEachCache}. */
let currentCache: CacheKind | undefined;

/** Runs the suites in `body` once per cache implementation, `setup` using that cache. */
export function describeEachCache(body: (cache: CacheKind) => void): void {
	for (const cache of CACHE_KINDS)
		describe(`cache: ${cache}`, () => {
			beforeEach(() => {
				currentCache = cache;
			});
			body(cache);
		});
}

afterEach(async () => {
	const list = handles.splice(0);
	await Promise.all(list.map((h) => h.cleanup()));
});

export interface Setup {
	readonly storage: MockSeqStorage;
	readonly clock: MockClock;
	readonly seq: SequencerImpl;
	readonly cleanup: () => Promise<void>;
}

/** A sequencer on a mock storage and a MockClock, cleaned up after the test. */
export function setup(
	params: Partial<SequencerParams> = {},
	storage: MockSeqStorage = new MockSeqStorage(),
	clock: MockClock = new MockClock(0),
): Setup {
	const cache = params.cache ?? currentCache;
	const handle = createSequencer(
		{ seqTypes: { 1: { 1: 1 } }, ...(cache === undefined ? {} : { cache }), ...params },
		storage,
		{
			clock,
			random: () => 0.5,
			onStorageError: () => {}, // the logger's lines are tested on their own
		},
	);
	handles.push(handle);
	return {
		storage,
		clock,
		seq: handle.sequencer as SequencerImpl,
		cleanup: handle.cleanup,
	};
}
