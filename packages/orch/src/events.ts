import type { LeadershipEvent } from "@vvm/ielections";

/**
 * Lifecycle events of a VVM, in the order they normally happen. `at` is wall time
 * (`clock.now()` ms, for logs); `leaseDeadline` is on `clock.monotonic()`, and `leaseLeftMs` the
 * time left until it when the event was emitted.
 */
export type VVMLifecycleEvent =
	| {
			readonly type: "launching";
			readonly at: number;
			readonly address: string;
			readonly numVVM: number;
			readonly durationSeconds: number;
			readonly acquisitionDurationMs: number;
	  }
	| {
			readonly type: "leader";
			readonly at: number;
			readonly slot: number;
			readonly address: string;
			readonly leaseDeadline: number;
			readonly leaseLeftMs: number;
	  }
	| { readonly type: "services-started"; readonly at: number; readonly services: readonly string[] }
	| { readonly type: "problem"; readonly at: number; readonly error: Error }
	| { readonly type: "shutdown-started"; readonly at: number }
	| { readonly type: "shutdown-done"; readonly at: number; readonly problem: Error | undefined };

/**
 * Everything a VVM reports through `onEvent`: its own lifecycle plus the elections' leadership
 * events (key = slot, value = address), so a host can turn one stream into logs and metrics.
 *
 * @example
 * ```ts
 * const vvm = provideVVM({ storage, address, onEvent: (e) => logger.info({ event: e.type, ...e }) });
 * ```
 */
export type VVMEvent = VVMLifecycleEvent | LeadershipEvent<number, string>;
