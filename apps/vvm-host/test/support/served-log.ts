// Checks the hosts' `served` log lines (POST /work?partition=p) for two holders at once.

/** One `served` log line of a host. */
export interface ServedLine {
	readonly host: string;
	readonly partition: number;
	/** `CLOCK_MONOTONIC` ms, taken before the serving check: one clock for every process here. */
	readonly mono: number;
	readonly incarnation: string;
	/** The lease's startTime. */
	readonly fencingToken: number;
}

/** What one holder served of one partition under one lease: first and last command. */
interface Interval {
	readonly key: string;
	readonly incarnation: string;
	readonly fencingToken: number;
	readonly start: number;
	readonly end: number;
}

/** The result of {@link checkNoOverlap}. */
export interface OverlapCheck {
	/** Pairs of leases of one partition whose served commands interleave (must be empty). */
	readonly overlaps: string[];
	/** A later lease with a fencing token not above the earlier one's (must be empty). */
	readonly tokenRegressions: string[];
	/** Changes of holder (incarnation) over all partitions. */
	readonly handovers: number;
	/** The smallest time between the last command of one holder and the first of the next. */
	readonly minGapMs: number;
}

/**
 * Groups the commands of each partition by lease (incarnation + fencing token) and checks that
 * the leases' served intervals are disjoint, in the order of their fencing tokens.
 */
export function checkNoOverlap(lines: readonly ServedLine[]): OverlapCheck {
	const byPartition = new Map<number, Map<string, Interval>>();
	for (const l of lines) {
		const leases = byPartition.get(l.partition) ?? new Map<string, Interval>();
		byPartition.set(l.partition, leases);
		const key = `${l.host}/${l.incarnation}/${l.fencingToken}`;
		const cur = leases.get(key);
		leases.set(key, {
			key,
			incarnation: l.incarnation,
			fencingToken: l.fencingToken,
			start: Math.min(cur?.start ?? l.mono, l.mono),
			end: Math.max(cur?.end ?? l.mono, l.mono),
		});
	}
	const overlaps: string[] = [];
	const tokenRegressions: string[] = [];
	let handovers = 0;
	let minGapMs = Number.POSITIVE_INFINITY;
	for (const [partition, leases] of byPartition) {
		const sorted = [...leases.values()].sort((a, b) => a.start - b.start);
		let latest: Interval | undefined; // the interval reaching furthest so far
		let previous: Interval | undefined;
		for (const iv of sorted) {
			if (latest !== undefined && iv.start <= latest.end) {
				overlaps.push(
					`partition ${partition}: ${iv.key} [${iv.start}, ${iv.end}] overlaps ${latest.key} [${latest.start}, ${latest.end}]`,
				);
			}
			if (previous !== undefined) {
				if (iv.fencingToken <= previous.fencingToken) {
					tokenRegressions.push(`partition ${partition}: ${iv.key} after ${previous.key}`);
				}
				if (iv.incarnation !== previous.incarnation) {
					handovers++;
					minGapMs = Math.min(minGapMs, iv.start - previous.end);
				}
			}
			if (latest === undefined || iv.end > latest.end) latest = iv;
			previous = iv;
		}
	}
	return { overlaps, tokenRegressions, handovers, minGapMs };
}

/** `[min, median, max]` of `xs` (NaN when empty). */
export function summarize(xs: readonly number[]): [number, number, number] {
	if (xs.length === 0) return [Number.NaN, Number.NaN, Number.NaN];
	const s = [...xs].sort((a, b) => a - b);
	const mid =
		s.length % 2 === 1
			? (s[(s.length - 1) / 2] as number)
			: ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
	return [s[0] as number, mid, s[s.length - 1] as number];
}
