// Leader election over an existing Redis (REDIS_URL, default redis://127.0.0.1:6379), the fencing
// token passed to the resource the leader writes: a record fenced by the token, so a deposed
// leader's late write is refused by Redis itself. Expiry is decided by the Redis server's clock.
import { hostname } from "node:os";
import { setInterval } from "node:timers/promises";
import { campaign, createElections, createElectionsStorage } from "@vvm/ielections";
import { fromUtf8, TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { createRedisTTLStorage, REDIS_CLIENT_OPTIONS } from "@vvm/ttlstorage-redis";
import { Redis } from "ioredis";

const client = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", {
	...REDIS_CLIENT_OPTIONS, // no offline queue, no resends: a write is sent once or not at all
	commandTimeout: 2_000, // no answer by then: TTLSTORAGE_OUTCOME_UNKNOWN, never sent again
	lazyConnect: true,
});
client.on("error", (error) => console.error(`redis: ${error.message}`));
await client.connect();
const storage = createRedisTTLStorage({ client, keyPrefix: "examples:" });
const elections = createElections(
	createElectionsStorage<string, string>(storage, {
		pKey: () => utf8("leaders"),
		cCols: utf8,
		encodeValue: utf8,
		decodeValue: fromUtf8,
	}),
);
const [job, me] = [process.env.JOB ?? "report-generator", `${hostname()}#${process.pid}`];
const stop = new AbortController();
process.once("SIGINT", () => stop.abort());
process.once("SIGTERM", () => stop.abort());

const running = campaign(elections, {
	key: job,
	value: me,
	durationSeconds: 10, // the record's lifetime by the server's clock; renewed every 2.5 s
	retryMs: 1_000, // while another process leads
	signal: stop.signal,
	onStartedLeading: async (signal, { fencingToken }) => {
		// The protected resource: one record, every write fenced by this leadership's token. The
		// raise makes Redis refuse every write of an older token from now on, whenever it lands.
		const fence = { scope: utf8(`fence/${job}`), epoch: BigInt(fencingToken ?? 0) };
		try {
			await storage.raiseFence(fence.scope, fence.epoch);
			console.log(`leader: ${me} leads ${job} (fencing token ${fencingToken})`);
			for await (const _ of setInterval(1_000, undefined, { signal })) {
				await storage.put(utf8("reports"), utf8(job), utf8(`by ${me}`), 0, { fence });
				console.log("working");
			}
		} catch (error) {
			if (TTLStorageError.is(error) && error.code === "TTLSTORAGE_FENCED")
				console.log(`fenced: a leader with a newer token wrote ${job}; this one stops`);
			else if (!signal.aborted) console.error(`work failed: ${(error as Error).message}`);
			if (!signal.aborted) stop.abort(); // give the leadership up: another process takes over
		}
		console.log("stopped working"); // before the record is deleted
	},
	onStoppedLeading: (reason) => console.log(`stopped leading: ${reason.code}`),
	onNewLeader: (leader) => {
		if (leader !== me) console.log(`follower: ${job} is led by ${leader ?? "nobody"}`);
	},
});
try {
	await running.done;
} catch (error) {
	// The leadership was lost (not released by us): its killer stays armed, so exit and let the
	// supervisor start a fresh process (@vvm/ielections README, first screen).
	console.error(`lost ${job}: ${(error as Error).message}; exiting`);
	process.exit(1);
}
await elections.cleanup(); // ends the renewal loops
console.log(`released: ${job}`);
await storage.close();
client.disconnect();
