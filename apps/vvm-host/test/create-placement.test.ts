import type { PlacementHandlers } from "@vvm/appparts";
import { checkStaticNumVVM, readStaticNumVVM } from "@vvm/appparts";
import { MockClock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { parseHostConfig } from "../src/config.ts";
import { createPlacement } from "../src/create-placement.ts";
import { EXIT, runHost } from "../src/host.ts";

const logger = pino({ level: "silent" });
const handlers: PlacementHandlers = { onGranted: async () => {}, onEnded: () => {} };

describe("createPlacement", () => {
	it("is what createPlacement builds for --placement static, with its service", () => {
		const created = createPlacement("static", {
			partitions: 4,
			numVVM: 1,
			handlers: handlers,
			leadership: () => undefined,
			leaderOf: async () => undefined,
			storage: createMemTTLStorage(),
			address: () => "127.0.0.1:1",
			clock: new MockClock(),
			logger,
			leases: { leaseIntervalMs: 10_000, maxClockSkewMs: 500, namespace: "vvm" },
		});
		expect(created.placement.mode).toBe("static");
		expect(created.services.map((s) => s.name)).toEqual(["partitions"]);
	});

	describe("--placement static and the cluster's stored --num-vvm", () => {
		const make = (storage: TTLStorage, numVVM: number, numVVMFrom?: number) =>
			createPlacement("static", {
				partitions: 4,
				numVVM,
				numVVMFrom,
				handlers,
				leadership: () => undefined,
				leaderOf: async () => undefined,
				storage,
				address: () => "127.0.0.1:1",
				clock: new MockClock(),
				logger,
				leases: { leaseIntervalMs: 10_000, maxClockSkewMs: 500, namespace: "c1" },
			}).placement;

		it("refuses a --num-vvm other than the stored one, naming the flags and how to change it", async () => {
			const storage = createMemTTLStorage();
			const first = make(storage, 2);
			await first.start(new AbortController().signal); // the first VVM stores 2
			expect(await readStaticNumVVM(storage, "c1")).toBe(2);
			const other = make(storage, 3);
			await expect(other.start(new AbortController().signal)).rejects.toThrow(
				"--num-vvm 3 disagrees with the cluster's stored num-vvm 2: refusing to serve under it",
			);
			await expect(other.start(new AbortController().signal)).rejects.toThrow(
				"start one with --num-vvm 3 --num-vvm-from 2",
			);
			await first.close();
			await other.close();
		});

		it("--num-vvm-from changes the stored value once, and only from the value it names", async () => {
			const storage = createMemTTLStorage();
			await make(storage, 2).start(new AbortController().signal);
			await expect(make(storage, 3, 4).start(new AbortController().signal)).rejects.toThrow(
				"--num-vvm-from 4: the cluster's stored num-vvm is 2, not 4; nothing changed",
			);
			expect(await readStaticNumVVM(storage, "c1")).toBe(2);
			await make(storage, 3, 2).start(new AbortController().signal);
			expect(await readStaticNumVVM(storage, "c1")).toBe(3);
			await make(storage, 3, 2).start(new AbortController().signal); // again: already 3
			await expect(make(storage, 2).start(new AbortController().signal)).rejects.toThrow(
				"--num-vvm 2 disagrees with the cluster's stored num-vvm 3",
			);
		});

		it("a host whose --num-vvm disagrees with the cluster's exits 1 before it leads, saying why", async () => {
			const storage = createMemTTLStorage();
			await checkStaticNumVVM(storage, 2, "vvm"); // the cluster runs with 2
			const parsed = parseHostConfig(
				["--storage", "mem", "--http-port", "0", "--num-vvm", "3"],
				{},
			);
			if (parsed.help) throw new Error("unexpected help");
			const lines: string[] = [];
			const events: string[] = [];
			const code = await runHost(parsed.config, {
				storage,
				killer: { schedule: () => {}, disarm: () => {} },
				stderr: (line) => lines.push(line),
				logDestination: {
					write: (line: string) => {
						events.push(String((JSON.parse(line) as { event?: string }).event));
					},
				},
			});
			expect(code).toBe(EXIT.FAILURE);
			expect(lines.join("\n")).toContain(
				"vvm-host: --num-vvm 3 disagrees with the cluster's stored num-vvm 2: refusing to serve under it",
			);
			expect(events).not.toContain("launching"); // never campaigned for a slot
			expect(await readStaticNumVVM(storage, "vvm")).toBe(2);
		});
	});
});
