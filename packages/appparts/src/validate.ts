import { MAX_PARTITIONS } from "@vvm/cp";

/** The partition count rule of `@vvm/cp` (1..65536), checked before anything runs. */
export function checkPartitions(partitions: number): void {
	if (!Number.isSafeInteger(partitions) || partitions < 1 || partitions > MAX_PARTITIONS) {
		throw new RangeError(
			`[@vvm/appparts] partitions must be an integer in 1..${MAX_PARTITIONS}, got ${partitions}`,
		);
	}
}
