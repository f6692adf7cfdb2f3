import { describe, expect, it } from "vitest";
import type { LruNode } from "../src/intrusive-lru.ts";
import { IntrusiveLru } from "../src/intrusive-lru.ts";
import { LruCacheAdapter } from "../src/lru-cache-adapter.ts";
import type { RecordCache } from "../src/record-cache.ts";
import { CACHE_KINDS, createRecordCache } from "../src/record-cache.ts";

class Node implements LruNode<Node> {
	readonly id: number;
	lruPrev: Node | undefined = undefined;
	lruNext: Node | undefined = undefined;
	lruUsed = false;
	constructor(id: number) {
		this.id = id;
	}
}

function make(
	kind: (typeof CACHE_KINDS)[number],
	max: number,
): { cache: RecordCache<number, Node>; evicted: number[] } {
	const evicted: number[] = [];
	const cache = createRecordCache<Node>(
		kind,
		max,
		(n) => n.id,
		(n, key) => {
			expect(key).toBe(n.id);
			evicted.push(n.id);
		},
	);
	return { cache, evicted };
}

describe.each(CACHE_KINDS)("RecordCache contract (%s)", (kind) => {
	it("is the implementation the kind names", () => {
		const { cache } = make(kind, 1);
		expect(cache).toBeInstanceOf(kind === "clock" ? IntrusiveLru : LruCacheAdapter);
	});

	it("holds at most max values and calls onEvict only when set makes room", () => {
		const { cache, evicted } = make(kind, 3);
		for (const id of [1, 2, 3]) cache.set(id, new Node(id));
		expect(cache.size).toBe(3);
		expect(evicted).toEqual([]);
		cache.set(4, new Node(4));
		expect(cache.size).toBe(3);
		expect(evicted).toEqual([1]); // nothing was used: the oldest goes
		expect(cache.has(1)).toBe(false);
		expect(cache.get(1)).toBeUndefined();
		expect(cache.peek(4)?.id).toBe(4);
	});

	it("keeps a value that was hit with get over one that was not", () => {
		const { cache, evicted } = make(kind, 3);
		for (const id of [1, 2, 3]) cache.set(id, new Node(id));
		expect(cache.get(1)?.id).toBe(1);
		cache.set(4, new Node(4));
		expect(evicted).toEqual([2]);
		expect(cache.has(1)).toBe(true);
	});

	it("peek and has do not count as a use", () => {
		const { cache, evicted } = make(kind, 2);
		cache.set(1, new Node(1));
		cache.set(2, new Node(2));
		expect(cache.peek(1)?.id).toBe(1);
		expect(cache.has(1)).toBe(true);
		cache.set(3, new Node(3));
		expect(evicted).toEqual([1]);
	});

	it("replaces a key without evicting; delete and clear do not call onEvict", () => {
		const { cache, evicted } = make(kind, 2);
		cache.set(1, new Node(1));
		cache.set(2, new Node(2));
		const again = new Node(1);
		cache.set(1, again);
		expect(cache.peek(1)).toBe(again);
		expect(cache.size).toBe(2);
		expect(cache.delete(2)).toBe(true);
		expect(cache.delete(2)).toBe(false);
		expect(cache.size).toBe(1);
		cache.clear();
		expect(cache.size).toBe(0);
		expect(evicted).toEqual([]);
		cache.set(1, again);
		cache.set(3, new Node(3));
		cache.set(4, new Node(4));
		expect(evicted).toEqual([1]);
	});

	it("holds one value at size 1", () => {
		const { cache, evicted } = make(kind, 1);
		cache.set(1, new Node(1));
		cache.get(1);
		cache.set(2, new Node(2));
		expect(evicted).toEqual([1]);
		expect(cache.peek(2)?.id).toBe(2);
		expect(cache.get(1)).toBeUndefined();
	});

	it("rejects a size below 1", () => {
		expect(() => make(kind, 0)).toThrow(RangeError);
		expect(() => make(kind, 1.5)).toThrow(RangeError);
	});
});

describe("lru-cache adapter", () => {
	it("is strict LRU: every get moves the value to the most recently used end", () => {
		const { cache, evicted } = make("lru-cache", 3);
		for (const id of [1, 2, 3]) cache.set(id, new Node(id));
		cache.get(2);
		cache.get(1); // recency now 3, 2, 1
		cache.set(4, new Node(4));
		cache.set(5, new Node(5));
		expect(evicted).toEqual([3, 2]);
		cache.get(1);
		cache.set(6, new Node(6));
		expect(evicted).toEqual([3, 2, 4]); // 1 was hit again; the second chance of CLOCK is not this
	});
});

describe("clock cache (second chance)", () => {
	it("evicts the oldest value that was not hit since it was queued", () => {
		const { cache, evicted } = make("clock", 3);
		for (const id of [1, 2, 3]) cache.set(id, new Node(id));
		cache.get(1);
		cache.set(4, new Node(4)); // 1 gets a second chance, 2 goes
		expect(evicted).toEqual([2]);
		cache.set(5, new Node(5)); // 3 goes (1 was re-queued behind it)
		expect(evicted).toEqual([2, 3]);
		cache.set(6, new Node(6)); // 1's second chance is used up
		expect(evicted).toEqual([2, 3, 1]);
		expect([4, 5, 6].every((id) => cache.has(id))).toBe(true);
		expect(cache.size).toBe(3);
	});

	it("evicts even when every value was hit", () => {
		const { cache, evicted } = make("clock", 3);
		for (const id of [1, 2, 3]) cache.set(id, new Node(id));
		for (const id of [3, 2, 1]) cache.get(id);
		cache.set(4, new Node(4));
		expect(evicted).toEqual([1]);
		expect(cache.size).toBe(3);
	});
});
