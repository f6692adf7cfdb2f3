/**
 * Knobs for mutation tests only: this package's `test/mutations.test.ts` and the test-only
 * mutants of `vvm-host` (`VVM_UNSAFE_MUTANTS`, used by `pnpm chaos --mutants`). Not part of the
 * public API, no semver guarantee, never for production: every knob makes elections unsafe.
 *
 * @internal
 * @example
 * ```ts
 * import { createElectionsWithInternals } from "@vvm/ielections/internal";
 * const broken = createElectionsWithInternals(storage, {}, { leaseTimer: false });
 * ```
 */
export { createElectionsWithInternals, type ElectionsInternals } from "./elections.ts";
