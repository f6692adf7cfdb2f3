// Leader election over an existing PostgreSQL. Connection settings are node-postgres' own: PGHOST,
// PGPORT, PGUSER, PGPASSWORD, PGDATABASE. Expiry is decided by the database's clock.
import { hostname } from "node:os";
import { setInterval } from "node:timers/promises";
import { campaign, createElections, createElectionsStorage } from "@vvm/ielections";
import { fromUtf8, utf8 } from "@vvm/ttlstorage";
import { createPgTTLStorage, ensurePgSchema } from "@vvm/ttlstorage-pg";
import pg from "pg";

const pool = new pg.Pool();
pool.on("error", (error) => console.error(`an idle connection broke: ${error.message}`));
await ensurePgSchema(pool); // public.vvm_ttl and public.vvm_ttl_fences, unless they exist
const storage = createPgTTLStorage({ pool });
const elections = createElections(
	createElectionsStorage<string, string>(storage, {
		pKey: () => utf8("examples/leaders"),
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
	durationSeconds: 10, // the record's lifetime by the database's clock; renewed every 2.5 s
	retryMs: 1_000, // while another process leads
	signal: stop.signal,
	onStartedLeading: async (signal) => {
		console.log(`leader: ${me} leads ${job}`);
		try {
			for await (const _ of setInterval(1_000, undefined, { signal })) console.log("working");
		} catch (error) {
			if (!signal.aborted) throw error;
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
await pool.end();
