// An in-process host with --placement leases on mem storage, its log lines captured.
import type { TTLStorage } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
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
 * skew bound 100 ms, a free port (its `listening` log line names it). With `storage`, the host
 * uses that one (hosts given the same storage form one lease cluster) and leaves it open.
 */
export function startLeasesHost(partitions: number, storage?: TTLStorage): LeasesHost {
	const config = hostConfig([
		...["--storage", "mem", "--http-port", "0", "--placement", "leases"],
		...["--partitions", String(partitions)],
		...["--lease-interval-ms", "1000", "--lease-max-clock-skew-ms", "100"],
	]);
	const lines: Array<Record<string, unknown>> = [];
	const host = startHost(config, {
		logDestination: { write: (l: string) => lines.push(JSON.parse(l)) },
		...(storage === undefined ? {} : { storage }),
	});
	return { host, lines };
}

/** In-process leases hosts on one mem storage: one lease cluster in this process. */
export interface LeasesCluster {
	readonly hosts: readonly LeasesHost[];
	/** Each host's HTTP port, once it listens. */
	ports(): Promise<number[]>;
	/** Stops every host, then closes the storage; resolves to the hosts' exit codes. */
	stop(): Promise<number[]>;
}

/**
 * Starts `size` hosts of {@link startLeasesHost} over one shared mem storage: they form one lease
 * cluster (one active placement driver, the partitions split between them).
 */
export function startLeasesCluster(size: number, partitions: number): LeasesCluster {
	const storage = createMemTTLStorage();
	const hosts = Array.from({ length: size }, () => startLeasesHost(partitions, storage));
	const portOf = async ({ lines }: LeasesHost): Promise<number> => {
		for (let i = 0; i < 2_000; i++) {
			const port = lines.find((l) => l.event === "listening")?.port;
			if (typeof port === "number") return port;
			await new Promise((r) => setTimeout(r, 10));
		}
		throw new Error(`a leases host did not listen within 20 s:\n${JSON.stringify(lines)}`);
	};
	return {
		hosts,
		ports: () => Promise.all(hosts.map(portOf)),
		async stop() {
			const codes = await Promise.all(hosts.map(({ host }) => host.stop()));
			await storage.close();
			return codes;
		},
	};
}
