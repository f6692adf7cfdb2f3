// GET /leases and the per-partition probe POST /work?partition=<p>: the smallest command a host
// serves only while it holds the partition (the command processor's routes ask the same
// placement). Every command served is logged ("served", at debug) with monotonic and wall stamps,
// so a checker can prove from the hosts' own logs that no partition was served twice at once.

import type { PartitionPlacement } from "@vvm/appparts";
import { isLeasesPlacement } from "@vvm/appparts";
import type { Logger } from "pino";
import type { PlacementMode } from "../config.ts";
import { systemMonotonicMs } from "../logger.ts";
import { hostRefusal, notServedHere, unavailable } from "./errors.ts";
import type { Reply, Route } from "./router.ts";

/** Options of {@link createPartitionRoutes}. */
export interface PartitionRoutesOptions {
	readonly mode: PlacementMode;
	/**
	 * The running placement, asked per request; `undefined` in static mode without the command
	 * processor, or while a leases host is still starting.
	 */
	readonly placement: () => PartitionPlacement | undefined;
	readonly partitions: number;
	/** This host's advertised address (a holder named as itself is no redirect: 503). */
	readonly self: () => string;
	/** The scheme of the cluster's hosts, for 421's `Location` (default `http`). */
	readonly scheme?: "http" | "https";
	readonly logger: Logger;
}

const NO_PLACEMENT =
	"this host runs --placement static: partitions follow the VVM slots and there is no lease table; start the hosts with --placement leases";

/**
 * The routes `GET /leases` (the placement's `describe()`, 404 in static mode, 503 while a leases
 * host is starting) and `POST /work?partition=<p>`: `200` with what it was served under while this
 * host serves `p`, `421` with the holder's address when another host holds it, `503` while nobody
 * is known (or this host is still deploying it), `400` for a bad partition; every error in the
 * API v2 body (errors.ts), the 421 and 503 the same as the command routes'. `POST /work` without
 * `partition` is the next route's (the VVM's demo worker).
 *
 * @example
 * ```ts
 * const table = createRouteTable([...partitionRoutes({ mode, placement, partitions: 12, self, logger }), ...operatorRoutes(state)]);
 * ```
 */
export function partitionRoutes(options: PartitionRoutesOptions): Route[] {
	const { partitions, logger } = options;
	const missing = (): Reply =>
		options.mode === "leases"
			? unavailable("not_ready", "the host is joining the lease cluster; retry")
			: hostRefusal(404, NO_PLACEMENT);
	const leases: Route = {
		method: "GET",
		path: "/leases",
		handle: () => {
			const placement = options.placement();
			return placement === undefined ? missing() : { status: 200, body: placement.describe() };
		},
	};
	const work: Route = {
		method: "POST",
		path: "/work",
		when: (url) => url.searchParams.has("partition"),
		handle: ({ url }) => {
			const raw = url.searchParams.get("partition") ?? "";
			const partition = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
			if (!Number.isSafeInteger(partition) || partition >= partitions) {
				return hostRefusal(
					400,
					`partition must be an integer in 0..${partitions - 1}, got "${raw}"`,
					{
						field: "partition",
					},
				);
			}
			const placement = options.placement();
			if (placement === undefined) return missing();
			// Stamped before the check: the command took effect no earlier than `mono`, and the lease
			// was valid here at the check, so the whole interval [mono, check] lies inside the lease.
			const mono = systemMonotonicMs();
			const at = Date.now(); // for logs and humans only
			const where = placement.locate(partition);
			if (where.kind === "served") {
				const info = isLeasesPlacement(placement) ? (placement.servingInfo(partition) ?? {}) : {};
				logger.debug({ event: "served", partition, mono, at, ...info }, "partition command served");
				return { status: 200, body: { done: true, partition, mono, at, ...info } };
			}
			return notServedHere(
				where,
				partition,
				`${url.pathname}${url.search}`,
				options.self(),
				options.scheme,
			);
		},
	};
	return [leases, work];
}
