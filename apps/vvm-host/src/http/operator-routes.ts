// The operator's routes: the status page and its data, health, readiness, leadership, metrics,
// and the VVM's demo worker (POST /work without a partition).
import type { VVM } from "@vvm/orch";
import type { Registry } from "prom-client";
import type { LeaseWorker } from "../lease-worker.ts";
import { describeError } from "../logger.ts";
import type { PlacementStatus } from "../status-placement.ts";
import { hostVersion } from "../version.ts";
import type { Route } from "./router.ts";
import { STATUS_PAGE_HTML } from "./status-page.ts";

/** One table of the status page beyond the built-in ones. */
export interface StatusSection {
	readonly id: string;
	readonly title: string;
	readonly columns: readonly string[];
	readonly rows: ReadonlyArray<ReadonlyArray<string | number | boolean | null>>;
}

/**
 * What the operator routes read: the host's state as it runs. `vvm` and `phase` change as the
 * host goes through its steps (the server starts before the VVM exists, so it can be asked).
 */
export interface OperatorState {
	vvm: VVM | undefined;
	/** `waiting` → `leader` → `stopping`, or `failed`; `serving` with --placement leases (no slot). */
	phase: "starting" | "waiting" | "leader" | "serving" | "stopping" | "failed";
	readonly address: () => string;
	readonly numVVM: number;
	/** Wall ms: the times `/leadership` shows are wall times, for humans. */
	readonly now: () => number;
	/** The VVM clock's monotonic ms: the leadership's own times are on it. */
	readonly monotonic: () => number;
	readonly holderOf: (slot: number) => Promise<string | undefined>;
	/** Seconds until a slot's leader record expires unless renewed; `undefined` when free. */
	readonly expiresInOf: (slot: number) => Promise<number | undefined>;
	/** Extra tables for the status page (partitions, flush lag), as they exist. */
	readonly sections?: () => Promise<readonly StatusSection[]>;
	/**
	 * The placement mode (and in leases mode the lease cluster) for `/status`, so the status page
	 * shows the sections of its mode; without it `/status` says `{ mode: "static" }`.
	 */
	readonly placement?: () => PlacementStatus;
	readonly registry: Registry;
	readonly worker: LeaseWorker;
}

/** One slot of `/leadership` while not holding one: the holder's value, `null` when free, or the storage error. */
type SlotView =
	| { readonly slot: number; readonly holder: string | null }
	| { readonly slot: number; readonly holderError: string };

/**
 * The `/leadership` body. `leader` is `leaseValid()`: a VVM whose leadership is still held but
 * whose lease deadline has passed (a renewal hangs) is not reported as leader; `held` is the raw
 * state. A storage error while reading a slot is `holderError`, never `holder: null` (free).
 * Times are wall ms, converted from the leadership's monotonic readings at the moment of the
 * request (so they shift with a wall-clock step; `timeLeftMs` does not).
 */
async function leadershipBody(state: OperatorState): Promise<unknown> {
	const leadership = state.vvm?.leadership();
	const leaseValid = state.vvm?.leaseValid() ?? false;
	const now = state.now();
	const wall = (mono: number): number => Math.round(now - (state.monotonic() - mono));
	if (leadership !== undefined) {
		return {
			phase: state.phase,
			leader: leaseValid,
			held: true,
			address: state.address(),
			slot: leadership.slot,
			holder: leadership.address,
			durationSeconds: leadership.durationSeconds,
			acquiredAt: wall(leadership.acquiredAt),
			renewals: leadership.renewals,
			lastRenewedAt: wall(leadership.lastRenewedAt),
			leaseDeadline: wall(leadership.leaseDeadline),
			timeLeftMs: Math.max(0, Math.round(leadership.leaseTimeLeftMs)),
			leaseValid,
		};
	}
	const slots: SlotView[] = [];
	for (let slot = 1; slot <= Math.min(state.numVVM, 16); slot++) {
		try {
			slots.push({ slot, holder: (await state.holderOf(slot)) ?? null });
		} catch (error) {
			slots.push({ slot, holderError: describeError(error) ?? "unknown storage error" });
		}
	}
	return {
		phase: state.phase,
		leader: false,
		held: false,
		address: state.address(),
		slots,
		problem: state.vvm?.problem()?.message ?? null,
	};
}

/**
 * The `/status` body the status page renders: this host, its lease, every slot's leader record
 * (up to 16) with the time until it expires, the extra sections, and `placement` (the mode; in
 * leases mode the lease cluster). In leases mode no slot is held: `leadership` is `null` and
 * `slots` empty (nothing is read for them).
 */
async function statusBody(state: OperatorState): Promise<unknown> {
	const leadership = state.vvm?.leadership();
	const leaseValid = state.vvm?.leaseValid() ?? false;
	const slots: unknown[] = [];
	for (let slot = 1; slot <= Math.min(state.numVVM, 16); slot++) {
		try {
			const [holder, expiresInSeconds] = await Promise.all([
				state.holderOf(slot),
				state.expiresInOf(slot),
			]);
			slots.push({ slot, holder: holder ?? null, expiresInSeconds });
		} catch (error) {
			slots.push({ slot, holderError: describeError(error) ?? "unknown storage error" });
		}
	}
	return {
		phase: state.phase,
		leader: leaseValid,
		address: state.address(),
		pid: process.pid,
		version: hostVersion(),
		problem: state.vvm?.problem()?.message ?? null,
		leadership:
			leadership === undefined
				? null
				: {
						slot: leadership.slot,
						holder: leadership.address,
						timeLeftMs: Math.max(0, Math.round(leadership.leaseTimeLeftMs)),
						leaseMs: Math.round(leadership.leaseDeadline - leadership.lastRenewedAt),
						renewals: leadership.renewals,
						fencingToken: leadership.fencingToken ?? null,
						leaseValid,
					},
		slots,
		sections: (await state.sections?.()) ?? [],
		placement: state.placement?.() ?? { mode: "static" },
	};
}

/**
 * The operator routes over `state`: `GET /` (the status page), `/status`, `/healthz`, `/readyz`,
 * `/leadership`, `/metrics`, and `POST /work` (the VVM's demo worker: 200 while it may act).
 *
 * @example
 * ```ts
 * const table = createRouteTable([...partitionRoutes, ...operatorRoutes(state)]);
 * ```
 */
export function operatorRoutes(state: OperatorState): Route[] {
	return [
		{
			method: "GET",
			path: "/healthz",
			handle: () => {
				const problem = state.vvm?.problem();
				return problem === undefined
					? { status: 200, body: { status: "ok", phase: state.phase } }
					: {
							status: 503,
							body: { status: "problem", phase: state.phase, problem: problem.message },
						};
			},
		},
		{
			method: "GET",
			path: "/readyz",
			handle: () => {
				const ready =
					(state.vvm?.leaseValid() === true && state.phase === "leader") ||
					state.phase === "serving";
				return {
					status: ready ? 200 : 503,
					body: { ready, phase: state.phase, slot: state.vvm?.leadership()?.slot ?? null },
				};
			},
		},
		{
			method: "GET",
			path: "/leadership",
			handle: async () => ({ status: 200, body: await leadershipBody(state) }),
		},
		{
			method: "GET",
			path: "/",
			handle: () => ({
				status: 200,
				body: STATUS_PAGE_HTML,
				contentType: "text/html; charset=utf-8",
			}),
		},
		{
			method: "GET",
			path: "/status",
			handle: async () => ({ status: 200, body: await statusBody(state) }),
		},
		{
			method: "GET",
			path: "/metrics",
			handle: async () => ({
				status: 200,
				body: await state.registry.metrics(),
				contentType: state.registry.contentType,
			}),
		},
		{
			method: "POST",
			path: "/work",
			handle: () => {
				const result = state.worker.act("http");
				return { status: result.done ? 200 : 503, body: result };
			},
		},
	];
}
