import type { TTLStorage } from "@vvm/ttlstorage";
import { expect } from "vitest";
import type { CommandProcessorOptions } from "../command-processor.ts";
import { CpError } from "../errors.ts";

/**
 * What a case runs on: a storage, and options every command processor of the case gets (a
 * driver's own configuration, e.g. `atomicBatches` for the level driver).
 */
export interface CaseContext {
	readonly storage: TTLStorage;
	readonly options: Partial<CommandProcessorOptions>;
}

/** One case of {@link cpTestSuite}, runnable on its own. */
export interface CpSuiteCase {
	readonly name: string;
	readonly run: (ctx: CaseContext) => Promise<void>;
}

/** @internal The `CpError` a promise rejects with (fails the test otherwise). */
export async function rejection(p: Promise<unknown>): Promise<CpError> {
	const error = await p.then(
		(value) => {
			throw new Error(`expected a CpError, the call succeeded with ${JSON.stringify(value)}`);
		},
		(e: unknown) => e,
	);
	expect(CpError.is(error), `expected a CpError, got ${String(error)}`).toBe(true);
	return error as CpError;
}

/** @internal The first CRecord ID plus `n`. */
export const crec = (n: number): number => 322_685_000_131_072 + n;
/** @internal The first OWRecord ID plus `n`. */
export const owrec = (n: number): number => 322_680_000_131_072 + n;

/** @internal The result of a command that created one record with raw ID 1. */
export const created = (
	wlogOffset: number,
	id: number,
	plogOffset: number,
): { CurrentWLogOffset: number; NewIDs: Record<string, number>; plogOffset: number } => ({
	CurrentWLogOffset: wlogOffset,
	NewIDs: { "1": id },
	plogOffset,
});

/** @internal A workspace of partition 1 of 4, and others. */
export const WS = 1001;
export const WS_SAME_PARTITION = 1005;
export const WS_OTHER_PARTITION = 1002;

/** @internal What sits in the storage at a key, decoded enough for assertions. */
export const GARBAGE: Uint8Array = new Uint8Array([1]);
