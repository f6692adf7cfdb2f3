// --storage mem: this process's memory only (tests, demos, a lease cluster in one process).
import type { StorageEntry } from "./entry.ts";
import { load } from "./entry.ts";

/** The mem storage: no flags. */
export const memStorage: StorageEntry = {
	kind: "mem",
	summary: "this process only",
	options: [],
	async open() {
		const { createMemTTLStorage } = await load(
			"@vvm/ttlstorage-mem",
			"mem storage",
			() => import("@vvm/ttlstorage-mem"),
		);
		const driver = createMemTTLStorage();
		return { driver, location: "memory of this process", close: () => driver.close() };
	},
};
