/** Most partitions an application may have: partition IDs are u16 (voedger `PartitionID`). */
export const MAX_PARTITIONS = 0x1_0000;

/**
 * Throws a RangeError unless `n` is a partition count `1..65536` (the rule every placement of
 * the command processor's partitions applies too).
 *
 * @example
 * ```ts
 * checkPartitions(0); // RangeError: [@vvm/cp] partitions must be an integer in 1..65536, got 0
 * ```
 */
export function checkPartitions(n: number): void {
	if (!Number.isSafeInteger(n) || n < 1 || n > MAX_PARTITIONS)
		throw new RangeError(
			`[@vvm/cp] partitions must be an integer in 1..${MAX_PARTITIONS}, got ${n}`,
		);
}

/** @internal Whether `wsid` is a workspace ID: a safe integer `>= 1`. */
export function isWsid(wsid: unknown): wsid is number {
	return typeof wsid === "number" && Number.isSafeInteger(wsid) && wsid >= 1;
}

/**
 * The partition that serves a workspace: `wsid mod partitions` (voedger's rule). The count is
 * fixed for an application's lifetime: changing it moves workspaces between partitions, whose
 * PLogs are independent.
 *
 * @example
 * ```ts
 * partitionOf(1001, 10); // 1
 * ```
 */
export function partitionOf(wsid: number, partitions: number): number {
	checkPartitions(partitions);
	if (!isWsid(wsid))
		throw new RangeError(`[@vvm/cp] wsid must be a safe integer >= 1, got ${String(wsid)}`);
	return wsid % partitions;
}
