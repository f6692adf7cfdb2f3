import type { Clock } from "@vvm/clock";
import type { Killer } from "@vvm/ielections";
import type { TTLStorage } from "@vvm/ttlstorage";
import { MAX_TTL_SECONDS } from "@vvm/ttlstorage";
import { utf8Length } from "./codec/byte-writer.ts";
import type { LeaseEvent } from "./events.ts";
import type { LeaseEnd, LeaseGrant } from "./holder.ts";
import { MAX_ADDRESS_BYTES, MAX_NAMESPACE_BYTES } from "./keys.ts";

/**
 * Most groups one batch manages (a host's acknowledgements of all of them fit in one record).
 *
 * @example
 * ```ts
 * const groups = Math.min(partitions, MAX_GROUPS);
 * ```
 */
export const MAX_GROUPS = 25_000;

/**
 * Defaults of {@link LeaseNodeOptions}.
 *
 * @example
 * ```ts
 * const skew = options.maxClockSkewMs ?? LEASE_DEFAULTS.maxClockSkewMs; // 500
 * ```
 */
export const LEASE_DEFAULTS: {
	readonly namespace: "vvm";
	readonly leaseIntervalMs: 10_000;
	readonly maxClockSkewMs: 500;
} = Object.freeze({ namespace: "vvm", leaseIntervalMs: 10_000, maxClockSkewMs: 500 } as const);

/**
 * Options of the placement-driver candidate a node runs.
 *
 * @example
 * ```ts
 * createLeaseNode({ ..., placementDriver: { groups: 64, leadershipSeconds: 2 } });
 * ```
 */
export interface PlacementDriverOptions {
	/** Groups to keep leased: `0 .. groups - 1` (1..25 000). Every candidate must use the same. */
	readonly groups: number;
	/**
	 * TTL of the placement driver's elections record, whole seconds; default
	 * `max(1, round(leaseIntervalMs / 5000))`. A failover of the placement driver takes up to this
	 * plus a tick (plus up to a second on Cassandra, which expires records late); survivors' leases
	 * do not lapse while this (in ms) `+ 2·tickIntervalMs + pollIntervalMs + maxClockSkewMs` + the
	 * storage's late expiry and latency stays below `0.75·leaseIntervalMs` (README,
	 * "Placement-driver failover").
	 */
	readonly leadershipSeconds?: number;
	/**
	 * Killer of the placement driver's elections; default none (see the README: the batch is
	 * fenced by compare-and-swap, so a stale driver cannot do harm and must not SIGKILL the host).
	 */
	readonly killer?: Killer;
	/** Test knob: largest batch record in bytes (default the storage limit). @internal */
	readonly recordLimit?: number;
}

/**
 * Options of {@link createLeaseNode}. Only `storage` and `address` are required.
 *
 * @example
 * ```ts
 * const options: LeaseNodeOptions = {
 *   storage, address: "10.0.0.1:8080", placementDriver: { groups: 64 },
 *   onGranted: (g) => partitions.start(g.group, g.signal),
 * };
 * ```
 */
export interface LeaseNodeOptions {
	/** Any `@vvm/ttlstorage` driver; the node never closes it. */
	readonly storage: TTLStorage;
	/** This host's address, as other hosts reach it (what a 421 reply names); 1..255 bytes. */
	readonly address: string;
	/** Prefix of every record (a cluster); default `"vvm"`. */
	readonly namespace?: string;
	/** Lease length in ms, as granted by the placement driver; default 10 000. */
	readonly leaseIntervalMs?: number;
	/**
	 * The bound on the difference between any two hosts' wall clocks (plus monotonic drift over
	 * a lease interval); a holder stops serving at `expirationTime - maxClockSkewMs` by its own
	 * clock. Default 500. Must be below `leaseIntervalMs / 4`. Every host must use the same.
	 */
	readonly maxClockSkewMs?: number;
	/** Run a placement-driver candidate here (`false`: only hold leases). Default: off. */
	readonly placementDriver?: PlacementDriverOptions | false;
	/** Time source; default `systemClock`. */
	readonly clock?: Clock;
	/**
	 * A lease was granted to this host: start the group (e.g. actualize its sequencer), stop when
	 * `grant.signal` aborts. While its promise is pending the heartbeat says "deploying" and the
	 * placement driver prolongs the lease, however long it takes (a deployment that never settles
	 * keeps the group: bound it, and reject to decline); the lease counts as accepted once this
	 * returns or its promise resolves; if it throws or rejects, the host declines the lease.
	 */
	readonly onGranted?: (grant: LeaseGrant) => void | Promise<void>;
	/** This host stopped serving a group (expiry, close, ...). */
	readonly onEnded?: (end: LeaseEnd) => void;
	/** Events for logs and metrics; a throwing listener is ignored. */
	readonly onEvent?: (event: LeaseEvent) => void;
	/** Placement-driver tick; default `leaseIntervalMs / 10` (seed 002). */
	readonly tickIntervalMs?: number;
	/** How often the batch is read; default `leaseIntervalMs / 10`. */
	readonly pollIntervalMs?: number;
	/** How often the heartbeat is written; default `leaseIntervalMs / 10`. */
	readonly heartbeatIntervalMs?: number;
	/** TTL of the heartbeat record, whole seconds; default `max(1, ceil(leaseIntervalMs / 1000))`. */
	readonly heartbeatTtlSeconds?: number;
}

/** Every timing, resolved and checked. @internal */
export interface ResolvedOptions {
	readonly storage: TTLStorage;
	readonly address: string;
	readonly namespace: string;
	readonly leaseIntervalMs: number;
	readonly maxClockSkewMs: number;
	readonly tickIntervalMs: number;
	readonly pollIntervalMs: number;
	readonly heartbeatIntervalMs: number;
	readonly heartbeatTtlSeconds: number;
	/** A member counts as alive while seen alive less than this ago: `leaseIntervalMs / 2`. */
	readonly freshWindowMs: number;
	/** A lease is prolonged once less than this is left: `0.75 leaseIntervalMs`. */
	readonly prolongBelowMs: number;
	readonly placementDriver:
		| {
				readonly groups: number;
				readonly leadershipSeconds: number;
				readonly killer: Killer | undefined;
				readonly recordLimit: number | undefined;
		  }
		| undefined;
}

function positiveMs(name: string, value: unknown, max: number): number {
	if (typeof value !== "number" || !Number.isFinite(value) || value <= 0 || value > max)
		throw new RangeError(
			`[@vvm/leases] ${name} must be a number of ms in (0, ${max}], got ${String(value)}`,
		);
	return value;
}

function integer(name: string, value: unknown, min: number, max: number): number {
	if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max)
		throw new RangeError(
			`[@vvm/leases] ${name} must be an integer in ${min}..${max}, got ${String(value)}`,
		);
	return value;
}

/** The options every host of one lease cluster must agree on. */
export interface LeaseTimings {
	readonly leaseIntervalMs: number;
	readonly maxClockSkewMs: number;
	readonly namespace: string;
}

/**
 * The rules of {@link LeaseTimings}, for a caller that takes them from elsewhere (a CLI, a config
 * file) and wants them checked before it builds anything: `leaseIntervalMs` an integer in
 * 100..86 400 000, `maxClockSkewMs` at least 0 and below a quarter of it, `namespace` non-empty
 * and at most `MAX_NAMESPACE_BYTES` bytes. Missing values take `LEASE_DEFAULTS`. `name` says how
 * the caller calls an option in its messages (default: the option's own name); throws a
 * `TypeError`/`RangeError` that names it. `createLeaseNode` applies the same rules.
 *
 * @example
 * ```ts
 * checkLeaseTimings({ leaseIntervalMs: 2_000, maxClockSkewMs: 500 }, (o) => `--${o}`);
 * // RangeError: [@vvm/leases] --maxClockSkewMs 500 must be below a quarter of --leaseIntervalMs 2000 (below 500)
 * ```
 */
export function checkLeaseTimings(
	timings: Partial<LeaseTimings>,
	name: (option: keyof LeaseTimings) => string = (option) => option,
): LeaseTimings {
	const namespace = timings.namespace ?? LEASE_DEFAULTS.namespace;
	if (typeof namespace !== "string" || namespace.trim().length === 0)
		throw new TypeError(`[@vvm/leases] ${name("namespace")} must not be empty`);
	if (utf8Length(namespace) > MAX_NAMESPACE_BYTES)
		throw new RangeError(
			`[@vvm/leases] ${name("namespace")} must be at most ${MAX_NAMESPACE_BYTES} bytes, got ${utf8Length(namespace)}`,
		);
	const leaseIntervalMs = integer(
		name("leaseIntervalMs"),
		timings.leaseIntervalMs ?? LEASE_DEFAULTS.leaseIntervalMs,
		100,
		86_400_000,
	);
	const maxClockSkewMs = timings.maxClockSkewMs ?? LEASE_DEFAULTS.maxClockSkewMs;
	if (typeof maxClockSkewMs !== "number" || !Number.isFinite(maxClockSkewMs) || maxClockSkewMs < 0)
		throw new RangeError(
			`[@vvm/leases] ${name("maxClockSkewMs")} must be a number >= 0, got ${String(maxClockSkewMs)}`,
		);
	if (maxClockSkewMs * 4 >= leaseIntervalMs)
		throw new RangeError(
			`[@vvm/leases] ${name("maxClockSkewMs")} ${maxClockSkewMs} must be below a quarter of ${name("leaseIntervalMs")} ${leaseIntervalMs} (below ${leaseIntervalMs / 4})`,
		);
	return { leaseIntervalMs, maxClockSkewMs, namespace };
}

/**
 * Checks every option and derives the timings; throws a `TypeError`/`RangeError` naming the
 * problem before any I/O.
 * @internal
 */
export function resolveOptions(options: LeaseNodeOptions): ResolvedOptions {
	if (options === null || typeof options !== "object")
		throw new TypeError("[@vvm/leases] options must be an object");
	const s = options.storage as Partial<TTLStorage> | undefined;
	if (
		s === null ||
		typeof s !== "object" ||
		typeof s.compareAndSwap !== "function" ||
		typeof s.read !== "function"
	)
		throw new TypeError("[@vvm/leases] storage must be a TTLStorage driver");
	const address = options.address;
	if (typeof address !== "string" || address.length === 0)
		throw new TypeError("[@vvm/leases] address must be a non-empty string");
	if (utf8Length(address) > MAX_ADDRESS_BYTES)
		throw new RangeError(
			`[@vvm/leases] address is ${utf8Length(address)} bytes; the limit is ${MAX_ADDRESS_BYTES}`,
		);
	const { namespace, leaseIntervalMs, maxClockSkewMs } = checkLeaseTimings(options);
	const quarter = leaseIntervalMs / 4;
	const tenth = leaseIntervalMs / 10;
	const tickIntervalMs = positiveMs("tickIntervalMs", options.tickIntervalMs ?? tenth, quarter);
	const pollIntervalMs = positiveMs("pollIntervalMs", options.pollIntervalMs ?? tenth, quarter);
	const heartbeatIntervalMs = positiveMs(
		"heartbeatIntervalMs",
		options.heartbeatIntervalMs ?? tenth,
		quarter,
	);
	const heartbeatTtlSeconds = integer(
		"heartbeatTtlSeconds",
		options.heartbeatTtlSeconds ?? Math.max(1, Math.ceil(leaseIntervalMs / 1000)),
		1,
		MAX_TTL_SECONDS,
	);
	if (heartbeatTtlSeconds * 1000 < 2 * heartbeatIntervalMs)
		throw new RangeError(
			`[@vvm/leases] heartbeatTtlSeconds (${heartbeatTtlSeconds}) must cover two heartbeat intervals (${heartbeatIntervalMs} ms each)`,
		);
	for (const name of ["onGranted", "onEnded", "onEvent"] as const) {
		if (options[name] !== undefined && typeof options[name] !== "function")
			throw new TypeError(`[@vvm/leases] ${name} must be a function`);
	}
	let placementDriver: ResolvedOptions["placementDriver"];
	const pd = options.placementDriver;
	if (pd !== undefined && pd !== false) {
		if (pd === null || typeof pd !== "object")
			throw new TypeError("[@vvm/leases] placementDriver must be an object or false");
		const groups = integer("placementDriver.groups", pd.groups, 1, MAX_GROUPS);
		const leadershipSeconds = integer(
			"placementDriver.leadershipSeconds",
			pd.leadershipSeconds ?? Math.max(1, Math.round(leaseIntervalMs / 5000)),
			1,
			MAX_TTL_SECONDS,
		);
		const killer = pd.killer;
		if (killer !== undefined && (killer === null || typeof killer.schedule !== "function"))
			throw new TypeError("[@vvm/leases] placementDriver.killer must have a schedule() method");
		const recordLimit =
			pd.recordLimit === undefined
				? undefined
				: integer("placementDriver.recordLimit", pd.recordLimit, 256, 65_536);
		placementDriver = { groups, leadershipSeconds, killer, recordLimit };
	}
	return {
		storage: options.storage,
		address,
		namespace,
		leaseIntervalMs,
		maxClockSkewMs,
		tickIntervalMs,
		pollIntervalMs,
		heartbeatIntervalMs,
		heartbeatTtlSeconds,
		freshWindowMs: leaseIntervalMs / 2,
		prolongBelowMs: leaseIntervalMs * 0.75,
		placementDriver,
	};
}
