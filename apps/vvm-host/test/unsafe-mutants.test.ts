// The test-only mutants of the chaos test: refused without the acknowledgment flag, and each one
// really removes its mechanism (else the chaos checker's "caught the mutant" would prove nothing).
import { MockClock } from "@vvm/clock";
import type { ITTLStorage } from "@vvm/ielections";
import { createElections, vvmLeadershipStorage } from "@vvm/ielections";
import type { VVMServiceContext } from "@vvm/orch";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { ConfigError, parseHostConfig } from "../src/config.ts";
import { createLeaseWorker } from "../src/lease-worker.ts";
import { unsafeMutantHooks } from "../src/unsafe-mutants.ts";
import { runCli } from "./support/host-process.ts";

const NOW = 1_700_000_000_000;
const config = (argv: string[], env: Record<string, string>) => {
	const parsed = parseHostConfig(argv, env);
	if (parsed.help) throw new Error("unexpected help");
	return parsed.config;
};

describe("VVM_UNSAFE_MUTANTS", () => {
	it("is empty by default and needs --unsafe-allow-mutants", () => {
		expect(config([], {}).unsafeMutants).toEqual([]);
		expect(config([], { VVM_UNSAFE_MUTANTS: "" }).unsafeMutants).toEqual([]);
		expect(() => parseHostConfig([], { VVM_UNSAFE_MUTANTS: "killer" })).toThrow(ConfigError);
		expect(() => parseHostConfig([], { VVM_UNSAFE_MUTANTS: "killer" })).toThrow(
			/needs --unsafe-allow-mutants; never use it in production/,
		);
		expect(
			config(["--unsafe-allow-mutants"], { VVM_UNSAFE_MUTANTS: "lease-timer, killer" })
				.unsafeMutants,
		).toEqual(["killer", "lease-timer"]);
	});

	it("rejects an unknown mutant, naming the known ones", () => {
		expect(() =>
			parseHostConfig(["--unsafe-allow-mutants"], { VVM_UNSAFE_MUTANTS: "killer,clock" }),
		).toThrow(
			'names an unknown mutant "clock" (known: killer, lease-check, lease-timer, unfenced)',
		);
	});

	it("the CLI exits 2 when the variable comes without the flag", async () => {
		const { code, stderr } = await runCli(["--storage", "mem", "--http-port", "0"], {
			VVM_UNSAFE_MUTANTS: "killer",
		});
		expect(code).toBe(2);
		expect(stderr).toContain("needs --unsafe-allow-mutants");
	});

	it("without mutants the host keeps every mechanism", () => {
		expect(unsafeMutantHooks([])).toEqual({ checkLease: true, unfenced: false });
	});

	it("killer: a killer that never fires", () => {
		const { killer } = unsafeMutantHooks(["killer"]);
		expect(killer).toBeDefined();
		expect(() => killer?.schedule(0, "deadline passed")).not.toThrow();
	});

	it("lease-check: the worker acts after the lease deadline", async () => {
		const logger = pino({ level: "silent" });
		const leadership = () => ({
			slot: 1,
			address: "127.0.0.1:1#aaaaaaaaaaaa",
			durationSeconds: 4,
			acquiredAt: 0,
			renewals: 0,
			lastRenewedAt: 0,
			leaseDeadline: 0,
			leaseTimeLeftMs: -100,
			fencingToken: 7,
		});
		const context: VVMServiceContext = {
			signal: new AbortController().signal,
			leaseValid: () => false,
			fencingToken: 7,
		};
		const safe = createLeaseWorker({ intervalMs: 0, logger, leadership });
		const broken = createLeaseWorker({
			intervalMs: 0,
			logger,
			leadership,
			checkLease: unsafeMutantHooks(["lease-check"]).checkLease,
		});
		await safe.start(context);
		await broken.start(context);
		expect(safe.act("test")).toEqual({ done: false, reason: "lease expired" });
		expect(broken.act("test")).toMatchObject({ done: true, fencingToken: 7 });
	});

	it("lease-timer: a hanging renewal no longer aborts the signal at the lease deadline", async () => {
		const run = async (factory: typeof createElections | undefined): Promise<boolean> => {
			const clock = new MockClock(NOW);
			const mem = vvmLeadershipStorage(createMemTTLStorage({ clock }));
			let hang = false;
			const storage: ITTLStorage<number, string> = {
				...mem,
				insertIfNotExist: (k, v, t) => mem.insertIfNotExist(k, v, t),
				compareAndSwap: (k, o, n, t) =>
					hang ? new Promise<boolean>(() => {}) : mem.compareAndSwap(k, o, n, t),
				compareAndDelete: (k, v) => mem.compareAndDelete(k, v),
				get: (k) => mem.get(k),
			};
			const elections = (factory ?? createElections)(storage, {
				clock,
				killer: { schedule: () => {} },
			});
			const signal = await elections.acquireLeadership(1, "a#aaaaaaaaaaaa", 4);
			if (signal === undefined) throw new Error("not acquired");
			hang = true;
			await clock.advanceAsync(4_000); // past the 3.2 s lease, the renewal hanging
			return signal.aborted;
		};
		expect(await run(undefined)).toBe(true);
		const mutant = unsafeMutantHooks(["lease-timer"]).createElections;
		expect(mutant).toBeDefined();
		expect(await run(mutant as typeof createElections)).toBe(false);
	});
});
