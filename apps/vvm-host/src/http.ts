import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { VVM } from "@vvm/orch";
import type { Registry } from "prom-client";
import { cpErrorReply, hostRefusal } from "./api-errors.ts";
import { isApiPath } from "./api-routes.ts";
import type { ExtraRoutes, StatusSection } from "./http-contract.ts";
import type { LeaseWorker } from "./lease-worker.ts";
import { describeError } from "./logger.ts";
import { STATUS_PAGE_HTML } from "./status-page.ts";
import type { PlacementStatus } from "./status-placement.ts";
import { hostVersion } from "./version.ts";

/** What the HTTP API reads. The VVM is set once created (the server starts before it). */
export interface HttpApiState {
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
	/** Routes beyond the built-in ones (GET /leases, per-partition commands), asked first. */
	readonly routes?: ExtraRoutes;
	readonly registry: Registry;
	readonly worker: LeaseWorker;
	/** The command processor's routes (`/api/v2/…`); they answer 503 until the placement runs. */
	readonly api?: (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void>;
}

/** A started HTTP server. */
export interface HttpApi {
	readonly port: number;
	readonly server: Server;
	close(): Promise<void>;
}

const json = (
	res: ServerResponse,
	status: number,
	body: unknown,
	headers: Readonly<Record<string, string>> = {},
): void => {
	const text = `${JSON.stringify(body)}\n`;
	res.writeHead(status, {
		...headers,
		"content-type": "application/json; charset=utf-8",
		"content-length": Buffer.byteLength(text),
		"cache-control": "no-store",
	});
	res.end(text);
};

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
async function leadershipBody(state: HttpApiState): Promise<unknown> {
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
async function statusBody(state: HttpApiState): Promise<unknown> {
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

async function handle(
	state: HttpApiState,
	req: IncomingMessage,
	res: ServerResponse,
): Promise<void> {
	const url = new URL(req.url ?? "/", "http://localhost");
	const path = url.pathname;
	if (state.api !== undefined && isApiPath(path)) return state.api(req, res, url);
	const extra = state.routes?.(req.method ?? "GET", url);
	if (extra !== undefined) {
		json(res, extra.status, extra.body, extra.headers);
		return;
	}
	const route = `${req.method ?? "GET"} ${path}`;
	switch (route) {
		case "GET /healthz": {
			const problem = state.vvm?.problem();
			if (problem === undefined) json(res, 200, { status: "ok", phase: state.phase });
			else json(res, 503, { status: "problem", phase: state.phase, problem: problem.message });
			return;
		}
		case "GET /readyz": {
			const ready =
				(state.vvm?.leaseValid() === true && state.phase === "leader") || state.phase === "serving";
			json(res, ready ? 200 : 503, {
				ready,
				phase: state.phase,
				slot: state.vvm?.leadership()?.slot ?? null,
			});
			return;
		}
		case "GET /leadership":
			json(res, 200, await leadershipBody(state));
			return;
		case "GET /":
			res.writeHead(200, {
				"content-type": "text/html; charset=utf-8",
				"cache-control": "no-store",
				"content-length": Buffer.byteLength(STATUS_PAGE_HTML),
			});
			res.end(STATUS_PAGE_HTML);
			return;
		case "GET /status":
			json(res, 200, await statusBody(state));
			return;
		case "GET /metrics": {
			const body = await state.registry.metrics();
			res.writeHead(200, { "content-type": state.registry.contentType });
			res.end(body);
			return;
		}
		case "POST /work": {
			const result = state.worker.act("http");
			json(res, result.done ? 200 : 503, result);
			return;
		}
		default: {
			const allow = OPERATOR_ROUTES[path];
			const refused =
				allow === undefined
					? hostRefusal(404, `no route ${path}`)
					: hostRefusal(405, `method ${req.method} not allowed on ${path}`, { allow: [allow] });
			json(res, refused.status, refused.body, refused.headers);
		}
	}
}

/** The method of each operator route, for 405 and `Allow` (errors in the API v2 body). */
const OPERATOR_ROUTES: Readonly<Record<string, string>> = {
	"/": "GET",
	"/status": "GET",
	"/healthz": "GET",
	"/readyz": "GET",
	"/leadership": "GET",
	"/metrics": "GET",
	"/work": "POST",
};

/** Starts the HTTP API (node:http, no framework) and resolves once it listens. */
export function startHttpApi(state: HttpApiState, host: string, port: number): Promise<HttpApi> {
	const server = createServer((req, res) => {
		handle(state, req, res).catch((error: unknown) => {
			if (!res.headersSent) {
				const failed = cpErrorReply(error);
				json(res, failed.status, failed.body, failed.headers);
			} else res.destroy();
		});
	});
	server.keepAliveTimeout = 1_000;
	return new Promise((resolvePromise, reject) => {
		const onError = (error: Error): void => reject(error);
		server.once("error", onError);
		server.listen(port, host, () => {
			server.off("error", onError);
			resolvePromise({
				port: (server.address() as AddressInfo).port,
				server,
				close: () =>
					new Promise<void>((done) => {
						server.close(() => done());
						server.closeAllConnections();
					}),
			});
		});
	});
}
