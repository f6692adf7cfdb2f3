// Driver profiles: what a driver reports for each raw transport outcome, how many times its client
// library sends one request, and what it supports (which cp code paths run).
import type { TTLStorage, TTLStorageSupports } from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";
import type { DynProfileTable, OpClass, RawFailure, ResendVerdict } from "./dyn-probe.ts";
import { probeDynProfile } from "./dyn-probe.ts";

/** The profiles the simulator knows. */
export type ProfileName = "epoch" | "ordered" | "dyn";

/** The names, for the CLI. */
export const PROFILES: readonly ProfileName[] = ["epoch", "ordered", "dyn"];

/** A driver's behaviour as the fault layer sees it. */
export interface Profile {
	readonly name: ProfileName;
	/** The base storage's fencing (`@vvm/ttlstorage-mem`'s option). */
	readonly fencing: "epoch" | "ordered";
	/** Whether the driver has an all-or-nothing `putBatchIf` (cp's conditionalBatches). */
	readonly conditionalBatches: boolean;
	/** The driver's own request timeout, ms: a `late` outcome answers after it. */
	readonly requestTimeoutMs: number;
	supports(base: TTLStorage): TTLStorageSupports;
	/** Requests one driver call sends when the first meets `raw` (1: no client-library resend). */
	sends(cls: OpClass, raw: RawFailure): number;
	/** The error the driver throws once the client library gave up after `attempts` sends. */
	error(cls: OpClass, raw: RawFailure, operation: string, attempts: number): Error;
	readonly resendFoundOurs: ResendVerdict;
	readonly resendFoundOther: ResendVerdict;
}

/**
 * "epoch" (mem, level, PostgreSQL-like) and "ordered" (Cassandra-like) fencing: a request that never
 * reached the server is `TTLSTORAGE_UNAVAILABLE`; a lost answer or a timeout of a write is
 * `TTLSTORAGE_OUTCOME_UNKNOWN` (a read's is `UNAVAILABLE`: it wrote nothing); nothing is resent.
 * `conditionalBatches` chooses between the level/mem shape (one `putBatchIf`) and the PostgreSQL
 * shape (separate writes).
 */
export function epochProfile(
	fencing: "epoch" | "ordered",
	conditionalBatches: boolean,
	atomicBatches: boolean,
): Profile {
	return {
		name: fencing === "epoch" ? "epoch" : "ordered",
		fencing,
		conditionalBatches: conditionalBatches && fencing === "epoch",
		requestTimeoutMs: 2_000,
		supports: (base) => ({
			...base.supports,
			atomicBatches: atomicBatches && fencing === "epoch",
		}),
		sends: () => 1,
		error: (cls, raw, operation) =>
			storageError(
				raw === "refused" || cls === "get"
					? "TTLSTORAGE_UNAVAILABLE"
					: "TTLSTORAGE_OUTCOME_UNKNOWN",
				operation,
				`simulated ${raw}`,
			),
		resendFoundOurs: "true",
		resendFoundOther: "unknown",
	};
}

/**
 * "dyn": DynamoDB as `@vvm/ttlstorage-dyn` reports it, measured by {@link probeDynProfile} (the
 * real driver and SDK): its "ordered" fencing, separate (non-atomic) batches, no `putBatchIf`, its
 * default 5 s request timeout.
 */
export async function dynProfile(): Promise<Profile> {
	const table: DynProfileTable = await probeDynProfile();
	return {
		name: "dyn",
		fencing: "ordered",
		conditionalBatches: false,
		requestTimeoutMs: 5_000,
		supports: (base) => ({ ...base.supports, atomicBatches: false }),
		sends: (cls, raw) => table.failures[cls][raw].sends,
		error: (cls, raw, operation, attempts) =>
			storageError(
				table.failures[cls][raw].code,
				operation,
				`simulated ${raw} (${attempts} attempts)`,
			),
		resendFoundOurs: table.resendFoundOurs,
		resendFoundOther: table.resendFoundOther,
	};
}

/** The contract error a profile reports. */
function storageError(code: string, operation: string, message: string): TTLStorageError {
	return new TTLStorageError(code as never, message, { driver: "sim", operation });
}
