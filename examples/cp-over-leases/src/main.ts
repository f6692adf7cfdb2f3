// The command processor over partition leases, without a host: two nodes ("a" and "b") share the
// partitions of one storage. Each runs a placement (@vvm/appparts over @vvm/leases) that deploys
// the partitions whose lease it holds, fenced by the lease, and asks `locate(p)` where a command
// goes. Node a stops; b takes its partitions over and reads what a wrote.
//
// Both nodes live in this process because an embedded LevelDB has one process at a time; over
// Cassandra or DynamoDB each node is a process of its own, with the same code.
import { setTimeout as sleep } from "node:timers/promises";
import type { CpPartitions, PartitionPlacement } from "@vvm/appparts";
import { createLeasesPlacement, deployCpPartitions } from "@vvm/appparts";
import { createCommandProcessor, partitionOf } from "@vvm/cp";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { ClassicLevel } from "classic-level";

const PARTITIONS = 4;
const WORKSPACES = [1001, 1002, 1003, 1004]; // one per partition: wsid mod 4
const db = new ClassicLevel(process.env.DATA_DIR ?? ".data/cp-over-leases");
const storage = createLevelTTLStorage({ db });

interface Node {
	readonly address: string;
	readonly placement: PartitionPlacement;
	readonly parts: CpPartitions;
}

async function startNode(address: string): Promise<Node> {
	const cp = createCommandProcessor({ storage, appId: 1, partitions: PARTITIONS });
	const parts = deployCpPartitions(cp);
	const placement = createLeasesPlacement({
		storage,
		address,
		partitions: PARTITIONS,
		leaseIntervalMs: 2_000, // a lease lasts 2 s and is prolonged while its holder lives
		maxClockSkewMs: 200,
		namespace: "example",
		handlers: parts.handlers,
	});
	await placement.start(AbortSignal.timeout(60_000));
	return { address, placement, parts };
}

/** The node that serves `wsid`'s partition now, waiting while leases move. */
async function servingNode(nodes: readonly Node[], wsid: number): Promise<Node> {
	const partition = partitionOf(wsid, PARTITIONS);
	const deadline = performance.now() + 30_000;
	for (;;) {
		const node = nodes.find((n) => n.placement.locate(partition).kind === "served");
		if (node !== undefined) return node;
		if (performance.now() > deadline) throw new Error(`nobody serves partition ${partition}`);
		await sleep(100);
	}
}

const a = await startNode("a:1");
const b = await startNode("b:1");
const names = new Map<number, number>();
for (const wsid of WORKSPACES) {
	const node = await servingNode([a, b], wsid);
	const partition = node.parts.partition(partitionOf(wsid, PARTITIONS));
	if (partition === undefined) throw new Error("located but not deployed");
	const { NewIDs } = await partition.createRecord({
		wsid,
		table: "app1pkg.Customer",
		fields: { name: `Ada ${wsid}` },
	});
	names.set(wsid, NewIDs["1"] ?? 0);
	console.log(
		`created in workspace ${wsid} on node ${node.address} (partition ${partitionOf(wsid, PARTITIONS)})`,
	);
}

console.log("stopping node a");
await a.placement.close(); // ends a's leases: its partitions undeploy, b is granted them
await a.parts.close();

for (const wsid of WORKSPACES) {
	const node = await servingNode([b], wsid);
	const partition = node.parts.partition(partitionOf(wsid, PARTITIONS));
	const record = await partition?.readRecord({
		wsid,
		table: "app1pkg.Customer",
		id: names.get(wsid) ?? 0,
	});
	console.log(`read in workspace ${wsid} on node ${node.address}: ${String(record?.name)}`);
	if (record?.name !== `Ada ${wsid}`) throw new Error(`workspace ${wsid}: the record is missing`);
}

await b.placement.close();
await b.parts.close();
await storage.close();
await db.close();
console.log("done");
