// Races on one key at RF 3. Registered by rf3.cluster.integration.test.ts in place of the suites'
// "exactly one wins, every loser answers false" cases (see CONTENTION_CASES there).

import type { LeadershipEvent } from "@vvm/ielections";
import { createElections, createElectionsStorage } from "@vvm/ielections";
import { RecordingKiller } from "@vvm/ielections/testing";
import { fromUtf8, utf8 } from "@vvm/ttlstorage";
import { types } from "cassandra-driver";
import { expect, it } from "vitest";
import { createCassandraTTLStorage } from "../src/index.ts";
import type { Answer } from "./cas-history.ts";
import { answerOf, cleanupAll } from "./cas-history.ts";
import type { CassandraFixture } from "./cassandra-env.ts";

let n = 0;
const uniqueKey = (): Uint8Array => utf8(`cluster/race/${process.pid}/${Date.now()}/${++n}`);
const RACERS = 20;

/** Runs the racers at once; each gets its index and answers true, false, or a rejection code. */
async function race(call: (i: number) => Promise<boolean>): Promise<Answer[]> {
	return Promise.all(Array.from({ length: RACERS }, (_, i) => call(i).then((ok) => ok, answerOf)));
}

/** Every answer is true, false or OUTCOME_UNKNOWN (the cluster is whole: never UNAVAILABLE). */
function expectDecidedOrUnknown(answers: readonly Answer[]): void {
	for (const a of answers) expect([true, false, "TTLSTORAGE_OUTCOME_UNKNOWN"]).toContain(a);
	expect(answers.filter((a) => a === true).length).toBeLessThanOrEqual(1);
}

const indexes = (answers: readonly Answer[], answer: Answer): number[] =>
	answers.flatMap((a, i) => (a === answer ? [i] : []));

export function clusterContentionTests(fixture: () => CassandraFixture): void {
	const serial = (): ReturnType<typeof createCassandraTTLStorage> =>
		createCassandraTTLStorage({ ...fixture(), readConsistency: types.consistencies.serial });
	const value = async (p: Uint8Array): Promise<string | undefined> => {
		const v = await serial().get(p, utf8("k"));
		return v === undefined ? undefined : fromUtf8(v);
	};

	it(`${RACERS} concurrent InsertIfNotExists on one key: at most one true, losers false or OUTCOME_UNKNOWN, and the record is the winner's`, async () => {
		const storage = createCassandraTTLStorage(fixture());
		const p = uniqueKey();
		const answers = await race((i) => storage.insertIfNotExists(p, utf8("k"), utf8(`v${i}`), 30));
		expectDecidedOrUnknown(answers);
		const held = await value(p);
		const [winner] = indexes(answers, true);
		// The key was free, so someone's insert landed: the one answered true, else an ambiguous one.
		const possible =
			winner === undefined ? indexes(answers, "TTLSTORAGE_OUTCOME_UNKNOWN") : [winner];
		expect(possible.map((i) => `v${i}`)).toContain(held);
	}, 60_000);

	it(`${RACERS} concurrent CompareAndSwap from one old value: at most one true, losers false or OUTCOME_UNKNOWN, and the record is the winner's`, async () => {
		const storage = createCassandraTTLStorage(fixture());
		const p = uniqueKey();
		expect(await storage.insertIfNotExists(p, utf8("k"), utf8("old"), 30)).toBe(true);
		const answers = await race((i) =>
			storage.compareAndSwap(p, utf8("k"), utf8("old"), utf8(`new${i}`), 30),
		);
		expectDecidedOrUnknown(answers);
		const held = await value(p);
		const [winner] = indexes(answers, true);
		const possible =
			winner === undefined
				? ["old", ...indexes(answers, "TTLSTORAGE_OUTCOME_UNKNOWN").map((i) => `new${i}`)]
				: [`new${winner}`];
		expect(possible).toContain(held);
	}, 60_000);

	it(`${RACERS} concurrent CompareAndDelete: at most one true, losers false or OUTCOME_UNKNOWN, and the record is gone if any may have won`, async () => {
		const storage = createCassandraTTLStorage(fixture());
		const p = uniqueKey();
		expect(await storage.insertIfNotExists(p, utf8("k"), utf8("v"), 30)).toBe(true);
		const answers = await race(() => storage.compareAndDelete(p, utf8("k"), utf8("v")));
		expectDecidedOrUnknown(answers);
		const held = await value(p);
		if (answers.includes(true)) expect(held).toBeUndefined();
		else
			expect(
				answers.includes("TTLSTORAGE_OUTCOME_UNKNOWN") ? [undefined, "v"] : [undefined],
			).toContain(held);
	}, 60_000);

	it("10 electors race for one key, twice: never two leaders, and the record is the leader's", async () => {
		const { client, keyspace } = fixture();
		const pKey = uniqueKey();
		const codec = {
			pKey: () => pKey,
			cCols: (key: string) => utf8(key),
			encodeValue: (v: string) => utf8(v),
			decodeValue: (b: Uint8Array) => fromUtf8(b),
		};
		const storage = createElectionsStorage(createCassandraTTLStorage({ client, keyspace }), codec);
		const reasons: string[] = [];
		const leadersPerRound: number[] = [];
		for (let round = 0; round < 2; round++) {
			const slot = `slot-${round}`;
			const electors = Array.from({ length: 10 }, () =>
				createElections(storage, {
					killer: new RecordingKiller(),
					onEvent: (e: LeadershipEvent<string, string>) => {
						if (e.type === "acquire-failed") reasons.push(e.reason);
					},
				}),
			);
			try {
				const signals = await Promise.all(
					electors.map((e, i) => e.acquireLeadership(slot, `v${round}-${i}`, 10)),
				);
				const leaders = signals.flatMap((s, i) => (s === undefined ? [] : [i]));
				leadersPerRound.push(leaders.length);
				expect(leaders.length).toBeLessThanOrEqual(1);
				if (leaders[0] !== undefined) {
					const record = await serial().get(pKey, utf8(slot));
					expect(record === undefined ? undefined : fromUtf8(record)).toBe(
						`v${round}-${leaders[0]}`,
					);
				}
			} finally {
				await cleanupAll(electors.map((e) => e.cleanup()));
			}
		}
		// A loser saw the key held, or got an ambiguous answer (and removed its own insert).
		for (const r of reasons) expect(["held", "storage-error"]).toContain(r);
		console.info(
			`[cluster] election races: leaders per round ${leadersPerRound.join(", ")}; losers: ${reasons.filter((r) => r === "held").length} held, ${reasons.filter((r) => r === "storage-error").length} ambiguous`,
		);
	}, 120_000);
}
