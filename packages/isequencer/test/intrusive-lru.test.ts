import { describe, expect, it } from "vitest";
import type { LruNode } from "../src/intrusive-lru.ts";
import { IntrusiveLru } from "../src/intrusive-lru.ts";

class Node implements LruNode<Node> {
	readonly id: number;
	lruPrev: Node | undefined = undefined;
	lruNext: Node | undefined = undefined;
	lruUsed = false;
	constructor(id: number) {
		this.id = id;
	}
}

function cache(max: number): { lru: IntrusiveLru<number, Node>; evicted: number[] } {
	const evicted: number[] = [];
	const lru = new IntrusiveLru<number, Node>(
		max,
		(n) => n.id,
		(n, key) => {
			expect(key).toBe(n.id);
			evicted.push(n.id);
		},
	);
	return { lru, evicted };
}

describe("IntrusiveLru", () => {
	it("evicts the oldest value that was not hit since it was queued", () => {
		const { lru, evicted } = cache(3);
		for (const id of [1, 2, 3]) lru.set(id, new Node(id));
		lru.get(1);
		lru.set(4, new Node(4)); // 1 gets a second chance, 2 goes
		expect(evicted).toEqual([2]);
		lru.set(5, new Node(5)); // 3 goes (1 was re-queued behind it)
		expect(evicted).toEqual([2, 3]);
		lru.set(6, new Node(6)); // 1's second chance is used up
		expect(evicted).toEqual([2, 3, 1]);
		expect([4, 5, 6].every((id) => lru.has(id))).toBe(true);
		expect(lru.size).toBe(3);
	});

	it("evicts even when every value was hit", () => {
		const { lru, evicted } = cache(3);
		for (const id of [1, 2, 3]) lru.set(id, new Node(id));
		for (const id of [3, 2, 1]) lru.get(id);
		lru.set(4, new Node(4));
		expect(evicted).toEqual([1]);
		expect(lru.size).toBe(3);
	});

	it("holds one value at size 1", () => {
		const { lru, evicted } = cache(1);
		lru.set(1, new Node(1));
		lru.get(1);
		lru.set(2, new Node(2));
		expect(evicted).toEqual([1]);
		expect(lru.peek(2)?.id).toBe(2);
		expect(lru.get(1)).toBeUndefined();
	});

	it("peek does not give a second chance", () => {
		const { lru, evicted } = cache(2);
		lru.set(1, new Node(1));
		lru.set(2, new Node(2));
		expect(lru.peek(1)?.id).toBe(1);
		lru.set(3, new Node(3));
		expect(evicted).toEqual([1]);
	});

	it("replaces a key without evicting, and delete/clear do not call onEvict", () => {
		const { lru, evicted } = cache(2);
		lru.set(1, new Node(1));
		lru.set(2, new Node(2));
		const again = new Node(1);
		lru.set(1, again);
		expect(lru.peek(1)).toBe(again);
		expect(lru.size).toBe(2);
		expect(lru.delete(2)).toBe(true);
		expect(lru.delete(2)).toBe(false);
		lru.clear();
		expect(lru.size).toBe(0);
		expect(evicted).toEqual([]);
		// Values cleared out can be queued again.
		lru.set(1, again);
		lru.set(3, new Node(3));
		lru.set(4, new Node(4));
		expect(evicted).toEqual([1]);
	});

	it("rejects a size below 1", () => {
		expect(() => cache(0)).toThrow(RangeError);
	});
});
