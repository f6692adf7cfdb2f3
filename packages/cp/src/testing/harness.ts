import { randomInt } from "node:crypto";
import type { Sequencer, SequencerHandle } from "@vvm/isequencer";
import { createSequencer } from "@vvm/isequencer";
import type { TTLStorage } from "@vvm/ttlstorage";
import type { FaultCall, FaultyTTLStorage } from "@vvm/ttlstorage/testing";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import type { AppPartition, DeployOptions } from "../app-partition.ts";
import type { CommandProcessor, CommandProcessorOptions } from "../command-processor.ts";
import { createCommandProcessor } from "../command-processor.ts";
import type { SequencesTrustLevel } from "../event-writer.ts";
import { readU64 } from "../keys.ts";
import type { CommandResult } from "../request.ts";
import type { CaseContext } from "./case.ts";
import type { AcknowledgedCommand, CheckReport } from "./checker.ts";
import { checkCpStorage } from "./checker.ts";
import type { CrashableStorage } from "./crashable-storage.ts";
import { createCrashableStorage } from "./crashable-storage.ts";

/** @internal The pKey prefix (first 4 bytes) of a key, -1 when it has none. */
export function prefixOf(pKey: unknown): number {
	return pKey instanceof Uint8Array && pKey.length >= 4
		? new DataView(pKey.buffer, pKey.byteOffset).getUint32(0)
		: -1;
}

/** @internal Whether a call of the fault wrapper touches a key with this prefix (a batch: any item). */
export function touches(call: Pick<FaultCall, "args">, prefix: number): boolean {
	const first = call.args[0];
	return Array.isArray(first)
		? (first as Array<{ pKey: unknown }>).some((i) => prefixOf(i.pKey) === prefix)
		: prefixOf(first) === prefix;
}

/** @internal Writes of the sequencer's storage (`@vvm/seqstorage` prefixes 2 and 3). */
export const isSequencerWrite = (call: Pick<FaultCall, "args">): boolean =>
	touches(call, 2) || touches(call, 3);

/** @internal A run-unique application ID, so cases never share keys on a shared server. */
function uniqueAppId(): number {
	return randomInt(1, 0xffff_fff0);
}

/** @internal Waits until `cond` holds, polling; fails after `ms` of real time. */
export async function waitFor(cond: () => boolean, what: string, ms = 20_000): Promise<void> {
	const until = Date.now() + ms;
	while (!cond()) {
		if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 2));
	}
}

/** @internal The sequencer's stored next PLog offset of a partition (`@vvm/seqstorage` layout). */
export async function storedNextOffset(
	storage: TTLStorage,
	appId: number,
	partitionId: number,
): Promise<number | undefined> {
	const pKey = new Uint8Array(10);
	const v = new DataView(pKey.buffer);
	v.setUint32(0, 2);
	v.setUint32(4, appId);
	v.setUint16(8, partitionId);
	const b = await storage.get(pKey, new Uint8Array(4));
	return b === undefined ? undefined : readU64(b);
}

/** @internal Counts sequencing transactions in progress at once, per partition and overall. */
export class SequencerSpy {
	active = 0;
	maxActive = 0;
	maxActivePerPartition = 0;
	readonly #perPartition = new Map<Sequencer, number>();

	readonly factory: typeof createSequencer = (params, storage, options) => {
		const handle: SequencerHandle = createSequencer(params, storage, options);
		const inner = handle.sequencer;
		const enter = (): void => {
			const n = (this.#perPartition.get(inner) ?? 0) + 1;
			this.#perPartition.set(inner, n);
			this.maxActivePerPartition = Math.max(this.maxActivePerPartition, n);
			this.active++;
			this.maxActive = Math.max(this.maxActive, this.active);
		};
		const leave = (): void => {
			this.#perPartition.set(inner, (this.#perPartition.get(inner) ?? 1) - 1);
			this.active--;
		};
		const spied = {
			start: (wsKind: number, wsid: number) => {
				const offset = inner.start(wsKind, wsid);
				if (offset !== undefined) enter();
				return offset;
			},
			next: (seqId: number) => inner.next(seqId),
			flush: () => {
				leave();
				inner.flush();
			},
			actualize: () => {
				leave();
				inner.actualize();
			},
			stats: () => inner.stats(),
			ready: (signal?: AbortSignal) => inner.ready(signal),
		};
		return { sequencer: spied, cleanup: handle.cleanup, [Symbol.asyncDispose]: handle.cleanup };
	};
}

/** @internal Options of {@link Harness}. */
export interface HarnessOptions {
	readonly ctx: CaseContext;
	readonly trustLevel: SequencesTrustLevel;
	readonly partitions?: number;
	readonly extra?: Partial<CommandProcessorOptions>;
}

/**
 * @internal One "process" after another over the same storage: each has its crashable view, a
 * fault-injecting wrapper on top of it, and a command processor.
 */
export class Harness {
	readonly base: TTLStorage;
	readonly appId: number = uniqueAppId();
	readonly partitions: number;
	readonly trustLevel: SequencesTrustLevel;
	/** What the processor logged: the fields of each line, its level and message. */
	readonly logs: Array<Record<string, unknown> & { level: string; message: string | undefined }> =
		[];
	readonly acked: AcknowledgedCommand[] = [];
	readonly spy: SequencerSpy = new SequencerSpy();
	readonly #extra: Partial<CommandProcessorOptions>;
	process!: CrashableStorage;
	faults!: FaultyTTLStorage;
	cp!: CommandProcessor;

	constructor(options: HarnessOptions) {
		this.base = options.ctx.storage;
		this.trustLevel = options.trustLevel;
		this.partitions = options.partitions ?? 4;
		this.#extra = { ...options.ctx.options, ...options.extra };
		this.#newProcess();
	}

	#newProcess(): void {
		this.process = createCrashableStorage(this.base);
		this.faults = withFaults(this.process.storage);
		this.cp = createCommandProcessor({
			storage: this.faults,
			appId: this.appId,
			partitions: this.partitions,
			trustLevel: this.trustLevel,
			sequencerRetry: { baseDelayMs: 1, maxDelayMs: 20 },
			logger: {
				error: (fields, message) => this.logs.push({ ...fields, level: "error", message }),
				warn: (fields, message) => this.logs.push({ ...fields, level: "warn", message }),
				info: () => {},
				debug: () => {},
			},
			createSequencer: this.spy.factory,
			...this.#extra,
		});
	}

	/** Deploys a partition of the current process and waits until it is actualized. */
	async deploy(partitionId = 1, options: DeployOptions = {}): Promise<AppPartition> {
		const p = this.cp.deploy(partitionId, options);
		await p.ready();
		return p;
	}

	/** The process dies: nothing more reaches the storage. A new process is ready to deploy. */
	async crash(): Promise<void> {
		this.process.crash();
		await this.cp.close();
		this.#newProcess();
	}

	async close(): Promise<void> {
		await this.cp.close();
	}

	/** A create that, when it succeeds, is recorded as acknowledged. */
	async create(p: AppPartition, wsid: number, name: string): Promise<CommandResult> {
		const result = await p.createRecord({ wsid, table: "app1pkg.Customer", fields: { name } });
		this.acked.push({ wsid, result });
		return result;
	}

	/** Waits until the partition's sequencer has written every value (the stored offset is current). */
	async flushed(p: AppPartition): Promise<void> {
		await waitFor(() => p.stats().unflushedValues === 0, "the sequencer to flush");
	}

	check(options: { allowCorruptedOffsets?: boolean } = {}): Promise<CheckReport> {
		return checkCpStorage({
			storage: this.base,
			appId: this.appId,
			partitions: this.partitions,
			acknowledged: this.acked,
			...options,
		});
	}

	/**
	 * Makes the sequencer's flusher fall behind: its writes fail (it keeps retrying) until the
	 * returned function is called. Use with `coalesceWrites: false`, so no command shares its batch.
	 */
	stallFlusher(): () => void {
		return this.faults.inject({
			on: ["put", "putBatch"],
			match: isSequencerWrite,
			action: faults.fail(),
		});
	}

	/** Writes calls (anything but reads) seen by the current process's fault wrapper. */
	writes(): number {
		return this.faults.calls.filter(
			(c) => c.operation !== "get" && c.operation !== "read" && c.operation !== "queryTTL",
		).length;
	}
}
