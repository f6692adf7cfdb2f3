// GET /leases and the per-partition probe POST /work?partition=<p>: the smallest command a host
// serves only while it holds the partition (the command processor's routes ask the same
// placement). Every command served is logged ("served", at debug) with monotonic and wall stamps,
// so a checker can prove from the hosts' own logs that no partition was served twice at once.

import type { PartitionPlacement } from "@vvm/appparts";
import { isLeasesPlacement } from "@vvm/appparts";
import type { Logger } from "pino";
import type { ApiErrorReply } from "./api-errors.ts";
import { hostRefusal, notServedHere, unavailable } from "./api-errors.ts";
import type { PlacementMode } from "./config.ts";
import type { ExtraRoutes, JsonReply } from "./http-contract.ts";
import { systemMonotonicMs } from "./logger.ts";

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
	readonly logger: Logger;
}

/** An error answer as a route's JSON reply (the metrics outcome is the API v2 routes' only). */
const asJson = (reply: ApiErrorReply): JsonReply => ({
	status: reply.status,
	body: reply.body,
	headers: reply.headers,
});

const NO_PLACEMENT =
	"this host runs --placement static: partitions follow the VVM slots and there is no lease table; start the hosts with --placement leases";

/**
 * The routes `GET /leases` (the placement's `describe()`, or 404 without a placement) and
 * `POST /work?partition=<p>`: `200` with what it was served under while this host serves `p`,
 * `421` with the holder's address when another host holds it, `503` while nobody is known (or
 * this host is still deploying it), `400` for a bad partition; every error in the API v2 body
 * (`api-errors.ts`), the 421 and 503 the same as the command routes'. `POST /work` without `partition`
 * is not theirs (the VVM's demo worker answers it).
 *
 * @example
 * ```ts
 * const routes = createPartitionRoutes({ placement, partitions: 12, logger });
 * routes("POST", new URL("http://h/work?partition=3")); // { status: 200 | 421 | 503, body }
 * ```
 */
export function createPartitionRoutes(options: PartitionRoutesOptions): ExtraRoutes {
	const { partitions, logger } = options;
	const missing = (): JsonReply =>
		asJson(
			options.mode === "leases"
				? unavailable("not_ready", "the host is joining the lease cluster; retry")
				: hostRefusal(404, NO_PLACEMENT),
		);
	return (method, url) => {
		const placement = options.placement();
		if (url.pathname === "/leases") {
			if (method !== "GET")
				return asJson(
					hostRefusal(405, `method ${method} not allowed on /leases`, { allow: ["GET"] }),
				);
			if (placement === undefined) return missing();
			return { status: 200, body: placement.describe() };
		}
		if (url.pathname !== "/work" || method !== "POST" || !url.searchParams.has("partition")) {
			return undefined;
		}
		const raw = url.searchParams.get("partition") ?? "";
		const partition = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
		if (!Number.isSafeInteger(partition) || partition >= partitions) {
			return asJson(
				hostRefusal(400, `partition must be an integer in 0..${partitions - 1}, got "${raw}"`, {
					field: "partition",
				}),
			);
		}
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
		return asJson(notServedHere(where, partition, `${url.pathname}${url.search}`, options.self()));
	};
}
