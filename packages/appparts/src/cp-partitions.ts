// The command processor's side of a placement: a partition granted here is deployed under its
// grant (fenced by the grant's token, writing only while the grant's lease is valid), and
// undeployed when the grant ends.
import type { AppPartition, CommandProcessor } from "@vvm/cp";
import type { Logger } from "@vvm/log";
import { silentLogger } from "@vvm/log";
import type { PlacementHandlers } from "./placement.ts";

/** Options of {@link deployCpPartitions}. */
export interface CpPartitionsOptions {
	/** Deploys, ready and undeploys at info; failed undeploys at error. Default silent. */
	readonly logger?: Logger;
}

/** The partitions of one command processor, driven by a placement through `handlers`. */
export interface CpPartitions {
	readonly handlers: PlacementHandlers;
	/** The deployed partition, `undefined` while it is not (yet) deployed here. */
	partition(partition: number): AppPartition | undefined;
	/** The fencing token of the grant the partition is deployed under. */
	fencingToken(partition: number): bigint | undefined;
	/** Waits for every undeploy under way, then closes the command processor. */
	close(): Promise<void>;
}

/**
 * Deploys `cp`'s partitions as a placement grants them. A grant that arrives while the same
 * partition is still being undeployed waits for that (a partition is never deployed twice at
 * once); a grant that ends before its deploy deploys nothing; `onGranted` resolves once the
 * partition actualized and accepts commands.
 *
 * @example
 * ```ts
 * const cp = createCommandProcessor({ storage, appId: 1, partitions: 12 });
 * const parts = deployCpPartitions(cp);
 * const placement = createLeasesPlacement({ storage, address, partitions: 12, leaseIntervalMs: 2_000,
 *   maxClockSkewMs: 400, namespace: "vvm", handlers: parts.handlers });
 * ```
 */
export function deployCpPartitions(
	cp: CommandProcessor,
	options: CpPartitionsOptions = {},
): CpPartitions {
	if (typeof cp?.deploy !== "function" || typeof cp.undeploy !== "function") {
		throw new TypeError("[@vvm/appparts] cp must be a CommandProcessor of @vvm/cp");
	}
	const logger = options.logger ?? silentLogger;
	const tokens = new Map<number, bigint | undefined>();
	const undeploying = new Map<number, Promise<void>>();
	let closing = false;

	const handlers: PlacementHandlers = {
		async onGranted(partition, grant) {
			const pending = undeploying.get(partition);
			if (pending !== undefined) await pending;
			grant.signal.throwIfAborted();
			// Fenced by the grant's token, writing only while the grant's lease is valid here.
			const deployed = cp.deploy(partition, {
				lease: {
					...(grant.fencingToken === undefined ? {} : { epoch: grant.fencingToken }),
					valid: grant.leaseValid,
				},
			});
			tokens.set(partition, grant.fencingToken);
			// A partition that closes on its own (a newer holder fenced it out) while its grant goes
			// on is given back, so the placement stops saying it is served here and hands it out
			// again under a new token; otherwise it stays dark for as long as the grant lasts.
			deployed.closed.addEventListener(
				"abort",
				() => {
					if (grant.signal.aborted || closing) return;
					const reason: unknown = deployed.closed.reason;
					const why = reason instanceof Error ? reason.message : String(reason);
					if (grant.release === undefined) {
						logger.error(
							{ event: "partition-closed", partition, err: reason },
							`partition ${partition} closed on its own (${why}); the placement cannot take it back (no grant.release): not served until its grant ends`,
						);
						return;
					}
					logger.warn(
						{ event: "partition-closed", partition, err: reason },
						`partition ${partition} closed on its own (${why}); giving its grant back`,
					);
					// Inside the abort: a throw here would be an uncaught exception.
					try {
						grant.release(reason);
					} catch (error) {
						logger.error(
							{ event: "partition-release-failed", partition, err: error },
							`partition ${partition}: giving its grant back failed`,
						);
					}
				},
				{ once: true },
			);
			logger.info(
				{ event: "partition-deployed", partition, fencingToken: grant.fencingToken?.toString() },
				`partition ${partition} deployed`,
			);
			await deployed.ready(grant.signal);
			logger.debug(
				{ event: "partition-ready", partition, nextPLogOffset: deployed.stats().nextPLogOffset },
				`partition ${partition} ready`,
			);
		},
		onEnded(partition, reason) {
			tokens.delete(partition);
			if (cp.partition(partition) === undefined) return;
			const closing = cp.undeploy(partition).then(
				() => {
					logger.info(
						{ event: "partition-undeployed", partition, reason },
						`partition ${partition} undeployed: ${reason}`,
					);
				},
				(error: unknown) => {
					logger.error(
						{ event: "partition-undeploy-failed", partition, err: error },
						"undeploy failed",
					);
				},
			);
			const tracked = closing.finally(() => {
				if (undeploying.get(partition) === tracked) undeploying.delete(partition);
			});
			undeploying.set(partition, tracked);
		},
	};

	return {
		handlers,
		partition: (partition) => cp.partition(partition),
		fencingToken: (partition) => tokens.get(partition),
		async close() {
			closing = true;
			tokens.clear();
			await Promise.all(undeploying.values());
			await cp.close();
		},
	};
}
