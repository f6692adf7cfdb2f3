import type { PLogOffset, SeqBatcher, SeqID, SeqStorage, SeqValue, WSID } from "../../src/index.ts";

type Hook = () => void | Promise<void>;

/**
 * In-test ISeqStorage with a PLog (port of voedger's MockStorage): numbers in a map, next offset 1 by
 * default, settable errors and one-shot hooks that may block.
 */
export class MockSeqStorage implements SeqStorage {
	readonly numbers: Map<string, number> = new Map();
	nextOffset: PLogOffset = 1;
	readonly plog: Map<PLogOffset, SeqValue[]> = new Map();
	readNumbersError: Error | undefined;
	readNextOffsetError: Error | undefined;
	writeError: Error | undefined;
	actualizeError: Error | undefined;
	onReadNumbers: Hook | undefined;
	onReadNextOffset: Hook | undefined;
	onWrite: Hook | undefined;
	onActualize: Hook | undefined;
	/**
	 * One-shot: `readNumbers` takes its values at once, then awaits this hook before it replies (a
	 * reply older than writes that complete meanwhile).
	 */
	onReadNumbersReply: Hook | undefined;
	readonly calls: Record<"readNumbers" | "readNextPLogOffset" | "write" | "actualize", number> = {
		readNumbers: 0,
		readNextPLogOffset: 0,
		write: 0,
		actualize: 0,
	};
	readonly writes: Array<{ batch: SeqValue[]; offset: PLogOffset }> = [];

	static key(wsid: WSID, seqId: SeqID): string {
		return `${wsid}/${seqId}`;
	}

	setNumber(wsid: WSID, seqId: SeqID, n: number): void {
		this.numbers.set(MockSeqStorage.key(wsid, seqId), n);
	}

	getNumber(wsid: WSID, seqId: SeqID): number {
		return this.numbers.get(MockSeqStorage.key(wsid, seqId)) ?? 0;
	}

	addPLogEntry(offset: PLogOffset, wsid: WSID, seqId: SeqID, value: number): void {
		const list = this.plog.get(offset) ?? [];
		list.push({ wsid, seqId, value });
		this.plog.set(offset, list);
	}

	addPLogEvent(offset: PLogOffset, values: SeqValue[] = []): void {
		this.plog.set(offset, [...(this.plog.get(offset) ?? []), ...values]);
	}

	async #hook(
		name: "onReadNumbers" | "onReadNextOffset" | "onWrite" | "onActualize" | "onReadNumbersReply",
	): Promise<void> {
		const h = this[name];
		if (h === undefined) return;
		this[name] = undefined;
		await h();
	}

	async readNumbers(wsid: WSID, seqIds: readonly SeqID[]): Promise<readonly number[]> {
		this.calls.readNumbers++;
		await this.#hook("onReadNumbers");
		if (this.readNumbersError) throw this.readNumbersError;
		const values = seqIds.map((s) => this.getNumber(wsid, s));
		if (this.onReadNumbersReply !== undefined) await this.#hook("onReadNumbersReply");
		return values;
	}

	async readNextPLogOffset(): Promise<PLogOffset> {
		this.calls.readNextPLogOffset++;
		await this.#hook("onReadNextOffset");
		if (this.readNextOffsetError) throw this.readNextOffsetError;
		return this.nextOffset;
	}

	async writeValuesAndNextPLogOffset(
		batch: readonly SeqValue[],
		offset: PLogOffset,
	): Promise<void> {
		this.calls.write++;
		await this.#hook("onWrite");
		if (this.writeError) throw this.writeError;
		for (const v of batch) this.setNumber(v.wsid, v.seqId, v.value);
		this.nextOffset = offset;
		this.writes.push({ batch: [...batch], offset });
	}

	async actualizeSequencesFromPLog(
		offset: PLogOffset,
		batcher: SeqBatcher,
		signal: AbortSignal,
	): Promise<void> {
		this.calls.actualize++;
		await this.#hook("onActualize");
		if (this.actualizeError) throw this.actualizeError;
		for (let o = offset; this.plog.has(o); o++) {
			signal.throwIfAborted();
			await batcher(this.plog.get(o) as SeqValue[], o);
		}
	}
}

/** Lets promise continuations and immediates run. */
export async function settle(rounds = 3): Promise<void> {
	for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

/**
 * Calls `start` until it is ok (or, with `shouldBeOk = false`, checks it stays not ok), letting
 * background loops run in between. Bounded by iterations, not by time.
 */
export async function waitForStart(
	seq: { start(kind: number, ws: number): number | undefined },
	kind: number,
	ws: number,
	options: { shouldBeOk?: boolean; tries?: number; between?: () => void | Promise<void> } = {},
): Promise<number | undefined> {
	const { shouldBeOk = true, tries = 200 } = options;
	for (let i = 0; i < tries; i++) {
		const offset = seq.start(kind, ws);
		if (offset !== undefined) {
			if (!shouldBeOk) throw new Error(`start(${kind}, ${ws}) was ok (${offset}), expected not ok`);
			return offset;
		}
		await settle(1);
		await options.between?.();
	}
	if (shouldBeOk) throw new Error(`start(${kind}, ${ws}) stayed not ok after ${tries} tries`);
	return undefined;
}

/** A promise and its resolver, to block a storage hook until the test releases it. */
export function gate(): {
	promise: Promise<void>;
	open: () => void;
	entered: Promise<void>;
	enter: () => Promise<void>;
} {
	let open!: () => void;
	let markEntered!: () => void;
	const promise = new Promise<void>((r) => {
		open = r;
	});
	const entered = new Promise<void>((r) => {
		markEntered = r;
	});
	return {
		promise,
		open,
		entered,
		enter: () => {
			markEntered();
			return promise;
		},
	};
}
