import type { Clock } from "@vvm/clock";
import type { Elections, ITTLStorage, Killer } from "@vvm/ielections";
import { createElections, createElectionsStorage } from "@vvm/ielections";
import type { StoredRecord, TTLStorage } from "@vvm/ttlstorage";
import { fromUtf8, utf8 } from "@vvm/ttlstorage";
import type { LeaseEvent } from "./events.ts";
import type { LeaseKeys } from "./keys.ts";
import { Loop } from "./loop.ts";
import { MemberView } from "./member-view.ts";
import type { Counters } from "./metrics.ts";
import { noteBatchRead } from "./metrics.ts";
import type { PlacementActor } from "./placement-actor.ts";
import type { SlowRuns } from "./slow-runs.ts";

/** The elections key of the active placement driver. @internal */
const ACTIVE_KEY = "active";

/**
 * The killer the placement driver's elections get by default: none. Every write of the batch is
 * a compare-and-swap of the version it was computed from, so a placement driver that lost its
 * leadership and did not notice can only ever store a valid successor of the stored batch (see
 * the README, "Why the placement driver needs no killer"); ending the whole host for it would
 * turn a harmless delay into an outage.
 * @internal
 */
export const NO_KILLER: Killer = Object.freeze({
	schedule(): void {},
	disarm(): void {},
});

/** Options of {@link PlacementDriverCandidate}. @internal */
export interface CandidateOptions {
	readonly storage: TTLStorage;
	/** This instance: `address/incarnation`, the elections value. */
	readonly writer: string;
	readonly clock: Clock;
	readonly keys: LeaseKeys;
	readonly actor: PlacementActor;
	readonly tickMs: number;
	/** Reports ticks longer than `tickMs`. */
	readonly slowTicks: SlowRuns;
	readonly leadershipSeconds: number;
	readonly killer: Killer;
	readonly counters: Counters;
	readonly emit: (event: LeaseEvent) => void;
}

async function collect(records: AsyncIterable<StoredRecord>): Promise<StoredRecord[]> {
	const out: StoredRecord[] = [];
	for await (const r of records) out.push(r);
	return out;
}

/**
 * A placement-driver candidate: every tick it reads the member records (so its view of who is
 * alive is warm when it takes over), and then either runs the actor's tick (while it holds the
 * `<ns>/placement-driver` leadership) or tries to acquire that leadership when nobody holds it.
 * @internal
 */
export class PlacementDriverCandidate {
	readonly #o: CandidateOptions;
	readonly #view = new MemberView();
	readonly #elections: Elections<string, string>;
	readonly #electionsStorage: ITTLStorage<string, string>;
	readonly #loop: Loop;
	#signal: AbortSignal | undefined;
	#activeActor: string | undefined;

	constructor(options: CandidateOptions) {
		this.#o = options;
		this.#electionsStorage = createElectionsStorage<string, string>(options.storage, {
			pKey: () => options.keys.placementDriver,
			fencingPKey: () => options.keys.placementDriverFencing,
			cCols: (key) => utf8(key),
			encodeValue: utf8,
			decodeValue: fromUtf8,
		});
		this.#elections = createElections(this.#electionsStorage, {
			clock: options.clock,
			killer: options.killer,
		});
		this.#loop = new Loop(
			options.clock,
			options.tickMs,
			() => this.#run(),
			(error) => this.#error("tick", error),
			(ms) => options.slowTicks.record(ms),
		);
	}

	get active(): boolean {
		return this.#signal !== undefined && !this.#signal.aborted;
	}

	get activeActor(): string | undefined {
		return this.active ? this.#o.writer : this.#activeActor;
	}

	/** The member view (tests). */
	get view(): MemberView {
		return this.#view;
	}

	get running(): Promise<void> | undefined {
		return this.#loop.running;
	}

	start(): void {
		this.#loop.start(true);
	}

	#error(operation: "read" | "tick" | "campaign" | "leave", error: unknown): void {
		this.#o.counters.storageErrors++;
		this.#o.emit({ type: "storage-error", at: this.#o.clock.now(), operation, error });
	}

	async #run(): Promise<void> {
		const o = this.#o;
		const readStart = o.clock.monotonic();
		try {
			this.#view.observe(await collect(o.storage.read(o.keys.members)), readStart);
		} catch (error) {
			this.#error("read", error);
		}
		if (!this.active) await this.#campaign();
		if (!this.active) return;
		try {
			await o.actor.tick(this.#view);
		} catch (error) {
			o.actor.reset();
			if (noteBatchRead(o.counters, error) !== undefined)
				o.emit({ type: "batch-fault", at: o.clock.now(), operation: "tick", error });
			else this.#error("tick", error);
		}
	}

	async #campaign(): Promise<void> {
		const o = this.#o;
		let holder: string | undefined;
		try {
			holder = await this.#electionsStorage.get(ACTIVE_KEY);
		} catch (error) {
			this.#error("campaign", error);
			return;
		}
		this.#activeActor = holder;
		if (holder !== undefined) return;
		const signal = await this.#elections.acquireLeadership(
			ACTIVE_KEY,
			o.writer,
			o.leadershipSeconds,
		);
		if (signal === undefined) return;
		this.#signal = signal;
		o.actor.activate();
		o.emit({ type: "placement-driver", at: o.clock.now(), active: true });
		signal.addEventListener(
			"abort",
			() => {
				o.actor.reset();
				o.emit({ type: "placement-driver", at: o.clock.now(), active: false });
			},
			{ once: true },
		);
	}

	/** Stops ticking without giving the leadership up (a crash, in tests). */
	async crash(): Promise<void> {
		await this.#loop.stop();
	}

	/** Stops ticking and gives the leadership up. */
	async close(): Promise<void> {
		await this.#loop.stop();
		try {
			await this.#elections.cleanup();
		} catch (error) {
			this.#error("leave", error);
		}
	}
}
