// The simulated storage: one shared in-memory driver (@vvm/ttlstorage-mem, the real fence code)
// and, per holder process, a link to it whose every call is one request of the fault layer. The
// layer decides each request's raw transport outcome from the seed (delivered after a delay,
// never reached the server, applied but its answer lost, applied after the driver's timeout) and
// the profile turns that outcome into what the real driver would report (see profiles.ts).
import type {
	BatchItem,
	Bytes,
	ConditionalBatchItem,
	ReadRange,
	StoredRecord,
	TTLStorage,
	TTLStorageSupports,
	WriteOptions,
} from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";
import type { OpClass, RawFailure } from "./dyn-probe.ts";
import type { Profile } from "./profiles.ts";
import type { Rng } from "./rng.ts";

/** What the fault layer decided for one request. */
export type Fate = "ok" | RawFailure;

/** The process a link belongs to (`Incarnation` of world.ts). */
export interface SimProc {
	readonly tag: string;
	dead: boolean;
	pausedUntil: number;
	epoch?: bigint;
}

/** What a link needs of the world (the `World` of world.ts). */
export interface SimHost {
	readonly faultRng: Rng;
	now(): number;
	at(at: number, what: string, run: () => void | Promise<void>, storage?: boolean): unknown;
	delay(): number;
	lateDelay(): number;
	shortDelay(): number;
	drawFate(cls: OpClass, name: string, proc: SimProc): Fate;
	deliver(proc: SimProc, fn: () => void): void;
	cause(line: string): void;
	bump(key: string): void;
	version(key: string): number;
	observeWrite(proc: SimProc, pKeys: readonly Uint8Array[], fenced: boolean): void;
}

const bytesEqual = (a: Bytes | undefined, b: Bytes | undefined): boolean => {
	if (a === undefined || b === undefined || a.length !== b.length) return false;
	for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
	return true;
};

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

async function settle<T>(run: () => Promise<T>): Promise<Settled<T>> {
	try {
		return { ok: true, value: await run() };
	} catch (error) {
		return { ok: false, error };
	}
}

const keyOf = (p: Bytes, c: Bytes): string => `${p.join(",")}|${c.join(",")}`;

/** What a key holds, by its pKey prefix (`@vvm/seqstorage`'s and `@vvm/cp`'s key layouts). */
const KINDS: Record<number, string> = {
	2: "partition numbers",
	3: "workspace numbers",
	5: "PLog",
	6: "WLog",
	7: "records",
	8: "idempotency keys",
	9: "fence",
};

/** The kinds of keys a list of `pKey|cCols` keys holds, e.g. "PLog+records". */
function kindsOf(keys: readonly string[]): string {
	const out = new Set<string>();
	for (const k of keys) {
		const b = k.split("|")[0]?.split(",").map(Number) ?? [];
		const prefix =
			b.length >= 4
				? (((b[0] ?? 0) << 24) | ((b[1] ?? 0) << 16) | ((b[2] ?? 0) << 8) | (b[3] ?? 0)) >>> 0
				: -1;
		out.add(KINDS[prefix] ?? `prefix ${prefix}`);
	}
	return [...out].join("+");
}

/** A request that never answers (its process crashed). */
const never = <T>(): Promise<T> => new Promise<T>(() => {});

/**
 * One process's link to the shared storage. Every method is a request: its fate is drawn from
 * the world's fault stream, its deliveries are world events, its answer reaches the process only
 * while the process runs (paused: on resume; crashed: never).
 */
export class SimLink implements TTLStorage {
	readonly supports: TTLStorageSupports;
	readonly putBatchIf?: (items: readonly ConditionalBatchItem[]) => Promise<boolean>;
	readonly #world: SimHost;
	readonly #proc: SimProc;
	readonly #base: TTLStorage;
	readonly #profile: Profile;
	/** Calls of this process, numbered: an "ordered" driver stamps a write when it is called. */
	#calls = 0;
	/** Per key, the latest call whose fenced write of this process landed (F2). */
	readonly #landed = new Map<string, number>();

	constructor(world: SimHost, proc: SimProc, base: TTLStorage, profile: Profile) {
		this.#world = world;
		this.#proc = proc;
		this.#base = base;
		this.#profile = profile;
		this.supports = profile.supports(base);
		const batchIf = base.putBatchIf?.bind(base);
		if (batchIf !== undefined && profile.conditionalBatches)
			this.putBatchIf = (items) => this.#request("conditional", "putBatchIf", () => batchIf(items));
	}

	/** One request through the fault layer. `ours` tells a resent conditional write's verdict. */
	#request<T>(
		cls: OpClass,
		name: string,
		apply: () => Promise<T>,
		ours?: () => Promise<boolean>,
		keys?: ReadonlyArray<{ readonly key: string; readonly fenced: boolean }>,
	): Promise<T> {
		const unfencedKeys = keys?.filter((k) => !k.fenced).map((k) => k.key);
		const what = keys === undefined ? name : `${name} (${kindsOf(keys.map((k) => k.key))})`;
		const w = this.#world;
		const proc = this.#proc;
		if (proc.dead) return never();
		const fate = w.drawFate(cls, name, proc);
		const profile = this.#profile;
		return new Promise<T>((resolve, reject) => {
			const answer = (at: number, r: Settled<T>): void => {
				w.at(
					at,
					`answer ${name} to ${proc.tag}`,
					() => w.deliver(proc, () => (r.ok ? resolve(r.value) : reject(r.error))),
					true,
				);
			};
			const error = (raw: RawFailure, attempts: number): Settled<T> => {
				const e = profile.error(cls, raw, name, attempts);
				if (
					raw !== "refused" &&
					cls !== "get" &&
					TTLStorageError.is(e) &&
					e.code === "TTLSTORAGE_UNAVAILABLE"
				)
					w.cause(
						`driver-lie: ${what} of ${proc.tag} answered ${e.code} ("nothing was written") after a ${raw} request that was applied`,
					);
				return { ok: false, error: e };
			};
			const sends = fate === "ok" ? 1 : profile.sends(cls, fate);
			const t0 = w.now();
			switch (fate) {
				case "ok": {
					const at = t0 + w.delay();
					w.at(
						at,
						`apply ${name} of ${proc.tag}`,
						async () => {
							answer(at + w.delay(), await settle(apply));
						},
						true,
					);
					return;
				}
				case "refused": {
					// Nothing reaches the server; the client library may try again (each refused).
					answer(t0 + sends * w.shortDelay(), error("refused", sends));
					return;
				}
				case "late": {
					// The driver's timeout fires; the request is applied after it.
					const timeout = profile.requestTimeoutMs;
					answer(t0 + timeout, error("late", sends));
					w.at(
						t0 + timeout + w.lateDelay(),
						`late apply ${name} of ${proc.tag}`,
						async () => {
							await settle(apply);
						},
						true,
					);
					return;
				}
				case "lost": {
					// Attempt 1 is applied and its answer lost; the client library resends up to
					// `sends` times, each attempt applied again, each answer lost or not.
					let t = t0;
					let first: Settled<T> | undefined;
					let versions: number[] = [];
					const attempt = (k: number): void => {
						t += w.delay();
						w.at(
							t,
							`apply ${name} of ${proc.tag} (attempt ${k})`,
							async () => {
								const changed =
									unfencedKeys?.filter((key, i) => w.version(key) !== versions[i]) ?? [];
								if (k > 1 && changed.length > 0)
									w.cause(
										`resend-undid-later-write: ${name} (${kindsOf(changed)}) of ${proc.tag}: the client library resent it after another write of the same key landed; the resend put the older value back`,
									);
								const r = await settle(apply);
								versions = unfencedKeys?.map((key) => w.version(key)) ?? [];
								if (k === 1) first = r;
								else if (
									cls === "conditional" &&
									r.ok &&
									r.value === true &&
									first?.ok &&
									first.value === true
								)
									w.cause(
										`resend-applied-twice: ${what} of ${proc.tag}: a resent attempt's condition held again, the write took effect twice`,
									);
								const lost = k === 1 || w.faultRng.chance(0.5);
								if (!lost) {
									if (k > 1 && r.ok && r.value === false && ours !== undefined) {
										// A resent conditional write whose condition failed: the driver
										// decides from the item it read back.
										const verdict = (await ours())
											? profile.resendFoundOurs
											: profile.resendFoundOther;
										answer(
											t + w.delay(),
											verdict === "unknown"
												? error("lost", k)
												: ({ ok: true, value: (verdict === "true") as T } as Settled<T>),
										);
										return;
									}
									answer(t + w.delay(), r);
									return;
								}
								if (k < sends) {
									t += w.delay();
									attempt(k + 1);
								} else answer(t + profile.requestTimeoutMs, error("lost", k));
							},
							true,
						);
					};
					attempt(1);
					return;
				}
			}
		});
	}

	raiseFence(scope: Bytes, epoch?: bigint): Promise<bigint> {
		const raise = this.#base.raiseFence?.bind(this.#base);
		if (raise === undefined) throw new TypeError("the base storage has no fences");
		return this.#request("conditional", "raiseFence", () => raise(scope, epoch));
	}

	insertIfNotExists(p: Bytes, c: Bytes, v: Bytes, ttl: number, o?: WriteOptions): Promise<boolean> {
		return this.#request(
			"conditional",
			"insertIfNotExists",
			async () => {
				const ok = await this.#base.insertIfNotExists(p, c, v, ttl, o);
				if (ok) this.#world.bump(keyOf(p, c));
				return ok;
			},
			async () => bytesEqual(await this.#base.get(p, c), v),
			[{ key: keyOf(p, c), fenced: true }],
		);
	}

	compareAndSwap(
		p: Bytes,
		c: Bytes,
		ov: Bytes,
		nv: Bytes,
		ttl: number,
		o?: WriteOptions,
	): Promise<boolean> {
		return this.#request(
			"conditional",
			"compareAndSwap",
			async () => {
				const ok = await this.#base.compareAndSwap(p, c, ov, nv, ttl, o);
				if (ok) this.#world.bump(keyOf(p, c));
				return ok;
			},
			async () => bytesEqual(await this.#base.get(p, c), nv),
			[{ key: keyOf(p, c), fenced: true }],
		);
	}

	compareAndDelete(p: Bytes, c: Bytes, v: Bytes, o?: WriteOptions): Promise<boolean> {
		return this.#request(
			"conditional",
			"compareAndDelete",
			() => this.#base.compareAndDelete(p, c, v, o),
			async () => false,
		);
	}

	get(p: Bytes, c: Bytes): Promise<Bytes | undefined> {
		return this.#request("get", "get", () => this.#base.get(p, c));
	}

	queryTTL(p: Bytes, c: Bytes): Promise<number | undefined> {
		return this.#request("get", "queryTTL", () => this.#base.queryTTL(p, c));
	}

	put(p: Bytes, c: Bytes, v: Bytes, ttl?: number, o?: WriteOptions): Promise<void> {
		const call = ++this.#calls;
		return this.#request(
			"put",
			"put",
			async () => {
				this.#world.observeWrite(this.#proc, [p], o?.fence !== undefined);
				if (this.#superseded(p, c, call, o?.fence !== undefined)) return;
				await this.#base.put(p, c, v, ttl, o);
				this.#world.bump(keyOf(p, c));
			},
			undefined,
			[{ key: keyOf(p, c), fenced: o?.fence !== undefined }],
		);
	}

	putBatch(items: readonly BatchItem[]): Promise<void> {
		const call = ++this.#calls;
		return this.#request(
			"batch",
			"putBatch",
			async () => {
				this.#world.observeWrite(
					this.#proc,
					items.map((i) => i.pKey),
					items.some((i) => i.fence !== undefined),
				);
				const live = items.filter(
					(i) => !this.#superseded(i.pKey, i.cCols, call, i.fence !== undefined),
				);
				if (live.length > 0) await this.#base.putBatch(live);
				for (const i of live) this.#world.bump(keyOf(i.pKey, i.cCols));
			},
			undefined,
			items.map((i) => ({ key: keyOf(i.pKey, i.cCols), fenced: i.fence !== undefined })),
		);
	}

	/**
	 * The contract's F2, for every fencing driver: of two fenced writes of one record under one
	 * epoch from one process, the one called later wins, even if the earlier one lands later (a
	 * driver stamps a fenced write when it is called: DynamoDB's (epoch, stamp) attribute,
	 * Cassandra's write timestamp, PostgreSQL's stamp column; mem and level have no late writes).
	 * A write of this process that lands after a later-called one on the same key is superseded
	 * (no effect, no error). The base driver sees writes as they arrive, so the link keeps call
	 * order here.
	 */
	#superseded(p: Bytes, c: Bytes, call: number, fenced: boolean): boolean {
		if (!fenced) return false;
		const key = keyOf(p, c);
		const last = this.#landed.get(key) ?? 0;
		if (last > call) return true;
		this.#landed.set(key, call);
		return false;
	}

	read(p: Bytes, range?: ReadRange): AsyncIterable<StoredRecord> {
		const all = this.#request("get", "read", async () => {
			const out: StoredRecord[] = [];
			for await (const r of this.#base.read(p, range)) out.push(r);
			return out;
		});
		return {
			async *[Symbol.asyncIterator]() {
				yield* await all;
			},
		};
	}

	async close(): Promise<void> {}

	async [Symbol.asyncDispose](): Promise<void> {}
}
