// --storage cas: Apache Cassandra (one node or a cluster).

import { isIP } from "node:net";
import { validateCassandraIdentifier } from "@vvm/ttlstorage-cas/names";
import type { policies } from "cassandra-driver";
import { ConfigError, nonEmpty, oneOf } from "../options.ts";
import type { StorageEntry } from "./entry.ts";
import { load, message, StorageOpenError, untilStopped, within } from "./entry.ts";

interface CasSettings {
	readonly contactPoints: readonly string[];
	readonly localDc: string;
	readonly keyspace: string;
	/** Where to connect for each `host:port` the cluster reports (NAT, proxies); `{}` = as reported. */
	readonly addressMap: Readonly<Record<string, string>>;
	/** `sync`: refuse a node with `commitlog_sync: periodic`; `unsafe-periodic`: accept it. */
	readonly durability: "sync" | "unsafe-periodic";
}

const hostPorts = (raw: string, source: string): string[] => {
	const points = raw
		.split(",")
		.map((p) => p.trim())
		.filter((p) => p !== "");
	if (points.length === 0) throw new ConfigError(`${source} must list at least one host[:port]`);
	return points.map((p) => contactPoint(p, source));
};

/**
 * One contact point as the driver reads it: `host`, `host:port`, an IPv6 address bare (`::1`) or
 * in brackets with a port (`[::1]:9042`); port `1..65535`. The driver takes anything: a port
 * that is not one (`abc`) silently became 9042, and 99999 failed only at connect.
 */
function contactPoint(point: string, source: string): string {
	const bad = (): ConfigError =>
		new ConfigError(
			`${source} has an invalid contact point "${point}": host or host:port (a name or IPv4 address; IPv6 bare, ::1, or [::1]:9042), port 1..65535`,
		);
	let host = point;
	let port: string | undefined;
	const v6 = /^\[([^\]]+)\](?::(.*))?$/.exec(point);
	if (v6 !== null) {
		if (isIP(v6[1] ?? "") !== 6) throw bad();
		host = v6[1] as string;
		port = v6[2];
	} else if (isIP(point) !== 6) {
		const colon = point.lastIndexOf(":");
		if (colon !== -1) {
			host = point.slice(0, colon);
			port = point.slice(colon + 1);
		}
		if (!/^[A-Za-z0-9._-]+$/.test(host)) throw bad();
	}
	if (port === undefined) return v6 === null ? point : host; // the driver takes IPv6 bare
	if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65_535) throw bad();
	return point;
}

const HOST_PORT = /^[A-Za-z0-9.\-_]+:\d{1,5}$/;
const addressMap = (raw: string, source: string): Record<string, string> => {
	const map: Record<string, string> = {};
	for (const pair of raw.split(",").map((p) => p.trim())) {
		if (pair === "") continue;
		const [from, to, extra] = pair.split("=").map((p) => p.trim());
		if (
			from === undefined ||
			to === undefined ||
			extra !== undefined ||
			!HOST_PORT.test(from) ||
			!HOST_PORT.test(to)
		) {
			throw new ConfigError(
				`${source} must list reported=connect pairs of host:port, such as 10.0.0.2:9042=127.0.0.1:19042, got "${pair}"`,
			);
		}
		map[from] = to;
	}
	return map;
};

/**
 * `--cas-address-map` as the driver's address translator: the nodes the cluster reports (in its
 * peers table, `host:port`) are reached at the mapped address instead (NAT, or one proxy per node
 * as in the chaos test); unmapped ones as reported.
 */
export function addressTranslation(
	resolution: typeof policies.addressResolution,
	map: Readonly<Record<string, string>>,
): { policies?: { addressResolution: policies.addressResolution.AddressTranslator } } {
	if (Object.keys(map).length === 0) return {};
	// The driver checks `instanceof AddressTranslator`, a class its typings declare as an interface.
	const Translator = (
		resolution as unknown as {
			AddressTranslator: new () => policies.addressResolution.AddressTranslator;
		}
	).AddressTranslator;
	const translator = new Translator();
	translator.translate = (
		address: string,
		port: number,
		callback: (endpoint: string) => void,
	): void => {
		const reported = `${address}:${port}`;
		callback(map[reported] ?? reported);
	};
	return { policies: { addressResolution: translator } };
}

/**
 * How the keyspace is replicated, for the start-up log line: `SimpleStrategy RF 1` or
 * `NetworkTopologyStrategy datacenter1=3`, and an UNSAFE warning when the local data centre keeps
 * fewer copies than it could (fewer than its nodes, up to 3): with RF 1 the loss of one node, or a
 * power cut of it within Cassandra's periodic commit-log sync, loses acknowledged commands (README,
 * durability table). The host creates a missing keyspace with RF 1, which suits one node only.
 */
export function replicationNote(
	replication: Readonly<Record<string, string>>,
	localDc: string,
	nodesInLocalDc: number,
	keyspace: string,
): string {
	const strategy = (replication.class ?? "").replace(/^org\.apache\.cassandra\.locator\./, "");
	const copies =
		strategy === "SimpleStrategy"
			? Number(replication.replication_factor)
			: Number(replication[localDc] ?? 0);
	const described =
		strategy === "SimpleStrategy"
			? `SimpleStrategy RF ${replication.replication_factor ?? "?"}`
			: `${strategy} ${Object.entries(replication)
					.filter(([k]) => k !== "class")
					.map(([k, v]) => `${k}=${v}`)
					.join(",")}`;
	const wanted = Math.min(3, nodesInLocalDc);
	if (!Number.isInteger(copies) || copies >= wanted) return described;
	return `${described}; UNSAFE: ${copies} cop${copies === 1 ? "y" : "ies"} in ${localDc} of ${nodesInLocalDc} nodes, the loss of a node can lose acknowledged commands: ALTER KEYSPACE ${keyspace} WITH replication = {'class': 'NetworkTopologyStrategy', '${localDc}': ${wanted}}, then nodetool repair ${keyspace} on every node`;
}

/** The Cassandra storage: `--cas-contact-points`, `--cas-local-dc`, `--cas-keyspace`, `--cas-address-map`. */
export const casStorage: StorageEntry = {
	kind: "cas",
	summary: "Apache Cassandra",
	options: [
		{
			key: "contactPoints",
			flag: "cas-contact-points",
			env: ["CASSANDRA_CONTACT_POINTS"],
			def: "127.0.0.1:9042",
			parse: hostPorts,
			help: "cas: comma-separated host[:port] list",
		},
		{
			key: "localDc",
			flag: "cas-local-dc",
			env: ["CASSANDRA_LOCAL_DC"],
			def: "datacenter1",
			parse: nonEmpty,
			help: "cas: local data center",
		},
		{
			key: "keyspace",
			flag: "cas-keyspace",
			env: ["VVM_CAS_KEYSPACE"],
			def: "vvm",
			parse: nonEmpty,
			help: "cas: keyspace (created with SimpleStrategy RF 1 if missing, for one node; the storage-open log line warns when it keeps fewer copies than the cluster could)",
		},
		{
			key: "addressMap",
			flag: "cas-address-map",
			env: ["CASSANDRA_ADDRESS_MAP"],
			def: "",
			parse: addressMap,
			help: "cas: reported=connect host:port pairs, comma-separated: where to connect for a node the cluster reports (NAT, a proxy per node); default: as reported",
		},
		{
			key: "durability",
			flag: "cas-durability",
			env: ["VVM_CAS_DURABILITY"],
			def: "sync",
			parse: oneOf(["sync", "unsafe-periodic"]),
			help: "cas: sync (refuse to start when a node acknowledges writes before its commit log is synced: commitlog_sync periodic) or unsafe-periodic (accept it: a power cut of the replicas within the sync period can lose acknowledged commands)",
		},
	],
	check(settings, name) {
		// The driver's own rule, shared through its subpath (no cassandra-driver import here).
		try {
			validateCassandraIdentifier("keyspace", settings.keyspace);
		} catch (error) {
			const rule = error instanceof Error ? error.message.replace(/^\[[^\]]*\] keyspace /, "") : "";
			throw new ConfigError(`${name("keyspace")} ${rule}`);
		}
	},
	async open(settings, signal) {
		const s = settings as unknown as CasSettings;
		const [cassandra, { createCassandraTTLStorage, ensureCassandraSchema }] = await Promise.all([
			load("cassandra-driver", "cas storage", () => import("cassandra-driver")),
			load("@vvm/ttlstorage-cas", "cas storage", () => import("@vvm/ttlstorage-cas")),
		]);
		const casDriver = cassandra.Client
			? cassandra
			: (cassandra as unknown as { default: typeof cassandra }).default;
		const client = new casDriver.Client({
			contactPoints: [...s.contactPoints],
			localDataCenter: s.localDc,
			...addressTranslation(casDriver.policies.addressResolution, s.addressMap),
		});
		const where = `${s.contactPoints.join(",")} keyspace ${s.keyspace}`;
		let replication: string;
		try {
			replication = await untilStopped(
				signal,
				(async () => {
					await client.connect();
					await ensureCassandraSchema(client, {
						keyspace: s.keyspace,
						...(s.durability === "unsafe-periodic" ? { allowPeriodicCommitlog: true } : {}),
					});
					const row = (
						await client.execute(
							"SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?",
							[s.keyspace],
						)
					).first();
					const nodes = client.hosts.values().filter((h) => h.datacenter === s.localDc).length;
					return replicationNote(
						(row?.get("replication") ?? {}) as Record<string, string>,
						s.localDc,
						nodes,
						s.keyspace,
					);
				})(),
				() => client.shutdown(),
			);
		} catch (error) {
			await within(client.shutdown());
			if (signal?.aborted) throw signal.reason;
			throw new StorageOpenError(`cas storage: cannot use ${where}: ${message(error)}`, {
				cause: error,
			});
		}
		const driver = createCassandraTTLStorage({ client, keyspace: s.keyspace });
		return {
			driver,
			location: `${where} (${replication})`,
			close: async () => {
				await driver.close();
				await client.shutdown();
			},
		};
	},
};
