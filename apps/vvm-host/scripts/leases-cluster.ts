// A lease cluster in one process: N hosts with --placement leases on one shared mem storage (hosts
// in separate processes cannot share mem or level storage; they share DynamoDB or Cassandra).
// For status-screenshot.sh and for looking at a leases cluster without a storage server:
//
//   cd apps/vvm-host && node --import tsx --conditions=@vvm/source scripts/leases-cluster.ts \
//     [--hosts 2] [--log-dir DIR] [-- <host flags, e.g. --partitions 6 --lease-interval-ms 2000>]
//
// Prints `{"event":"cluster-host","index":i,"port":p,"address":"127.0.0.1:p"}` on stdout for
// each host once it listens, then `{"event":"cluster-ready"}`. Host i logs to DIR/leases-host-i.log
// (default: discarded). SIGTERM or SIGINT stops every host and exits 0 (1 if a host did not exit 0).
import { createWriteStream } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { parseHostConfig } from "../src/config.ts";
import { EXIT, startHost } from "../src/host.ts";

const { values, positionals } = parseArgs({
	options: { hosts: { type: "string", default: "2" }, "log-dir": { type: "string" } },
	allowPositionals: true,
});
const size = Number(values.hosts);
if (!Number.isSafeInteger(size) || size < 1) {
	process.stderr.write(`leases-cluster: --hosts must be an integer >= 1, got ${values.hosts}\n`);
	process.exit(2);
}
const parsed = parseHostConfig(
	["--storage", "mem", "--http-port", "0", "--placement", "leases", ...positionals],
	process.env,
);
if (parsed.help) {
	process.stderr.write("leases-cluster: --help and --version are not host flags here\n");
	process.exit(2);
}
const storage = createMemTTLStorage();
const logDir = values["log-dir"];
const hosts = Array.from({ length: size }, (_, index) => {
	const file =
		logDir === undefined
			? undefined
			: createWriteStream(join(logDir, `leases-host-${index + 1}.log`));
	let port: number | undefined;
	const listening = Promise.withResolvers<number>();
	const host = startHost(parsed.config, {
		storage,
		logDestination: {
			write(line: string) {
				file?.write(line);
				if (port !== undefined || !line.includes('"listening"')) return;
				const event = JSON.parse(line) as { event?: string; port?: number };
				if (event.event === "listening" && typeof event.port === "number") {
					port = event.port;
					listening.resolve(port);
				}
			},
		},
	});
	void host.done.then((code) =>
		listening.reject(new Error(`host ${index + 1} exited with ${code}`)),
	);
	return { host, listening: listening.promise, file };
});

let stopping = false;
async function stop(): Promise<void> {
	if (stopping) return;
	stopping = true;
	const codes = await Promise.all(hosts.map(({ host }) => host.stop()));
	await storage.close();
	await Promise.all(
		hosts.map(({ file }) => new Promise<void>((done) => file?.end(done) ?? done())),
	);
	process.exit(codes.every((code) => code === EXIT.OK) ? 0 : 1);
}
process.once("SIGTERM", () => void stop());
process.once("SIGINT", () => void stop());

try {
	for (const [index, { listening }] of hosts.entries()) {
		const port = await listening;
		const address = `127.0.0.1:${port}`;
		process.stdout.write(`${JSON.stringify({ event: "cluster-host", index, port, address })}\n`);
	}
	process.stdout.write(`${JSON.stringify({ event: "cluster-ready" })}\n`);
} catch (error) {
	process.stderr.write(`leases-cluster: ${String(error)}\n`);
	await stop();
}
