// Benchmark of @vvm/leases: one placement-driver tick for BENCH_GROUPS (10 000) groups on each
// driver (CPU time, number and size of the writes, against ceil(batch bytes / 64 KiB)), and the
// failover time inside one process (a dead host's groups served elsewhere).
// Run: pnpm --filter @vvm/leases bench   (BENCH_DRIVERS=mem,level,cas,dyn  BENCH_GROUPS=10000
//      BENCH_FAILOVER_DRIVERS=mem,dyn  BENCH_FAILOVER_RUNS=5; real servers are used when reachable)
import { availableParallelism, cpus } from "node:os";
import type { MockClock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import { openDrivers } from "./drivers.ts";
import { benchFailover } from "./failover.ts";
import { benchTicks } from "./tick.ts";

const list = (name: string, fallback: string): string[] =>
	(process.env[name] ?? fallback)
		.split(",")
		.map((s) => s.trim())
		.filter(Boolean);
const groups = Number(process.env.BENCH_GROUPS ?? 10_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 30);
const runs = Number(process.env.BENCH_FAILOVER_RUNS ?? 5);
const run = `bench-${process.pid.toString(36)}${Date.now().toString(36)}`;

console.log(
	`@vvm/leases benchmark: ${groups} groups, 3 hosts; ${availableParallelism()} cores (${cpus()[0]?.model ?? "?"}), Node ${process.version}\n`,
);
console.log(
	"| driver | tick | ticks | CPU ms median | CPU ms max | wall ms median | writes | bytes written | batch bytes | ceil(batch / 64 KiB) |",
);
console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const driver of await openDrivers(list("BENCH_DRIVERS", "mem,level,cas,dyn"))) {
	try {
		for (const distinctStarts of [false, true]) {
			const rows = await benchTicks((clock: MockClock) => driver.storage(clock), {
				groups,
				hosts: 3,
				rounds,
				namespace: `${run}-${driver.name.split(" ")[0]}-${distinctStarts ? "worst" : "typical"}`,
				distinctStarts,
			});
			for (const r of rows) {
				console.log(
					`| ${driver.name} | ${r.kind} | ${r.ticks} | ${r.cpuMsMedian.toFixed(1)} | ${r.cpuMsMax.toFixed(1)} | ${r.wallMsMedian.toFixed(1)} | ${r.writes} | ${r.bytes.toLocaleString("en-US")} | ${r.batchBytes.toLocaleString("en-US")} | ${r.bound} |`,
				);
			}
		}
	} finally {
		await driver.close();
	}
}

const I = Number(process.env.BENCH_LEASE_MS ?? 2000);
const tick = I / 10;
console.log(
	`\nFailover inside one process: 4 hosts, 64 groups, leaseInterval ${I} ms, tick ${tick} ms, maxClockSkewMs 100, placement-driver leadership 1 s; ${runs} runs each\n`,
);
console.log(
	"| driver | host killed | runs | granted elsewhere: median / max ms | bound | served elsewhere: median / max ms | bound |",
);
console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: |");
for (const driver of await openDrivers(list("BENCH_FAILOVER_DRIVERS", "mem,dyn,cas"))) {
	try {
		const rows = await benchFailover(() => driver.storage(systemClock), {
			leaseIntervalMs: I,
			tickMs: tick,
			hosts: 4,
			groups: 64,
			runs,
			namespace: `${run}-failover-${driver.name.split(" ")[0]}`,
		});
		for (const r of rows)
			console.log(
				`| ${driver.name} | ${r.what} | ${r.runs} | ${r.granted.median} / ${r.granted.max} | ${r.granted.bound} | ${r.served.median} / ${r.served.max} | ${r.served.bound} |`,
			);
	} finally {
		await driver.close();
	}
}
