import { types } from "cassandra-driver";

const c = types.consistencies;

/**
 * The consistency levels this driver accepts, per option. Only levels that keep every read and
 * every condition consistent with every acknowledged write (a quorum or more of the replicas):
 * a write or commit at `ONE` may live on one replica while a quorum read asks the other two, and
 * a read at `ONE` may ask the one replica that has not got a committed write yet.
 *
 * - `serialConsistency` (the Paxos round of conditional writes): `serial`, `localSerial`;
 * - `consistency` (plain writes, and the commit of a conditional write): `quorum`,
 *   `localQuorum`, `eachQuorum`, `all`;
 * - `readConsistency`: the same, or `serial` / `localSerial` (linearizable reads).
 *
 * @example
 * ```ts
 * CASSANDRA_CONSISTENCY_LEVELS.serialConsistency.includes(types.consistencies.serial); // true
 * ```
 */
export const CASSANDRA_CONSISTENCY_LEVELS: Readonly<{
	serialConsistency: readonly number[];
	consistency: readonly number[];
	readConsistency: readonly number[];
}> = Object.freeze({
	serialConsistency: Object.freeze([c.serial, c.localSerial]),
	consistency: Object.freeze([c.quorum, c.localQuorum, c.eachQuorum, c.all]),
	readConsistency: Object.freeze([
		c.quorum,
		c.localQuorum,
		c.eachQuorum,
		c.all,
		c.serial,
		c.localSerial,
	]),
});

/** The consistency of each kind of statement, as resolved from the options. */
export interface CassandraConsistency {
	readonly serialConsistency: number;
	readonly consistency: number;
	readonly readConsistency: number;
}

const nameOf = (level: number): string | undefined =>
	Object.entries(c).find(([, value]) => value === level)?.[0];

function check(option: keyof CassandraConsistency, level: unknown): number {
	const allowed = CASSANDRA_CONSISTENCY_LEVELS[option];
	if (typeof level === "number" && allowed.includes(level)) return level;
	const got =
		typeof level === "number" && nameOf(level) !== undefined
			? `${nameOf(level)} (${level})`
			: String(level);
	throw new RangeError(
		`[@vvm/ttlstorage-cas] ${option} must be one of cassandra-driver's types.consistencies ${allowed.map((l) => nameOf(l)).join(", ")}, got ${got}. Weaker levels let a read or a condition miss an acknowledged write; see the README, "Consistency".`,
	);
}

/**
 * Resolves and validates the consistency options of `createCassandraTTLStorage`: defaults
 * `serial` for conditions and `quorum` for reads and writes (safe with any number of data
 * centres); a level outside {@link CASSANDRA_CONSISTENCY_LEVELS} is a `RangeError`.
 *
 * @example
 * ```ts
 * resolveConsistency({}); // { serialConsistency: 8, consistency: 4, readConsistency: 4 }
 * ```
 */
export function resolveConsistency(options: {
	readonly serialConsistency?: number;
	readonly consistency?: number;
	readonly readConsistency?: number;
}): CassandraConsistency {
	const serialConsistency = check("serialConsistency", options.serialConsistency ?? c.serial);
	const consistency = check("consistency", options.consistency ?? c.quorum);
	const readConsistency = check("readConsistency", options.readConsistency ?? consistency);
	return { serialConsistency, consistency, readConsistency };
}
