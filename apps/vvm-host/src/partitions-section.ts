import type { CpPartitions, PartitionPlacement } from "@vvm/appparts";
import type { StatusSection } from "./http/operator-routes.ts";

/**
 * The status page's "Partitions" table: each partition this host serves, with its state, the
 * fencing token it is served under, its next PLog offset, flush lag (unflushed sequence values),
 * queue and counters since its deploy.
 *
 * @example
 * ```ts
 * const state = { …, sections: async () => [partitionsSection(placement, parts)] };
 * ```
 */
export function partitionsSection(
	placement: PartitionPlacement,
	parts: Pick<CpPartitions, "partition" | "fencingToken">,
): StatusSection {
	const rows = placement.served().map((p) => {
		const deployed = parts.partition(p);
		if (deployed === undefined) return [p, "deploying", null, null, null, null, null, null];
		const s = deployed.stats();
		return [
			p,
			s.actualizing ? "actualizing" : "serving",
			parts.fencingToken(p)?.toString() ?? null,
			s.nextPLogOffset,
			s.unflushedValues,
			s.queued,
			s.commands,
			s.conflicts,
		];
	});
	return {
		id: "partitions",
		title: `Partitions served (${placement.mode} placement)`,
		columns: [
			"partition",
			"state",
			"fencing token",
			"next PLog offset",
			"flush lag",
			"queued",
			"commands",
			"conflicts",
		],
		rows,
	};
}
