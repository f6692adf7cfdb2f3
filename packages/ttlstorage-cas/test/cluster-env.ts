// Set-up of the 3-node cluster tests: the gate, clients, and the keyspace at RF 3.
// The cluster is tooling/servers/cassandra-cluster (127.0.0.2-4, datacenter1).
import { hostPort, isReachable } from "@vvm/vitest-config/servers";
import type { ClientOptions } from "cassandra-driver";
import { Client, policies } from "cassandra-driver";
import type { CassandraReplication } from "../src/index.ts";

const ENABLED_VAR = "CASSANDRA_CLUSTER_TESTS_ENABLED";
const START_HINT = "bash tooling/servers/cassandra-cluster/start.sh";

/** CASSANDRA_CLUSTER_CONTACT_POINTS (comma-separated), default the three local nodes. */
const clusterContactPoints: readonly string[] = (
	process.env.CASSANDRA_CLUSTER_CONTACT_POINTS ?? "127.0.0.2:9042,127.0.0.3:9042,127.0.0.4:9042"
)
	.split(",")
	.map((s) => s.trim())
	.filter((s) => s !== "");

/** The cluster's data centre (SimpleSnitch names it datacenter1). */
const CLUSTER_DC = "datacenter1";

/** RF 3 in the one data centre: every node holds every key; a quorum is two nodes. */
export const CLUSTER_REPLICATION: CassandraReplication = {
	class: "NetworkTopologyStrategy",
	[CLUSTER_DC]: 3,
};

/**
 * `false` when the cluster suites should run, else the reason to skip. They are opt-in, so a
 * machine with only the single node skips them visibly; once opted in, an unreachable contact
 * point fails the run instead of skipping it.
 */
export async function clusterGate(): Promise<false | string> {
	if (process.env[ENABLED_VAR] === undefined) {
		return `the 3-node cluster suites run only when ${ENABLED_VAR} is set: start the cluster with \`${START_HINT}\`, then ${ENABLED_VAR}=1`;
	}
	const down: string[] = [];
	for (const point of clusterContactPoints) {
		const { host, port } = hostPort(point, 9042);
		if (!(await isReachable(host, port))) down.push(point);
	}
	if (clusterContactPoints.length < 3 || down.length > 0) {
		throw new Error(
			`${ENABLED_VAR} is set, but the cluster needs 3 reachable contact points (CASSANDRA_CLUSTER_CONTACT_POINTS=${clusterContactPoints.join(",")}; unreachable: ${down.join(",") || "none"}); start it with \`${START_HINT}\``,
		);
	}
	return false;
}

/**
 * A client for the cluster; the caller connects and shuts it down. It reconnects to a node that
 * comes back every 500 ms (the default backs off towards 10 minutes).
 */
export function newClusterClient(extra: Partial<ClientOptions> = {}): Client {
	return new Client({
		contactPoints: [...clusterContactPoints],
		localDataCenter: CLUSTER_DC,
		...extra,
		policies: {
			reconnection: new policies.reconnection.ConstantReconnectionPolicy(500),
			...extra.policies,
		},
	});
}

/**
 * Routes every request to `address` (`host:port`) while it is up, and to the others only when it
 * is down: a test can then kill the coordinator of a request in flight.
 */
export function preferHost(address: string): policies.loadBalancing.LoadBalancingPolicy {
	const policy = new policies.loadBalancing.DCAwareRoundRobinPolicy(CLUSTER_DC);
	const plan = policy.newQueryPlan.bind(policy);
	policy.newQueryPlan = (keyspace, options, callback) =>
		plan(keyspace, options, (error, iterator) => {
			if (error) return callback(error, iterator);
			const hosts = [...{ [Symbol.iterator]: () => iterator }];
			hosts.sort((a, b) => Number(b.address === address) - Number(a.address === address));
			callback(error, hosts[Symbol.iterator]());
		});
	return policy;
}
