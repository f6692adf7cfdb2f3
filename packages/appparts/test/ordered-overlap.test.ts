// The numVVM-change overlap of partition-epochs.test.ts ("epochs alone keep a numVVM change made
// while an old VVM still serves safe") on both kinds of fencing. On "ordered" fencing (Cassandra,
// DynamoDB; mem plays it) a deposed holder's level-2 PLog put to a new offset landed without an
// error: both holders acknowledged a command at offsets 1 and 2, and the newer holder's replaced
// the older's (found by review). @vvm/cp now confirms the fence after the write.
import { createCommandProcessor } from "@vvm/cp";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { expect, it } from "vitest";
import { changeStaticNumVVM, createStaticPlacement, deployCpPartitions } from "../src/index.ts";
import { stubLeadership } from "./leadership.ts";

const NS = "vvm-test";

it.each(["epoch", "ordered"] as const)(
	"a numVVM change made while an old VVM still serves: no PLog offset acknowledged twice, the deposed VVM acknowledges nothing (trust level 2, %s fencing)",
	async (fencing) => {
		const storage = createMemTTLStorage({ fencing });
		const vvm = async (slot: number, numVVM: number, token: number) => {
			const cp = createCommandProcessor({ storage, appId: 1, partitions: 4, trustLevel: 2 });
			const parts = deployCpPartitions(cp);
			const placement = createStaticPlacement({
				partitions: 4,
				numVVM,
				handlers: parts.handlers,
				leadership: () => stubLeadership(slot, token, `10.0.0.${slot}:8080#n`),
				leaderOf: async () => undefined,
				storage,
				namespace: NS,
			});
			const ctl = new AbortController();
			await placement.service.start({
				signal: ctl.signal,
				leaseValid: () => true,
				fencingToken: token,
			});
			await parts.partition(2)?.ready();
			return { placement, parts, ctl };
		};
		const old = await vvm(1, 2, 1);
		expect(await changeStaticNumVVM(storage, { from: 2, to: 3 }, NS)).toBe(true);
		const added = await vvm(3, 3, 1);
		expect(old.parts.fencingToken(2)).toBe(1n);
		expect(added.parts.fencingToken(2)).toBe(2n);
		const acked = new Map<number, string>();
		const outcomes: string[] = [];
		for (const [v, name] of [
			[old, "A1"],
			[added, "C1"],
			[old, "A2"],
			[added, "C2"],
		] as const) {
			const deployed = v.parts.partition(2);
			if (deployed === undefined) {
				outcomes.push(`${name}: not deployed`);
				continue;
			}
			await deployed.createRecord({ wsid: 1002, table: "app1pkg.Customer", fields: { name } }).then(
				(a) => {
					outcomes.push(`${name}: acknowledged at ${a.plogOffset}`);
					const twice = acked.get(a.plogOffset);
					acked.set(a.plogOffset, twice === undefined ? name : `${twice}+${name}`);
				},
				(e: unknown) => outcomes.push(`${name}: refused: ${(e as Error).message}`),
			);
		}
		// Every acknowledged command is in the WLog the newer holder reads, once.
		const wlog = await added.parts.partition(2)?.readWLog({ wsid: 1002, from: 1, limit: 10 });
		const names = (wlog ?? []).map((e) => JSON.stringify(e.event));
		for (const name of acked.values())
			expect(
				names.filter((n) => n.includes(`"${name}"`)),
				name,
			).toHaveLength(1);
		for (const v of [old, added]) {
			v.ctl.abort(new Error("stopped"));
			await v.placement.close();
			await v.parts.close();
		}
		// No PLog offset acknowledged to two commands.
		expect([...acked.values()].filter((v) => v.includes("+"))).toEqual([]);
		// The deposed holder acknowledges nothing.
		expect(outcomes.filter((o) => /^A\d: acknowledged/.test(o))).toEqual([]);
	},
	20_000,
);
