// The part every backend shares: campaign for `job` (lead while holding it, wait and retry while
// another process does) until SIGINT or SIGTERM, then give the leadership up (the record is
// deleted) so that a waiting process leads at once instead of when the lease would expire.
import { hostname } from "node:os";
import { setInterval } from "node:timers/promises";
import { campaign, createElections, createElectionsStorage } from "@vvm/ielections";
import type { TTLStorage } from "@vvm/ttlstorage";
import { fromUtf8, utf8 } from "@vvm/ttlstorage";

/** Runs `work` whenever this process leads `job`; resolves once stopped by a signal. */
export async function lead(
	driver: TTLStorage,
	job: string,
	work: (signal: AbortSignal) => Promise<void>,
): Promise<void> {
	const me = `${hostname()}#${process.pid}`;
	const elections = createElections(
		createElectionsStorage<string, string>(driver, {
			pKey: () => utf8("examples/leaders"),
			cCols: (name) => utf8(name),
			encodeValue: utf8,
			decodeValue: fromUtf8,
		}),
	);
	const stop = new AbortController();
	for (const name of ["SIGINT", "SIGTERM"] as const) {
		process.once(name, () => {
			console.log(`${name}: stopping`);
			stop.abort();
		});
	}
	const running = campaign(elections, {
		key: job,
		value: me,
		durationSeconds: 10, // the record's lifetime; renewed every 2.5 s while leading
		retryMs: 1_000, // while another process leads
		signal: stop.signal,
		onStartedLeading: (signal) => {
			console.log(`leader: ${me} leads ${job}`);
			return work(signal); // `signal` aborts when the leadership ends, for whatever reason
		},
		onStoppedLeading: (reason) => console.log(`stopped leading: ${reason.code}`),
		onNewLeader: (leader) => {
			if (leader !== me) console.log(`follower: ${job} is led by ${leader ?? "nobody"}`);
		},
	});
	try {
		await running.done;
	} catch (error) {
		// The leadership was lost (not released by us): its killer stays armed, so exit and let
		// the supervisor start a fresh process (@vvm/ielections README, first screen).
		console.error(`lost ${job}: ${(error as Error).message}; exiting`);
		process.exit(1);
	}
	await elections.cleanup(); // nothing left to release; ends the renewal loops
	console.log(`released: ${job}`);
}

/** Demo work: one line a second until `signal` aborts. */
export async function everySecond(signal: AbortSignal): Promise<void> {
	try {
		for await (const _ of setInterval(1_000, undefined, { signal })) console.log("working");
	} catch (error) {
		if (!signal.aborted) throw error;
	}
	console.log("stopped working"); // before the record is deleted: nobody else leads yet
}
