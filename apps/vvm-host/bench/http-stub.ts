// The host's HTTP layer over a stub partition (no command processor, no storage): what the route
// table, API v2 parsing, body reading, metrics and the reply writer cost beyond bare node:http.
// Started by host-bench.ts as a reference row; prints its port.
import type { PartitionPlacement } from "@vvm/appparts";
import type { AppPartition, CommandResult } from "@vvm/cp";
import { pino } from "pino";
import { Registry } from "prom-client";
import { createCpMetrics } from "../src/cp-metrics.ts";
import { apiV2Route } from "../src/http/api-v2.ts";
import { createRouteTable, startHttpServer } from "../src/http/router.ts";

let offset = 0;
const partition = {
	createRecord: async (): Promise<CommandResult> => {
		offset++;
		return { CurrentWLogOffset: 123456, NewIDs: { "1": 322685000131072 }, plogOffset: offset };
	},
} as unknown as AppPartition;
const placement = { locate: () => ({ kind: "served" }) } as unknown as PartitionPlacement;
const table = createRouteTable([
	apiV2Route({
		partitions: 10,
		placement: () => placement,
		partition: () => partition,
		fencingToken: () => 5n,
		self: () => "127.0.0.1:0",
		metrics: createCpMetrics(
			new Registry(),
			() => undefined,
			() => undefined,
		),
		logger: pino({ level: "info" }),
	}),
]);
const http = await startHttpServer(table, "127.0.0.1", 0);
console.log(http.port);
process.on("SIGTERM", () => {
	void http.close().then(() => process.exit(0));
});
