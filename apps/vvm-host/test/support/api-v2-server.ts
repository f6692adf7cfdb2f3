// The API v2 routes over a real command processor (mem by default) behind a stand-in placement,
// on a real HTTP server: the fixture of the API v2 and review tests.
import type { PartitionHolder, PartitionPlacement } from "@vvm/appparts";
import { locateBy } from "@vvm/appparts";
import type { CommandProcessor } from "@vvm/cp";
import { createCommandProcessor } from "@vvm/cp";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { pino } from "pino";
import { Registry } from "prom-client";
import { createCpMetrics } from "../../src/cp-metrics.ts";
import { apiV2Route } from "../../src/http/api-v2.ts";
import type { Admission, HttpLimits, RouteTable } from "../../src/http/router.ts";
import { createRouteTable, startHttpServer } from "../../src/http/router.ts";

/** Partitions of the fixture's application. */
const PARTITIONS = 4;

/** What {@link serveApiV2} serves. */
export interface ApiV2ServerOptions {
	/** The partitions the placement says this host serves. */
	readonly serving: readonly number[];
	/** The partitions deployed (default: `serving`). */
	readonly deploy?: readonly number[];
	/** Who holds the partitions this host does not serve. */
	readonly holders?: ReadonlyMap<number, PartitionHolder>;
	readonly storage?: TTLStorage;
	readonly fencingToken?: (partition: number) => bigint | undefined;
	/** This host's address. */
	readonly self?: string;
	/** Wraps the route table (an authenticator's guard, a delay). */
	readonly guard?: (table: RouteTable) => RouteTable;
	/** The server's admission (the host's load shedder), as `startHttpServer` takes it. */
	readonly admit?: Admission;
	/** The server's limits. */
	readonly limits?: Partial<HttpLimits>;
}

/** A placement stand-in: this host serves `serving`; `holders` answers the others. */
export function fakePlacement(
	serving: readonly number[],
	holders: ReadonlyMap<number, PartitionHolder> = new Map(),
): PartitionPlacement {
	return {
		mode: "static",
		start: async () => {},
		locate: (p) => locateBy(serving.includes(p), holders.get(p)),
		served: () => [...serving].sort((a, b) => a - b),
		describe: () => ({ mode: "static", served: serving }),
		close: async () => {},
	};
}

/**
 * Starts the server; `closers` receives what stops it (the caller runs them after each test).
 *
 * @example
 * ```ts
 * const { base } = await serveApiV2({ serving: [1] }, closers);
 * await fetch(`${base}/1001/docs/app1pkg.Customer`, { method: "POST", body: '{"name":"Ada"}' });
 * ```
 */
export async function serveApiV2(
	options: ApiV2ServerOptions,
	closers: (() => Promise<void>)[],
): Promise<{ cp: CommandProcessor; registry: Registry; port: number; base: string }> {
	const cp = createCommandProcessor({
		storage: options.storage ?? createMemTTLStorage(),
		appId: 1,
		partitions: PARTITIONS,
	});
	for (const p of options.deploy ?? options.serving) await cp.deploy(p).ready();
	const registry = new Registry();
	const placement = fakePlacement(options.serving, options.holders);
	const route = apiV2Route({
		partitions: PARTITIONS,
		placement: () => placement,
		partition: (p) => cp.partition(p),
		fencingToken: options.fencingToken ?? (() => undefined),
		self: () => options.self ?? "127.0.0.1:1",
		metrics: createCpMetrics(
			registry,
			() => cp,
			() => placement,
		),
		logger: pino({ level: "silent" }),
	});
	const table = createRouteTable([route]);
	const http = await startHttpServer(
		options.guard?.(table) ?? table,
		"127.0.0.1",
		0,
		options.limits ?? {},
		undefined,
		options.admit,
	);
	closers.push(async () => {
		await http.close();
		await cp.close();
	});
	const { port } = http;
	return { cp, registry, port, base: `http://127.0.0.1:${port}/api/v2/apps/vvm/demo/workspaces` };
}
