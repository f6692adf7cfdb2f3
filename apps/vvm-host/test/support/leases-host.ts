// An in-process host with --placement leases on mem storage, its log lines captured.
import type { HostHandle } from "../../src/host.ts";
import { startHost } from "../../src/host.ts";
import { hostConfig } from "./config.ts";

/** A running in-process leases host and the JSON log lines it wrote so far. */
export interface LeasesHost {
	readonly host: HostHandle;
	readonly lines: Array<Record<string, unknown>>;
}

/**
 * Starts a host with `--placement leases` on mem storage: `partitions` partitions, lease 1 s,
 * skew bound 100 ms, a free port (its `listening` log line names it).
 */
export function startLeasesHost(partitions: number): LeasesHost {
	const config = hostConfig([
		...["--storage", "mem", "--http-port", "0", "--placement", "leases"],
		...["--partitions", String(partitions)],
		...["--lease-interval-ms", "1000", "--lease-max-clock-skew-ms", "100"],
	]);
	const lines: Array<Record<string, unknown>> = [];
	const host = startHost(config, {
		logDestination: { write: (l: string) => lines.push(JSON.parse(l)) },
	});
	return { host, lines };
}
