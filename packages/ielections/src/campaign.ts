import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type { Elections, LeadershipState } from "./elections.ts";
import { ElectionsError } from "./errors.ts";
import { validateDuration } from "./timings.ts";

/**
 * Options of {@link campaign}.
 *
 * @example
 * ```ts
 * const options: CampaignOptions<string, string> = {
 *   key: "billing-job", value: "pod-7#3f9a", durationSeconds: 20,
 *   onStartedLeading: (signal) => runJob(signal),
 * };
 * ```
 */
export interface CampaignOptions<K, V> {
	readonly key: K;
	/** This candidate's value: unique per process incarnation (ownership is checked by value). */
	readonly value: V;
	readonly durationSeconds: number;
	/** Pause between attempts while another candidate leads; default the renewal interval, `d / 4`. */
	readonly retryMs?: number;
	/** Ends the campaign (and releases the leadership) when it aborts. */
	readonly signal?: AbortSignal;
	/** Time for the retry pause; default the system clock. */
	readonly clock?: Clock;
	/**
	 * Called once per leadership with its signal (aborted when the leadership ends) and state.
	 * Not awaited: run your work until the signal aborts. A throw or rejection is ignored.
	 */
	readonly onStartedLeading?: (signal: AbortSignal, leadership: LeadershipState<V>) => unknown;
	/**
	 * Called once when a leadership ended, with the reason (lost, released, cleanup). After a loss
	 * (`ELECTIONS_LOST`, `ELECTIONS_STORAGE_ERROR`) the campaign ends: see {@link Campaign.done}.
	 */
	readonly onStoppedLeading?: (reason: ElectionsError) => void;
	/**
	 * Called when the observed leader changes (this candidate included); `undefined` = nobody
	 * leads. Observed on every attempt, so at least every `retryMs` while following.
	 */
	readonly onNewLeader?: (value: V | undefined) => void;
}

/**
 * A running campaign. `stop()` (or `await using`) ends it: the leadership, if held, is released,
 * and the loop has ended when it resolves.
 */
export interface Campaign extends AsyncDisposable {
	/**
	 * Resolves when the campaign has ended by `stop()`, its signal, or a `cleanup()` of the
	 * elections. **Rejects** with the {@link ElectionsError} (`ELECTIONS_LOST` or
	 * `ELECTIONS_STORAGE_ERROR`) when a leadership was lost: the campaign does not lead again,
	 * because the lost leadership's killer stays armed (its work may still be running) and would
	 * SIGKILL the process while it led. Exit the process then (non-zero) and let its supervisor
	 * start a fresh one, which campaigns again; left unhandled, the rejection ends the process as
	 * Node's default unhandled-rejection mode does. (With a `killer` of your own that never ends
	 * the process, you may instead start a new campaign once the old leadership's work has stopped.)
	 */
	readonly done: Promise<void>;
	/**
	 * Stops campaigning and releases the leadership if held. Idempotent. Resolves once the loop has
	 * ended, also after a loss (which only `done` reports).
	 */
	stop(): Promise<void>;
	[Symbol.asyncDispose](): Promise<void>;
}

/** An involuntary end: the elections keep the killer armed for it until the process ends. */
const isLoss = (reason: unknown): reason is ElectionsError =>
	ElectionsError.is(reason) &&
	(reason.code === "ELECTIONS_LOST" || reason.code === "ELECTIONS_STORAGE_ERROR");

const safely = (fn: () => unknown): void => {
	try {
		const r = fn();
		if (r instanceof Promise) r.catch(() => {});
	} catch {
		// A callback must never break the campaign.
	}
};

/**
 * Campaigns for `key` until stopped, as Kubernetes client-go's `LeaderElector` does for users
 * that are not VVMs: follow while another candidate leads, acquire when free, lead while the
 * leadership lasts (`onStartedLeading` gets its signal), and campaign on after a voluntary release.
 * Storage errors while following count as "not acquired" and are retried; `onEvent`/`logger` of
 * the elections see them. A **lost** leadership ends the campaign: `done` rejects with the
 * `ElectionsError`, and the process should exit and be restarted (see {@link Campaign.done}).
 *
 * @example
 * ```ts
 * await using elections = createElections(vvmLeadershipStorage(driver), { logger: pino() });
 * await using run = campaign(elections, {
 *   key: 1, value: `${hostname()}#${randomUUID()}`, durationSeconds: 20,
 *   onStartedLeading: (signal) => serve(signal),
 *   onNewLeader: (leader) => console.log("leader:", leader),
 * });
 * await run.done.catch((lost) => {
 *   console.error(lost); // ELECTIONS_LOST or ELECTIONS_STORAGE_ERROR: the killer is armed
 *   process.exit(1); // the supervisor starts a fresh process, which campaigns again
 * });
 * ```
 */
export function campaign<K, V>(
	elections: Elections<K, V>,
	options: CampaignOptions<K, V>,
): Campaign {
	validateDuration(options.durationSeconds);
	const retryMs = options.retryMs ?? options.durationSeconds * 250;
	if (!Number.isFinite(retryMs) || retryMs <= 0) {
		throw new RangeError(`[@vvm/ielections] retryMs must be a finite number > 0, got ${retryMs}`);
	}
	const clock = options.clock ?? systemClock;
	const stopCtl = new AbortController();
	const external = options.signal;
	const onExternal = (): void => stopCtl.abort(external?.reason);
	if (external?.aborted) onExternal();
	else external?.addEventListener("abort", onExternal, { once: true });
	const stopped = stopCtl.signal;
	let observed: { value: V | undefined } | undefined;
	const observe = (value: V | undefined): void => {
		if (observed !== undefined && observed.value === value) return;
		observed = { value };
		safely(() => options.onNewLeader?.(value));
	};
	const untilAborted = (signal: AbortSignal): Promise<void> =>
		new Promise((resolve) => {
			const done = (): void => {
				signal.removeEventListener("abort", done);
				stopped.removeEventListener("abort", done);
				resolve();
			};
			if (signal.aborted || stopped.aborted) resolve();
			else {
				signal.addEventListener("abort", done, { once: true });
				stopped.addEventListener("abort", done, { once: true });
			}
		});

	const loop = async (): Promise<void> => {
		while (!stopped.aborted) {
			const signal = await elections.acquireLeadership(
				options.key,
				options.value,
				options.durationSeconds,
			);
			if (signal !== undefined) {
				observe(options.value);
				const state = elections.leadership(options.key);
				if (state !== undefined) safely(() => options.onStartedLeading?.(signal, state));
				await untilAborted(signal);
				if (!signal.aborted) await elections.releaseLeadership(options.key).catch(() => {});
				const reason: unknown = signal.reason;
				safely(() => options.onStoppedLeading?.(reason as ElectionsError));
				if (isLoss(reason)) {
					// Lost: the killer stays armed (the work may still run), so this process must not
					// lead again. Wait for the compare-and-delete of the lost record (a release of a key
					// no longer held does only that; its failure was reported as release-failed), then
					// end with the reason.
					if (elections.leadership(options.key) === undefined)
						await elections.releaseLeadership(options.key).catch(() => {});
					throw reason;
				}
				// Cleaned up elsewhere: these elections never acquire again.
				if (ElectionsError.is(reason) && reason.code === "ELECTIONS_CLEANUP") return;
				continue; // released (by stop(), or by a releaseLeadership of the key): campaign on
			}
			try {
				observe(await elections.currentLeader(options.key));
			} catch {
				// storage trouble: try again after the pause
			}
			await clock.sleep(retryMs, stopped).catch(() => {});
		}
	};
	const done = loop().finally(() => external?.removeEventListener("abort", onExternal));
	const stop = async (): Promise<void> => {
		stopCtl.abort(new Error("[@vvm/ielections] campaign stopped"));
		// A loss is reported by `done` (and onStoppedLeading); stopping after it is not an error.
		await done.catch(() => {});
	};
	return { done, stop, [Symbol.asyncDispose]: stop };
}
