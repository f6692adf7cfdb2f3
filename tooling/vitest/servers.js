// Gate for suites that need a real server (Cassandra, DynamoDB Local, PostgreSQL).
// Locally a missing server skips the suite with a reason; in CI (CI=true) or when the
// <NAME>_TESTS_ENABLED variable is set, a missing server is an error, so CI never passes by skipping.
import { readFileSync } from "node:fs";
import { connect, createServer } from "node:net";

/** @param {string} host @param {number} port @param {number} timeoutMs */
export function isReachable(host, port, timeoutMs = 1500) {
	return new Promise((resolve) => {
		const socket = connect({ host, port });
		const done = (ok) => {
			socket.destroy();
			resolve(ok);
		};
		socket.setTimeout(timeoutMs, () => done(false));
		socket.once("connect", () => done(true));
		socket.once("error", () => done(false));
	});
}

/**
 * @param {{ name: string, host: string, port: number, enabledVar: string, startHint: string }} server
 * @returns {Promise<false | string>} false when the server is reachable, otherwise the skip reason
 */
export async function requireServer({ name, host, port, enabledVar, startHint }) {
	if (await isReachable(host, port)) return false;
	const reason = `${name} is not reachable at ${host}:${port}; start it with \`${startHint}\``;
	const ci = process.env.CI === "true" || process.env.CI === "1";
	if (ci || process.env[enabledVar] !== undefined) {
		throw new Error(
			`${reason}. Real-server suites must run ${ci ? "in CI" : `when ${enabledVar} is set`}.`,
		);
	}
	// Said once per file on stderr too: a runner's summary shows only "N skipped", not the titles.
	process.stderr.write(`skipped: ${reason} (set ${enabledVar}=1 to fail instead)\n`);
	return reason;
}

/** Host and port of a `host:port` or URL endpoint. */
export function hostPort(endpoint, defaultPort) {
	const url = new URL(endpoint.includes("://") ? endpoint : `tcp://${endpoint}`);
	return { host: url.hostname, port: url.port ? Number(url.port) : defaultPort };
}

/**
 * The single-node Cassandra of the real-server tests: CASSANDRA_CONTACT_POINTS (comma-separated,
 * default 127.0.0.1:9042) and CASSANDRA_LOCAL_DC (default datacenter1), as `cassandra-driver`
 * client options.
 */
export function cassandraEnv() {
	const contactPoints = (process.env.CASSANDRA_CONTACT_POINTS ?? "127.0.0.1:9042")
		.split(",")
		.map((s) => s.trim())
		.filter((s) => s !== "");
	return { contactPoints, localDataCenter: process.env.CASSANDRA_LOCAL_DC ?? "datacenter1" };
}

/** `requireServer` for the first contact point of {@link cassandraEnv}. */
export function cassandraGate() {
	const { host, port } = hostPort(cassandraEnv().contactPoints[0] ?? "127.0.0.1:9042", 9042);
	return requireServer({
		name: "Cassandra",
		host,
		port,
		enabledVar: "CASSANDRA_TESTS_ENABLED",
		startHint: "bash tooling/servers/cassandra/start.sh",
	});
}

/**
 * DynamoDB Local of the real-server tests: DYNAMODB_ENDPOINT (default http://127.0.0.1:8000), as
 * `@aws-sdk/client-dynamodb` client options (it accepts any credentials).
 */
export function dynamoEnv() {
	return {
		endpoint: process.env.DYNAMODB_ENDPOINT ?? "http://127.0.0.1:8000",
		region: "us-east-1",
		credentials: { accessKeyId: "local", secretAccessKey: "local" },
	};
}

/** `requireServer` for {@link dynamoEnv}'s endpoint. */
export function dynamoGate() {
	const { host, port } = hostPort(dynamoEnv().endpoint, 8000);
	return requireServer({
		name: "DynamoDB Local",
		host,
		port,
		enabledVar: "DYNAMODB_TESTS_ENABLED",
		startHint: "bash tooling/servers/dynamodb/start.sh",
	});
}

/**
 * The PostgreSQL of the real-server tests (tooling/servers/postgres), as `pg` pool options:
 * node-postgres' own PGHOST, PGPORT, PGUSER, PGDATABASE (PGPASSWORD is read by `pg` itself),
 * defaulting to 127.0.0.1:54329 (PG_PORT), role and database vvm.
 */
export function postgresEnv() {
	return {
		host: process.env.PGHOST ?? "127.0.0.1",
		port: Number(process.env.PGPORT ?? process.env.PG_PORT ?? 54329),
		user: process.env.PGUSER ?? "vvm",
		database: process.env.PGDATABASE ?? "vvm",
	};
}

/** `requireServer` for {@link postgresEnv}'s server. */
export function postgresGate() {
	const { host, port } = postgresEnv();
	return requireServer({
		name: "PostgreSQL",
		host,
		port,
		enabledVar: "PG_TESTS_ENABLED",
		startHint: "bash tooling/servers/postgres/start.sh",
	});
}

/**
 * The Redis of the real-server tests (tooling/servers/redis), as an ioredis URL: REDIS_URL, else
 * redis://127.0.0.1:<REDIS_PORT, default 6390>.
 */
export function redisEnv() {
	return { url: process.env.REDIS_URL ?? `redis://127.0.0.1:${process.env.REDIS_PORT ?? 6390}` };
}

/** `requireServer` for {@link redisEnv}'s server. */
export function redisGate() {
	const { host, port } = hostPort(redisEnv().url, 6379);
	return requireServer({
		name: "Redis",
		host,
		port,
		enabledVar: "REDIS_TESTS_ENABLED",
		startHint: "bash tooling/servers/redis/start.sh",
	});
}

/** The kernel's ephemeral port range (listen(0) and outgoing connections take their ports there). */
function ephemeralLow() {
	try {
		const low = Number(
			readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0],
		);
		if (Number.isInteger(low)) return low;
	} catch {
		// not Linux: the IANA range
	}
	return 49152;
}

/** @param {number} port */
function canListen(port) {
	return new Promise((resolve) => {
		const server = createServer();
		server.once("error", () => resolve(false));
		server.listen(port, () => server.close(() => resolve(true)));
	});
}

/**
 * A port nothing listens on, below the kernel's ephemeral range: for a server a test starts in
 * another process, or for a test that needs a refused connection. A port from listen(0) is free
 * only until it is given back; meanwhile another test's (or a CI job's) listen(0) can take it, as
 * a fault proxy of CI's Cassandra chaos series once took the port the DynamoDB series had just
 * picked. No listen(0) and no outgoing connection takes a port below that range.
 * @returns {Promise<number>}
 */
export async function unusedPort() {
	const below = ephemeralLow();
	const [from, to] = below > 20_000 ? [20_000, below - 1] : [1024, below - 1];
	for (let i = 0; i < 100; i++) {
		const port = from + Math.floor(Math.random() * (to - from + 1));
		if (await canListen(port)) return port;
	}
	throw new Error(`no unused port in ${from}..${to} after 100 tries`);
}
