// Gate for suites that need a real server (Cassandra, DynamoDB Local, PostgreSQL).
// Locally a missing server skips the suite with a reason; in CI (CI=true) or when the
// <NAME>_TESTS_ENABLED variable is set, a missing server is an error, so CI never passes by skipping.
import { connect } from "node:net";

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
