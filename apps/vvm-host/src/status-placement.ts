// The `placement` field of `GET /status`: which placement mode the host runs, so the status page
// shows what applies to it (slots and leader records in static mode; the lease cluster, this
// host's partitions and the placement driver in leases mode).
import type { LeasesDescription, PartitionPlacement } from "@vvm/appparts";
import { isLeasesPlacement } from "@vvm/appparts";
import type { PlacementMode } from "./config.ts";

/** `placement` of `/status` in leases mode: the `GET /leases` description and what the page needs. */
export interface LeasesPlacementStatus extends LeasesDescription {
	/** This host's wall clock (ms) at the answer: what `table.leases[].expirationTime` is read against. */
	readonly now: number;
	/**
	 * Partitions whose lease the table gives this host (this incarnation, not expired) that it
	 * does not serve yet: granted, being deployed (or not yet picked up by its holder).
	 */
	readonly deploying: readonly number[];
	/**
	 * The active placement driver as this host last saw it (`@vvm/leases` `metrics().activeActor`,
	 * `address/incarnation`): itself while it is the active one, the elections record while it is
	 * a standby candidate, else the writer of the newest lease batch it read.
	 */
	readonly placementDriver: {
		/** This host is the active placement driver. */
		readonly self: boolean;
		/** `address/incarnation` of the active driver; `null` while none is known. */
		readonly actor: string | null;
		readonly address: string | null;
		readonly incarnation: string | null;
	};
}

/**
 * `placement` of `/status`: the mode alone in static mode (the slot sections describe the rest)
 * and while a leases host has no placement yet; the lease cluster once it has one.
 */
export type PlacementStatus = { readonly mode: PlacementMode } | LeasesPlacementStatus;

/** `address/incarnation` split at its last `/` (an address never ends with one). */
function splitActor(actor: string | undefined): [string | null, string | null] {
	if (actor === undefined) return [null, null];
	const at = actor.lastIndexOf("/");
	return at < 0 ? [actor, null] : [actor.slice(0, at), actor.slice(at + 1)];
}

/**
 * The `placement` field of `/status` for a host in `mode` whose placement is `placement` (once
 * created).
 *
 * @example
 * ```ts
 * const state = { ...rest, placement: () => placementStatus("leases", served, Date.now()) };
 * ```
 */
export function placementStatus(
	mode: PlacementMode,
	placement: PartitionPlacement | undefined,
	now: number,
): PlacementStatus {
	if (placement === undefined || !isLeasesPlacement(placement)) return { mode };
	const view = placement.describe();
	const served = new Set(view.served);
	const deploying = view.table.leases
		.filter(
			(l) =>
				l.holder.incarnation === view.incarnation && l.expirationTime > now && !served.has(l.group),
		)
		.map((l) => l.group);
	const [address, incarnation] = splitActor(view.metrics.activeActor);
	return {
		...view,
		now,
		deploying,
		placementDriver: {
			self: view.metrics.placementDriverActive,
			actor: view.metrics.activeActor ?? null,
			address,
			incarnation,
		},
	};
}
