// TEST-ONLY. Deliberately broken hosts for the chaos test (`pnpm chaos --mutants`): they show
// that its checker fails when a safety mechanism is missing. NEVER use them in production: each
// mutant lets a deposed leader go on acting.
import type { Killer } from "@vvm/ielections";
import { createElectionsWithInternals } from "@vvm/ielections/internal";
import type { ElectionsFactory } from "@vvm/orch";

/** The mechanisms a mutant removes. */
const UNSAFE_MUTANTS: readonly ["killer", "lease-check", "lease-timer", "unfenced"] = [
	"killer", // no watchdog: a process that outlives its lease is never SIGKILLed
	"lease-check", // the worker acts without checking leaseValid() first
	"lease-timer", // elections do not abort the signal at the lease deadline while a renewal hangs
	"unfenced", // the command processor writes without fences and acknowledges past its lease
];

/** One of {@link UNSAFE_MUTANTS}. */
export type UnsafeMutant = (typeof UNSAFE_MUTANTS)[number];

/** The environment variable that names the mutants, comma-separated; the only place they are read. */
export const UNSAFE_MUTANTS_ENV = "VVM_UNSAFE_MUTANTS";

/** The flag that must accompany {@link UNSAFE_MUTANTS_ENV}: an explicit acknowledgment. */
export const UNSAFE_MUTANTS_FLAG = "unsafe-allow-mutants";

/**
 * Parses {@link UNSAFE_MUTANTS_ENV}. Returns `[]` when it is unset or empty; throws a message
 * (the caller wraps it in its config error) for an unknown name, or when the variable is set
 * without the acknowledgment flag.
 *
 * @example
 * ```ts
 * parseUnsafeMutants("killer,lease-check", true); // ["killer", "lease-check"]
 * ```
 */
export function parseUnsafeMutants(
	raw: string | undefined,
	acknowledged: boolean,
): readonly UnsafeMutant[] {
	if (raw === undefined || raw.trim() === "") return [];
	const names = raw
		.split(",")
		.map((n) => n.trim())
		.filter((n) => n !== "");
	for (const name of names) {
		if (!(UNSAFE_MUTANTS as readonly string[]).includes(name)) {
			throw new Error(
				`${UNSAFE_MUTANTS_ENV} names an unknown mutant "${name}" (known: ${UNSAFE_MUTANTS.join(", ")})`,
			);
		}
	}
	if (!acknowledged) {
		throw new Error(
			`${UNSAFE_MUTANTS_ENV}=${raw} breaks leadership safety on purpose (for the chaos test only) and needs --${UNSAFE_MUTANTS_FLAG}; never use it in production`,
		);
	}
	return UNSAFE_MUTANTS.filter((m) => names.includes(m));
}

/** How the host is wired differently under the mutants; nothing differs when there are none. */
export interface UnsafeMutantHooks {
	/** A killer that never fires (mutant `killer`). */
	readonly killer?: Killer;
	/** Elections without the lease timer (mutant `lease-timer`). */
	readonly createElections?: ElectionsFactory;
	/** `false` under mutant `lease-check`: the worker no longer asks `leaseValid()`. */
	readonly checkLease: boolean;
	/** `true` under mutant `unfenced`: `@vvm/cp`'s `unsafeUnfenced`. */
	readonly unfenced: boolean;
}

/**
 * The wiring for `mutants`.
 *
 * @example
 * ```ts
 * const hooks = unsafeMutantHooks(config.unsafeMutants); // { checkLease: true, unfenced: false } normally
 * ```
 */
export function unsafeMutantHooks(mutants: readonly UnsafeMutant[]): UnsafeMutantHooks {
	return {
		checkLease: !mutants.includes("lease-check"),
		unfenced: mutants.includes("unfenced"),
		...(mutants.includes("killer")
			? { killer: { schedule: () => {}, disarm: () => {} } satisfies Killer }
			: {}),
		...(mutants.includes("lease-timer")
			? {
					createElections: ((storage, options) =>
						createElectionsWithInternals(storage, options, {
							leaseTimer: false,
						})) satisfies ElectionsFactory,
				}
			: {}),
	};
}
