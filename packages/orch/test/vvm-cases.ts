// The VVM test cases of voedger's pkg/vvm impl_orch_test.go and shutdowntest (reference §5.5),
// plus the cases our design adds; run against fake elections and against the real @vvm/ielections.
import { MockClock } from "@vvm/clock";
import type { ITTLStorage, Killer } from "@vvm/ielections";
import { describe, expect, it } from "vitest";
import type { ElectionsFactory, VVMConfig, VVMEvent, VVMService } from "../src/index.ts";
import { provideVVM, VVMError } from "../src/index.ts";

export interface CaseEnv {
	readonly clock: MockClock;
	readonly storage: ITTLStorage<number, string>;
	readonly killer: Killer & { readonly scheduled: ReadonlyArray<{ delayMs: number }> };
	readonly createElections?: ElectionsFactory;
}

interface RecordingService extends VVMService {
	readonly log: string[];
}

function recordingService(
	name: string,
	log: string[],
	behaviour: { failStart?: Error; failStop?: Error } = {},
): RecordingService {
	return {
		name,
		log,
		async start({ signal }) {
			log.push(`start ${name}`);
			signal.addEventListener("abort", () => log.push(`signal ${name}`), { once: true });
			if (behaviour.failStart) throw behaviour.failStart;
		},
		async stop() {
			log.push(`stop ${name}`);
			if (behaviour.failStop) throw behaviour.failStop;
		},
	};
}

const aborted = (signal: AbortSignal): Promise<unknown> =>
	signal.aborted
		? Promise.resolve(signal.reason)
		: new Promise((resolve) =>
				signal.addEventListener("abort", () => resolve(signal.reason), { once: true }),
			);

export function vvmCases(label: string, makeEnv: () => CaseEnv): void {
	const config = (env: CaseEnv, extra: Partial<VVMConfig> & { address: string }): VVMConfig => ({
		storage: env.storage,
		clock: env.clock,
		killer: env.killer,
		...(env.createElections ? { createElections: env.createElections } : {}),
		...extra,
	});

	describe(`VVM (${label})`, () => {
		it("Basic/VVMStartAndStop: launches as leader of slot 1, starts and stops services in order", async () => {
			const env = makeEnv();
			const log: string[] = [];
			const events: VVMEvent[] = [];
			const vvm = provideVVM(
				config(env, {
					address: "192.168.0.1",
					services: [recordingService("a", log), recordingService("b", log)],
					onEvent: (e) => events.push(e),
				}),
			);
			const problem = await vvm.launch(20, 120_000);
			expect(problem.aborted).toBe(false);
			expect(vvm.problem()).toBeUndefined();
			expect(vvm.leadership()).toMatchObject({
				slot: 1,
				address: "192.168.0.1",
				durationSeconds: 20,
			});
			expect(vvm.leaseValid()).toBe(true);
			expect(await env.storage.get(1)).toBe("192.168.0.1");
			expect(log).toEqual(["start a", "start b"]);
			expect(await vvm.shutdown()).toBeUndefined();
			expect(log).toEqual(["start a", "start b", "signal a", "signal b", "stop b", "stop a"]);
			expect(vvm.leadership()).toBeUndefined();
			expect(vvm.leaseValid()).toBe(false);
			expect(problem.aborted).toBe(false);
			const types = events.map((e) => e.type);
			expect(types.slice(0, 4)).toEqual(["launching", "acquired", "leader", "services-started"]);
			expect(types[types.length - 1]).toBe("shutdown-done");
			expect(types).toContain("shutdown-started");
		});

		it("Basic/LeadershipCollision: a second VVM cannot acquire within the acquisition duration", async () => {
			const env = makeEnv();
			const vvm1 = provideVVM(config(env, { address: "192.168.0.1" }));
			expect((await vvm1.launch(20, 120_000)).aborted).toBe(false);
			const killsBefore = env.killer.scheduled.length;
			const vvm2 = provideVVM(config(env, { address: "192.168.0.2" }));
			const armed = env.clock.nextTimerArmed(); // vvm2's pause before its next attempt
			const launching = vvm2.launch(20, 1_000);
			expect((await armed).delayMs).toBe(1_000);
			env.clock.advance(1_000);
			const problem = await launching;
			expect(problem.aborted).toBe(true);
			expect(VVMError.is(problem.reason)).toBe(true);
			expect((problem.reason as VVMError).code).toBe("VVM_LEADERSHIP_ACQUISITION");
			expect(vvm2.leadership()).toBeUndefined();
			expect(env.killer.scheduled.length).toBe(killsBefore); // vvm2 never armed the killer
			const error = await vvm2.shutdown();
			expect(error).toBe(problem.reason);
			expect(await env.storage.get(1)).toBe("192.168.0.1"); // vvm2 did not touch vvm1's record
			expect(await vvm1.shutdown()).toBeUndefined();
		});

		it("takes the next free slot when numVVM > 1", async () => {
			const env = makeEnv();
			const vvm1 = provideVVM(config(env, { address: "a", numVVM: 2 }));
			const vvm2 = provideVVM(config(env, { address: "b", numVVM: 2 }));
			await vvm1.launch(20, 0);
			const launching = vvm2.launch(20, 5_000);
			await env.clock.nextTimerArmed();
			env.clock.advance(1_000);
			expect((await launching).aborted).toBe(false);
			expect(vvm2.leadership()?.slot).toBe(2);
			expect(await env.storage.get(2)).toBe("b");
			expect(await vvm2.shutdown()).toBeUndefined();
			expect(await vvm1.shutdown()).toBeUndefined();
			expect(await env.storage.get(1)).toBeUndefined();
			expect(await env.storage.get(2)).toBeUndefined();
		});

		it("acquires once the holder's record expires, within the acquisition duration", async () => {
			const env = makeEnv();
			await env.storage.insertIfNotExist(1, "someone else", 3);
			const vvm = provideVVM(config(env, { address: "me" }));
			const launching = vvm.launch(20, 10_000);
			for (let i = 0; i < 3; i++) {
				await env.clock.nextTimerArmed();
				env.clock.advance(1_000);
			}
			expect((await launching).aborted).toBe(false);
			expect(vvm.leadership()?.slot).toBe(1);
			expect(await vvm.shutdown()).toBeUndefined();
		});

		it("AutomaticShutdownOnLeadershipLoss: another value in the record ends leadership", async () => {
			const env = makeEnv();
			const log: string[] = [];
			const vvm = provideVVM(
				config(env, { address: "192.168.0.1", services: [recordingService("s", log)] }),
			);
			const problem = await vvm.launch(20, 120_000);
			const killsBefore = env.killer.scheduled.length;
			expect(killsBefore).toBeGreaterThan(0); // armed on acquisition (seed 001)
			expect(await env.storage.compareAndSwap(1, "192.168.0.1", "another_value", 50)).toBe(true);
			env.clock.advance(5_000); // the renewal's compare-and-swap now fails
			const reason = await aborted(problem);
			expect(VVMError.is(reason)).toBe(true);
			expect((reason as VVMError).code).toBe("VVM_LEADERSHIP_LOST");
			expect(log).toContain("signal s"); // services told to stop acting at once
			expect(vvm.leaseValid()).toBe(false);
			expect(await vvm.shutdown()).toBe(reason);
			expect(log[log.length - 1]).toBe("stop s");
			expect(await env.storage.get(1)).toBe("another_value"); // never deletes another's record
			expect(env.killer.scheduled.length).toBeGreaterThan(killsBefore); // armed before the CAS
		});

		it("CancelLeadershipOnManualShutdown: the leader record is deleted", async () => {
			const env = makeEnv();
			const vvm = provideVVM(config(env, { address: "192.168.0.1" }));
			await vvm.launch(20, 120_000);
			expect(await env.storage.get(1)).toBe("192.168.0.1");
			expect(await vvm.shutdown()).toBeUndefined();
			expect(await env.storage.get(1)).toBeUndefined();
		});

		it("ServicePipelineStartFailure: a failing service is a problem, not a crash", async () => {
			const env = makeEnv();
			const log: string[] = [];
			const boom = new Error("port in use");
			const vvm = provideVVM(
				config(env, {
					address: "192.168.0.1",
					services: [
						recordingService("ok", log),
						recordingService("bad", log, { failStart: boom }),
						recordingService("never", log),
					],
				}),
			);
			const problem = await vvm.launch(20, 120_000);
			expect(problem.aborted).toBe(true);
			const reason = problem.reason as VVMError;
			expect(reason.code).toBe("VVM_SERVICES_LAUNCH");
			expect(reason.cause).toBe(boom);
			expect(reason.message).toContain('"bad"');
			expect(await vvm.shutdown()).toBe(reason);
			expect(log).toEqual(["start ok", "start bad", "signal ok", "signal bad", "stop ok"]);
			expect(await env.storage.get(1)).toBeUndefined(); // leadership released anyway
		});

		it("WrongLaunchAndShutdownUsage: misuse throws with a clear message", async () => {
			const env = makeEnv();
			const vvm = provideVVM(config(env, { address: "192.168.0.1" }));
			expect(() => vvm.shutdown()).toThrow("VVM must be launched before shutdown");
			expect(() => vvm.launch(0)).toThrow(RangeError);
			expect(() => vvm.launch(20, -1)).toThrow(RangeError);
			await vvm.launch(20, 120_000);
			expect(() => vvm.launch(20, 120_000)).toThrow("VVM is launched already");
			expect(await vvm.shutdown()).toBeUndefined();
			expect(() => vvm.launch()).toThrow("VVM is launched already");

			const failed = provideVVM(config(env, { address: "x" }));
			const p = failed.launch(20, 0); // slot 1 is free again: acquires
			await p;
			expect(() => failed.launch(20, 0)).toThrow("VVM is launched already");
			await failed.shutdown();

			expect(() => provideVVM(config(env, { address: "" }))).toThrow(TypeError);
			expect(() => provideVVM(config(env, { address: "a", numVVM: 0 }))).toThrow(RangeError);
			expect(() => provideVVM(config(env, { address: "a", acquireRetryMs: 0 }))).toThrow(
				RangeError,
			);
			const dup = recordingService("x", []);
			expect(() => provideVVM(config(env, { address: "a", services: [dup, dup] }))).toThrow(
				"duplicate service name",
			);
		});

		it("shutdown during acquisition stops waiting, is not a problem and leaves no leadership", async () => {
			const env = makeEnv();
			const vvm1 = provideVVM(config(env, { address: "one" }));
			await vvm1.launch(20, 120_000);
			const vvm2 = provideVVM(config(env, { address: "two" }));
			const armed = env.clock.nextTimerArmed();
			const launching = vvm2.launch(20, 120_000);
			await armed;
			const shutdown = vvm2.shutdown();
			expect(vvm2.shutdown()).toBe(shutdown); // repeated calls share one result
			expect((await launching).aborted).toBe(false);
			expect(await shutdown).toBeUndefined();
			expect(env.clock.pendingTimers).toBeGreaterThan(0); // vvm1's renewal only
			expect(await env.storage.get(1)).toBe("one");
			expect(await vvm1.shutdown()).toBeUndefined();
			expect(env.clock.pendingTimers).toBe(0);
		});

		it("the first problem wins: a later leadership loss does not replace a service failure", async () => {
			const env = makeEnv();
			const boom = new Error("boom");
			const vvm = provideVVM(
				config(env, {
					address: "a",
					services: [recordingService("bad", [], { failStart: boom })],
				}),
			);
			const problem = await vvm.launch(20, 120_000);
			const first = problem.reason;
			await env.storage.compareAndSwap(1, "a", "b", 50);
			env.clock.advance(5_000);
			await env.clock.advanceAsync(0);
			expect(vvm.problem()).toBe(first);
			expect(await vvm.shutdown()).toBe(first);
		});

		it("a failing service stop is reported as VVM_SHUTDOWN and the rest still stop", async () => {
			const env = makeEnv();
			const log: string[] = [];
			const vvm = provideVVM(
				config(env, {
					address: "a",
					services: [
						recordingService("first", log),
						recordingService("second", log, { failStop: new Error("stuck") }),
					],
				}),
			);
			await vvm.launch(20, 120_000);
			const error = await vvm.shutdown();
			expect((error as VVMError).code).toBe("VVM_SHUTDOWN");
			expect(log.slice(-2)).toEqual(["stop second", "stop first"]);
			expect(await env.storage.get(1)).toBeUndefined();
		});

		it("renews on the clock and keeps the lease valid while renewals succeed", async () => {
			const env = makeEnv();
			const vvm = provideVVM(config(env, { address: "a" }));
			await vvm.launch(20, 120_000);
			const first = vvm.leadership();
			expect(first?.leaseDeadline).toBe((first?.lastRenewedAt ?? 0) + 16_000);
			for (let i = 0; i < 8; i++) await env.clock.advanceAsync(5_000);
			const later = vvm.leadership();
			expect(later?.renewals).toBe(8);
			expect(later?.leaseDeadline).toBe(env.clock.now() + 16_000);
			expect(vvm.leaseValid()).toBe(true);
			expect(await vvm.shutdown()).toBeUndefined();
		});

		it("a service whose start() never settles does not block shutdown: the record is released", async () => {
			const env = makeEnv();
			const log: string[] = [];
			let entered: () => void = () => {};
			const inStart = new Promise<void>((resolve) => {
				entered = resolve;
			});
			let finishStart: () => void = () => {};
			const hung: VVMService = {
				name: "hung",
				start() {
					log.push("start hung");
					entered();
					return new Promise<void>((resolve) => {
						finishStart = resolve;
					});
				},
				async stop() {
					log.push("stop hung");
				},
			};
			const vvm = provideVVM(
				config(env, {
					address: "a",
					services: [recordingService("first", log), hung, recordingService("never", log)],
				}),
			);
			const launching = vvm.launch(20, 0);
			await inStart;
			expect(await env.storage.get(1)).toBe("a");
			expect(await vvm.shutdown()).toBeUndefined(); // before the fix: waited for start() forever
			expect(await env.storage.get(1)).toBeUndefined(); // the slot is free for another VVM
			expect(vvm.leaseValid()).toBe(false);
			expect(vvm.leadership()).toBeUndefined();
			expect(env.clock.pendingTimers).toBe(0); // no renewal loop left
			expect(log).toEqual(["start first", "start hung", "signal first", "stop first"]);
			finishStart(); // the late start settles: the launcher stops that service itself
			expect((await launching).aborted).toBe(false);
			expect(log).toEqual(["start first", "start hung", "signal first", "stop first", "stop hung"]);
			expect(vvm.problem()).toBeUndefined();
		});

		it("a leadership loss after shutdown() was called does not change the result", async () => {
			const env = makeEnv();
			const events: VVMEvent[] = [];
			let lost: () => void = () => {};
			const lostEvent = new Promise<void>((resolve) => {
				lost = resolve;
			});
			const slowStop: VVMService = {
				name: "slow-stop",
				async start() {},
				async stop() {
					// while this service stops, another VVM takes the record and the renewal fails
					expect(await env.storage.compareAndSwap(1, "a", "b", 50)).toBe(true);
					await env.clock.advanceAsync(5_000);
					await lostEvent;
				},
			};
			const vvm = provideVVM(
				config(env, {
					address: "a",
					services: [slowStop],
					onEvent: (e) => {
						events.push(e);
						if (e.type === "lost") lost();
					},
				}),
			);
			expect((await vvm.launch(20, 0)).aborted).toBe(false);
			expect(await vvm.shutdown()).toBeUndefined(); // graceful: exit 0, not "leadership lost"
			expect(vvm.problem()).toBeUndefined();
			const types = events.map((e) => e.type);
			expect(types).toContain("lost");
			expect(types).not.toContain("problem");
			expect(types[types.length - 1]).toBe("shutdown-done");
			expect(await env.storage.get(1)).toBe("b"); // never deletes another's record
		});

		it("a start() that rejects because shutdown aborted its signal is not a problem", async () => {
			const env = makeEnv();
			let entered: () => void = () => {};
			const inStart = new Promise<void>((resolve) => {
				entered = resolve;
			});
			const listener: VVMService = {
				name: "listener",
				start({ signal }) {
					entered();
					return new Promise<void>((_, reject) =>
						signal.addEventListener("abort", () => reject(new Error("aborted")), { once: true }),
					);
				},
				async stop() {},
			};
			const vvm = provideVVM(config(env, { address: "a", services: [listener] }));
			const launching = vvm.launch(20, 0);
			await inStart;
			expect(await vvm.shutdown()).toBeUndefined(); // SIGTERM stays a graceful exit
			expect((await launching).aborted).toBe(false);
			expect(vvm.problem()).toBeUndefined();
			expect(await env.storage.get(1)).toBeUndefined();
		});

		it("a throwing onEvent listener does not break the VVM", async () => {
			const env = makeEnv();
			const vvm = provideVVM(
				config(env, {
					address: "a",
					onEvent: () => {
						throw new Error("listener");
					},
				}),
			);
			expect((await vvm.launch(20, 0)).aborted).toBe(false);
			expect(await vvm.shutdown()).toBeUndefined();
		});
	});
}

export function newClock(): MockClock {
	return new MockClock(1_700_000_000_000);
}
