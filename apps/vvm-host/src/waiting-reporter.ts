import type { ITTLStorage } from "@vvm/ielections";
import { VVM_LEADER_PREFIX } from "@vvm/ielections";
import type { VVMEvent } from "@vvm/orch";
import { parseLeaderValue } from "@vvm/orch";
import type { TTLStorage } from "@vvm/ttlstorage";
import { u32 } from "@vvm/ttlstorage";
import type { Logger } from "pino";
import { describeError } from "./logger.ts";

/** How often, at most, a host that waits for a slot says so. */
const WAITING_REPORT_INTERVAL_MS = 5_000;

/**
 * Tells the operator why the host is not leading: on the first "slot held elsewhere" of a launch
 * and then at most every {@link WAITING_REPORT_INTERVAL_MS}, an `info` line naming who holds the
 * slot and when its record expires unless renewed. Reads are in the background and never delay
 * the acquisition loop; a failed read is logged, never thrown.
 */
export function createWaitingReporter(options: {
	readonly logger: Logger;
	readonly leadership: ITTLStorage<number, string>;
	readonly driver: TTLStorage;
	/** Monotonic ms, for the rate limit. */
	readonly monotonic: () => number;
	/** Wall ms, for the "until" the operator reads. */
	readonly now: () => number;
	readonly intervalMs?: number;
}): (event: VVMEvent) => void {
	const interval = options.intervalMs ?? WAITING_REPORT_INTERVAL_MS;
	let last: number | undefined;
	let reading = false;
	const report = async (slot: number): Promise<void> => {
		const [holder, ttl] = await Promise.all([
			options.leadership.get(slot),
			options.driver.queryTTL(u32(VVM_LEADER_PREFIX), u32(slot)),
		]);
		if (holder === undefined || ttl === undefined) {
			options.logger.info(
				{ event: "waiting", slot, holder: null },
				`slot ${slot} was held a moment ago and is free now; acquiring it`,
			);
			return;
		}
		// queryTTL rounds up to whole seconds: "until" is an upper bound.
		const until = new Date(options.now() + ttl * 1000).toISOString();
		options.logger.info(
			{
				event: "waiting",
				slot,
				holder,
				address: parseLeaderValue(holder).address,
				expiresInSeconds: ttl,
				until,
			},
			`waiting for slot ${slot}: held by ${holder} until ${until} unless it renews`,
		);
	};
	return (event) => {
		if (event.type === "leader" || event.type === "shutdown-started") {
			last = undefined;
			return;
		}
		if (event.type !== "acquire-failed" || event.reason !== "held" || reading) return;
		const now = options.monotonic();
		if (last !== undefined && now - last < interval) return;
		last = now;
		reading = true;
		void report(event.key)
			.catch((error: unknown) =>
				options.logger.warn(
					{ event: "waiting", slot: event.key, error: describeError(error) },
					`waiting for slot ${event.key}; cannot read who holds it`,
				),
			)
			.finally(() => {
				reading = false;
			});
	};
}
