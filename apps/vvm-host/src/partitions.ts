import type { AppPartition, CommandProcessor } from "@vvm/cp";
import { createCommandProcessor } from "@vvm/cp";
import type { TTLStorage } from "@vvm/ttlstorage";
import type { Logger } from "pino";
import type { PlacementHandlers } from "./placement.ts";

/** The cluster application ID of the host's one application (`@vvm/cp` scopes every key by it). */
export const HOST_APP_ID = 1;

/** Options of {@link createHostPartitions}. */
export interface HostPartitionsOptions {
	/** The storage; its `supports` decide atomic batches and fencing. */
	readonly storage: TTLStorage;
	readonly partitions: number;
	readonly trustLevel: 0 | 1 | 2;
	/** How long an idempotency key is remembered, s. */
	readonly idempotencyKeyTtlSeconds: number;
	/** TEST-ONLY mutant `unfenced`: no fences, no lease check on acknowledgments. */
	readonly unsafeUnfenced?: boolean;
	readonly logger: Logger;
}

/** The partitions this host has deployed, and the handlers a placement drives them with. */
export interface HostPartitions {
	readonly cp: CommandProcessor;
	readonly handlers: PlacementHandlers;
	/** The deployed partition, `undefined` while it is not (yet) deployed here. */
	partition(partition: number): AppPartition | undefined;
	/** The fencing token of the grant the partition is deployed under. */
	fencingToken(partition: number): bigint | undefined;
	/** Undeploys everything and waits for queued writes; the storage stays open. */
	close(): Promise<void>;
}

/**
 * One command processor over the host's storage, deployed partition by partition as the placement
 * grants them. A grant that arrives while the same partition is still being undeployed waits for
 * that (a partition is never deployed twice at once); a grant that ends before its deploy deploys
 * nothing.
 *
 * @example
 * ```ts
 * const parts = createHostPartitions({ storage, partitions: 10, trustLevel: 0, idempotencyKeyTtlSeconds: 86_400, logger });
 * const { placement } = createPlacement("static", { …, handlers: parts.handlers });
 * ```
 */
export function createHostPartitions(options: HostPartitionsOptions): HostPartitions {
	const { logger } = options;
	const cp = createCommandProcessor({
		storage: options.storage,
		appId: HOST_APP_ID,
		partitions: options.partitions,
		trustLevel: options.trustLevel,
		idempotencyTtlSeconds: options.idempotencyKeyTtlSeconds,
		...(options.unsafeUnfenced === true ? { unsafeUnfenced: true } : {}),
		logger: logger.child({ component: "cp" }),
	});
	const tokens = new Map<number, bigint | undefined>();
	const undeploying = new Map<number, Promise<void>>();

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
		cp,
		handlers,
		partition: (partition) => cp.partition(partition),
		fencingToken: (partition) => tokens.get(partition),
		async close() {
			tokens.clear();
			await Promise.all(undeploying.values());
			await cp.close();
		},
	};
}
