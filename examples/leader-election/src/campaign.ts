// The part every backend shares: lead `job` while this process holds it, until SIGINT or SIGTERM,
// then give the leadership up (the record is deleted) so that another process can lead at once.
import { hostname } from "node:os";
import { setInterval, setTimeout } from "node:timers/promises";
import { createElections, createElectionsStorage } from "@vvm/ielections";
import type { TTLStorage } from "@vvm/ttlstorage";
import { fromUtf8, utf8 } from "@vvm/ttlstorage";

export interface CampaignOptions {
	/** What to lead: one leader per job name. */
	readonly job: string;
	/** Lifetime of the leader record; renewed every quarter of it. */
	readonly leaseSeconds?: number;
	/** Pause between attempts while another process leads. */
	readonly retryMs?: number;
}

/** Resolves once stopped by a signal; sets exit code 1 when the leadership was lost instead. */
export async function campaign(
	driver: TTLStorage,
	options: CampaignOptions,
	work: (signal: AbortSignal) => Promise<void>,
): Promise<void> {
	const { job, leaseSeconds = 10, retryMs = 1_000 } = options;
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
	try {
		for (let attempt = 1; !stop.signal.aborted; attempt++) {
			const lease = await elections.acquireLeadership(job, me, leaseSeconds);
			if (lease === undefined) {
				console.log(`follower: ${job} is led by another process (attempt ${attempt})`);
				await setTimeout(retryMs, undefined, { signal: stop.signal }).catch(() => {});
				continue;
			}
			console.log(`leader: ${me} leads ${job} (attempt ${attempt})`);
			await work(AbortSignal.any([lease, stop.signal]));
			if (lease.aborted) {
				// Lost (another process took over, or renewals failed): stop acting, and let the
				// supervisor restart the process; the killer ends it anyway if it keeps running.
				console.log(`lost: ${String(lease.reason?.code ?? lease.reason)}`);
				process.exitCode = 1;
				break;
			}
		}
	} finally {
		await elections.cleanup(); // deletes the record if this process still holds it
		console.log(`released: ${job}`);
	}
}

/** Demo work: one line a second until `signal` aborts. */
export async function everySecond(signal: AbortSignal): Promise<void> {
	try {
		for await (const _ of setInterval(1_000, undefined, { signal })) console.log("working");
	} catch (error) {
		if (!signal.aborted) throw error;
	}
}
