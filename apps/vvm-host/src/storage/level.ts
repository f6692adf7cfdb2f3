// --storage level: the embedded default, a classic-level database in --data-dir.
import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { nonEmpty } from "../options.ts";
import type { StorageEntry } from "./entry.ts";
import { load, message, StorageOpenError } from "./entry.ts";

/** The level storage: `--data-dir`. */
export const levelStorage: StorageEntry = {
	kind: "level",
	summary: "embedded, on disk",
	options: [
		{
			key: "dataDir",
			flag: "data-dir",
			env: ["VVM_DATA_DIR"],
			def: "./.vvm-data",
			parse: nonEmpty,
			help: "level: directory of the database (created if missing; one process at a time)",
		},
	],
	async open(settings) {
		const [{ ClassicLevel }, { createLevelTTLStorage }] = await Promise.all([
			load("classic-level", "level storage", () => import("classic-level")),
			load("@vvm/ttlstorage-level", "level storage", () => import("@vvm/ttlstorage-level")),
		]);
		const dir = resolve(settings.dataDir as string);
		const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, {
			keyEncoding: "view",
			valueEncoding: "view",
		});
		try {
			await mkdir(dir, { recursive: true });
			await db.open();
		} catch (error) {
			await db.close().catch(() => {});
			throw new StorageOpenError(
				`level storage: cannot open ${dir}: ${message(error)}; is another vvm-host using this --data-dir?`,
				{ cause: error },
			);
		}
		const driver = createLevelTTLStorage({ db, ownsDb: true });
		return {
			driver,
			location: dir,
			close: async () => {
				await driver.close();
				if (db.status !== "closed") await db.close();
			},
		};
	},
};
