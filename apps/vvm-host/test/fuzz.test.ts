// The host under generated requests (issue 34): requests drawn from its OpenAPI document (valid,
// at the edges, and what the schemas exclude) plus malformed, truncated and slow ones, against a
// running host in each placement mode. Afterwards the host must be alive and ready, must not have
// answered any request with an unexpected error (HOST_INTERNAL), must shut down gracefully, and
// its storage must hold every acknowledged write (`checkCpStorage`). VVM_FUZZ_REQUESTS sets the
// requests per mode (CI: 60 000, so 120 000 in all); VVM_FUZZ_SEED replays a run.
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AcknowledgedCommand } from "@vvm/cp/testing";
import { checkCpStorage } from "@vvm/cp/testing";
import { afterAll, describe, expect, it } from "vitest";
import { HOST_APP_ID } from "../src/host.ts";
import { openApiDocument } from "../src/http/openapi.ts";
import type { FuzzRequest } from "./support/fuzz-requests.ts";
import { fuzzRequests, Rng } from "./support/fuzz-requests.ts";
import type { HostProcess } from "./support/host-process.ts";
import { killHard, spawnHost } from "./support/host-process.ts";
import { withLevelStorage } from "./support/level-db.ts";

const REQUESTS = Number(process.env.VVM_FUZZ_REQUESTS ?? (process.env.CI ? 60_000 : 10_000));
const SEED = Number(process.env.VVM_FUZZ_SEED ?? Date.now() % 1_000_000);
const CONCURRENCY = 16;
const PARTITIONS = 10; // the host's default

const spawned: HostProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
	for (const h of spawned) killHard(h);
	for (const d of dirs) await rm(d, { recursive: true, force: true });
});

interface Answer {
	readonly status: number;
	readonly body: string;
	readonly headers: Record<string, string | string[] | undefined>;
}

function send(
	agent: Agent,
	port: number,
	r: Extract<FuzzRequest, { kind: "http" }>,
): Promise<Answer> {
	return new Promise((resolve, reject) => {
		const req = request(
			{ host: "127.0.0.1", port, method: r.method, path: r.path, headers: r.headers, agent },
			(res) => {
				const chunks: Buffer[] = [];
				res.on("data", (c: Buffer) => chunks.push(c));
				res.on("end", () =>
					resolve({
						status: res.statusCode ?? 0,
						body: Buffer.concat(chunks).toString("utf8"),
						headers: res.headers,
					}),
				);
				res.on("error", reject);
			},
		);
		req.on("error", reject);
		// Headers and body go out as two writes: without this, Nagle's algorithm holds the body
		// until the server's delayed ACK (~40 ms a request).
		req.setNoDelay(true);
		req.end(r.body);
	});
}

/** Writes raw bytes (slowly: in pieces), half-closes, and resolves with the status line. */
function sendRaw(port: number, r: Extract<FuzzRequest, { kind: "raw" }>): Promise<string> {
	return new Promise((resolve) => {
		let out = "";
		const socket = connect(port, "127.0.0.1", async () => {
			if (!r.slow) {
				socket.end(r.bytes);
				return;
			}
			const third = Math.ceil(r.bytes.length / 3);
			for (let i = 0; i < 3; i++) {
				socket.write(r.bytes.subarray(i * third, (i + 1) * third));
				await new Promise((next) => setTimeout(next, 20)); // a slow client, on purpose
			}
			socket.end();
		});
		const timer = setTimeout(() => socket.destroy(), 5_000);
		socket.on("data", (d: Buffer) => {
			out += d.toString("latin1");
		});
		const done = (): void => {
			clearTimeout(timer);
			resolve(out.split("\r\n")[0] ?? "");
		};
		socket.on("close", done);
		socket.on("error", () => {});
	});
}

async function waitServing(port: number): Promise<void> {
	const until = Date.now() + 60_000;
	for (;;) {
		const r = await fetch(
			`http://127.0.0.1:${port}/api/v2/apps/vvm/demo/workspaces/1001/wlog`,
		).catch(() => undefined);
		if (r !== undefined && r.status === 200) return;
		if (Date.now() > until) throw new Error("partition 1 not served within 60 s");
		await new Promise((resolve) => setTimeout(resolve, 100)); // polling a spawned process
	}
}

describe("fuzzing the host from its OpenAPI document", () => {
	it.each(["static", "leases"] as const)(
		"--placement %s: every generated request is answered without an internal error; the host stays up and ready, stops gracefully, and its storage holds every acknowledged write",
		async (placement) => {
			const dir = await mkdtemp(join(tmpdir(), `vvm-fuzz-${placement}-`));
			dirs.push(dir);
			const host = spawnHost(`fuzz-${placement}`, [
				"--storage",
				"level",
				"--data-dir",
				dir,
				"--http-port",
				"0",
				"--placement",
				placement,
				...(placement === "leases" ? ["--lease-interval-ms", "4000"] : []),
			]);
			spawned.push(host);
			await host.waitFor((l) => l.event === "listening");
			const port = await host.port();
			await waitServing(port);

			const seed = SEED + (placement === "leases" ? 1 : 0);
			const next = fuzzRequests(openApiDocument("fuzz"), new Rng(seed));
			const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
			const statuses = new Map<number | string, number>();
			const internal: string[] = [];
			const acknowledged: AcknowledgedCommand[] = [];
			/** `wsid/wlog/plog` of every acknowledgment kept. */
			const seen = new Set<string>();
			let sent = 0;
			let connectionErrors = 0;
			/** Raw requests answered only after a second: label -> slowest ms. */
			const slowRaw = new Map<string, number>();
			const count = (key: number | string) => statuses.set(key, (statuses.get(key) ?? 0) + 1);
			const worker = async (): Promise<void> => {
				while (sent < REQUESTS) {
					sent++;
					const r = next();
					if (r.kind === "raw") {
						const t0 = performance.now();
						count(`raw ${(await sendRaw(port, r)).split(" ")[1] ?? "closed"}`);
						const ms = performance.now() - t0;
						if (ms > 1_000)
							slowRaw.set(r.label, Math.max(slowRaw.get(r.label) ?? 0, Math.round(ms)));
						continue;
					}
					let a: Answer;
					try {
						a = await send(agent, port, r);
					} catch {
						connectionErrors++; // e.g. a 413's connection: close racing the next request
						continue;
					}
					count(a.status);
					if (a.status === 500 && a.body.includes('"HOST_INTERNAL"'))
						internal.push(`${r.method} ${r.path} -> ${a.body.slice(0, 300)}`);
					if (r.write && r.wsid !== undefined && (a.status === 200 || a.status === 201)) {
						const body = JSON.parse(a.body) as {
							CurrentWLogOffset: number;
							NewIDs: Record<string, number>;
						};
						const plogOffset = Number(a.headers["vvm-plog-offset"]);
						// A retry with an Idempotency-Key answers the first result: one command, kept
						// once. A replay naming another event than the first answer did stays twice,
						// and the checker reports it.
						const id = `${r.wsid}/${body.CurrentWLogOffset}/${plogOffset}`;
						if (a.headers["idempotent-replayed"] === "true" && seen.has(id)) continue;
						seen.add(id);
						acknowledged.push({ wsid: r.wsid, result: { ...body, plogOffset } });
					}
				}
			};
			const started = performance.now();
			await Promise.all(Array.from({ length: CONCURRENCY }, worker));
			const seconds = (performance.now() - started) / 1000;
			agent.destroy();
			const summary = {
				placement,
				seed,
				requests: sent,
				seconds: Math.round(seconds),
				connectionErrors,
				acknowledged: acknowledged.length,
				statuses: Object.fromEntries([...statuses].sort()),
				slowRaw: Object.fromEntries(slowRaw),
			};
			console.log(`fuzz: ${JSON.stringify(summary)}`);

			expect(internal, `seed ${seed}: unexpected errors`).toEqual([]);
			expect(host.child.exitCode, "the host exited during the run").toBeNull();
			expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
			expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
			expect(
				acknowledged.length,
				"no write was acknowledged: the generator lost its way",
			).toBeGreaterThan(0);
			expect(connectionErrors).toBeLessThan(sent / 100);

			host.child.kill("SIGTERM");
			expect((await host.exited).code).toBe(0);
			const report = await withLevelStorage(dir, (storage) =>
				checkCpStorage({ storage, appId: HOST_APP_ID, partitions: PARTITIONS, acknowledged }),
			);
			expect(report.problems, `seed ${seed}`).toEqual([]);
		},
		600_000,
	);
});
