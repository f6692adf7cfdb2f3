import type { LeaseEvent, SlowLoop } from "@vvm/leases";
import type { VVMEvent } from "@vvm/orch";
import { parseLeaderValue } from "@vvm/orch";
import type { DestinationStream, Logger } from "pino";
import { pino } from "pino";

/**
 * `CLOCK_MONOTONIC` in ms (`process.hrtime`): one clock for every process on a machine, never
 * stepped, so the logs of hosts whose wall clocks differ (or are faked) can still be ordered.
 */
export function systemMonotonicMs(): number {
	return Number(process.hrtime.bigint() / 1_000n) / 1_000;
}

/**
 * The host's structured logger: JSON lines on stdout (synchronous, so nothing is lost on exit),
 * `time` in epoch ms (this host's wall clock), `mono` = {@link systemMonotonicMs}.
 */
export function createHostLogger(level: string, destination?: DestinationStream): Logger {
	return pino(
		{
			level,
			base: { pid: process.pid },
			messageKey: "msg",
			mixin: () => ({ mono: systemMonotonicMs() }),
		},
		destination ?? pino.destination({ fd: 1, sync: true }),
	);
}

const describeError = (error: unknown): string | undefined => {
	if (error === undefined) return undefined;
	if (!(error instanceof Error)) return String(error);
	let text = error.message;
	let cause: unknown = error.cause;
	for (let depth = 0; cause !== undefined && depth < 4; depth++) {
		text += ` <- ${cause instanceof Error ? cause.message : String(cause)}`;
		cause = cause instanceof Error ? cause.cause : undefined;
	}
	return text;
};

/**
 * Logs one VVM or leadership event with an `event` field (the event type) and the slot; every
 * leadership change is logged at `info` or above, renewals at `debug`. Events that carry the
 * leader record's value log it as `holder` and its address part as `address`. Lease times are
 * logged as `leaseLeftMs` (from the monotonic deadline) and `leaseUntil`, the wall time it
 * corresponds to when logged (for humans and for comparing logs of hosts on one machine).
 */
export function logVVMEvent(logger: Logger, event: VVMEvent): void {
	switch (event.type) {
		case "launching":
			logger.info(
				{
					event: event.type,
					address: parseLeaderValue(event.address).address,
					holder: event.address,
					numVVM: event.numVVM,
					durationSeconds: event.durationSeconds,
					acquisitionDurationMs: event.acquisitionDurationMs,
				},
				"launching: acquiring leadership",
			);
			return;
		case "acquired":
			logger.info(
				{
					event: event.type,
					slot: event.key,
					address: parseLeaderValue(event.value).address,
					holder: event.value,
					at: event.at,
					fencingToken: event.fencingToken,
					leaseLeftMs: Math.round(event.leaseLeftMs),
					leaseUntil: Math.round(event.at + event.leaseLeftMs),
				},
				`acquired leadership of slot ${event.key}`,
			);
			return;
		case "acquire-failed":
			logger.debug(
				{
					event: event.type,
					slot: event.key,
					reason: event.reason,
					error: describeError(event.error),
				},
				`slot ${event.key} not acquired (${event.reason})`,
			);
			return;
		case "renewed":
			logger.debug(
				{
					event: event.type,
					slot: event.key,
					at: event.at,
					leaseLeftMs: Math.round(event.leaseLeftMs),
					leaseUntil: Math.round(event.at + event.leaseLeftMs),
					latencyMs: event.latencyMs,
				},
				"leadership renewed",
			);
			return;
		case "renewal-failed":
			logger.warn(
				{
					event: event.type,
					slot: event.key,
					attempt: event.attempt,
					error: describeError(event.error),
				},
				"leadership renewal failed",
			);
			return;
		case "lost":
			logger.error(
				{
					event: event.type,
					slot: event.key,
					reason: event.reason,
					error: describeError(event.error),
				},
				`leadership of slot ${event.key} lost`,
			);
			return;
		case "released":
			logger.info(
				{ event: event.type, slot: event.key, reason: event.reason },
				`leadership of slot ${event.key} released`,
			);
			return;
		case "release-failed":
			logger.error(
				{ event: event.type, slot: event.key, error: describeError(event.error) },
				"releasing leadership failed",
			);
			return;
		case "leader":
			logger.info(
				{
					event: event.type,
					slot: event.slot,
					address: parseLeaderValue(event.address).address,
					holder: event.address,
					leaseLeftMs: Math.round(event.leaseLeftMs),
					leaseUntil: Math.round(event.at + event.leaseLeftMs),
				},
				`became leader of slot ${event.slot}`,
			);
			return;
		case "services-started":
			logger.info({ event: event.type, services: event.services }, "services started");
			return;
		case "problem":
			logger.error({ event: event.type, error: describeError(event.error) }, "VVM problem");
			return;
		case "shutdown-started":
			logger.info({ event: event.type }, "shutting down");
			return;
		case "shutdown-done":
			logger.info({ event: event.type, problem: describeError(event.problem) }, "shut down");
			return;
	}
}

export { describeError };

/**
 * Logs one `@vvm/leases` event as `event: "leases.<type>"`: grants, lease starts and ends,
 * placement-driver changes and storage errors at info/warn, ticks at debug.
 */
export function logLeaseEvent(logger: Logger, event: LeaseEvent): void {
	const name = `leases.${event.type}`;
	switch (event.type) {
		case "tick":
			logger.debug({ ...event, event: name, type: undefined }, "placement-driver tick");
			return;
		case "granted":
		case "lease-started":
		case "lease-ended": {
			const { lease, type: _, ...rest } = event;
			logger.info(
				{
					...rest,
					event: name,
					partition: lease.group,
					holder: lease.holder.address,
					incarnation: lease.holder.incarnation,
					startTime: lease.startTime,
					expirationTime: lease.expirationTime,
					term: lease.term,
				},
				`${event.type} partition ${lease.group} (${lease.holder.address})${"reason" in event ? `: ${event.reason}` : ""}`,
			);
			return;
		}
		case "placement-driver":
			logger.info(
				{ event: name, at: event.at, active: event.active },
				event.active ? "active placement driver" : "no longer the active placement driver",
			);
			return;
		case "resharded":
			logger.info({ ...event, event: name, type: undefined }, "lease batch re-sharded");
			return;
		case "storage-error":
			logger.warn(
				{
					event: name,
					at: event.at,
					operation: event.operation,
					error: event.error instanceof Error ? event.error.message : String(event.error),
				},
				`leases: storage error during ${event.operation}`,
			);
			return;
		case "batch-fault": {
			// Every read that finds the batch unusable (each poll and tick) until an operator repairs
			// it: `vvm-host repair-lease-root` (README, "Lost lease root").
			const code = (event.error as { code?: unknown } | undefined)?.code;
			logger.error(
				{
					event: name,
					at: event.at,
					operation: event.operation,
					code: typeof code === "string" ? code : undefined,
					error: event.error instanceof Error ? event.error.message : String(event.error),
				},
				"leases: the lease batch is unusable; nothing is granted until vvm-host repair-lease-root repairs it",
			);
			return;
		}
		case "replaced":
			logger.error(
				{ event: name, at: event.at, by: event.by },
				"leases: another process took over this address",
			);
			return;
		case "slow-loop": {
			// At most one per loop per lease interval (the leases package throttles it).
			const what = SLOW_LOOP_LABEL[event.loop];
			const more = event.runs > 1 ? ` (${event.runs} runs over it since the last warning)` : "";
			logger.warn(
				{ ...event, event: name, type: undefined },
				`leases: ${what} took ${Math.round(event.durationMs)} ms, longer than its ${event.intervalMs} ms interval${more}; storage this slow for --lease-interval-ms ${event.leaseIntervalMs} lets leases lapse and partitions go dark (@vvm/leases README, "Slow storage")`,
			);
			return;
		}
	}
}

const SLOW_LOOP_LABEL: Readonly<Record<SlowLoop, string>> = {
	heartbeat: "a heartbeat write",
	poll: "a read of the lease batch",
	tick: "a placement-driver tick",
};
