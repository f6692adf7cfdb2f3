// --storage level: the embedded default, a classic-level database in --data-dir; every write is
// fsynced before it is acknowledged unless --level-durability unsafe-no-sync.
import { mkdir, open, readdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { intIn, nonEmpty, oneOf } from "../options.ts";
import type { StorageEntry } from "./entry.ts";
import { load, message, StorageOpenError } from "./entry.ts";

/**
 * Makes what LevelDB's open wrote durable: every file of the database and its directory, fsynced
 * once. LevelDB 1.20 (in classic-level 3) never fsyncs the first MANIFEST of a new database, nor
 * the directory after pointing CURRENT at a new MANIFEST, so a power cut in a new database's first
 * seconds (before the OS writes it back on its own) can leave CURRENT naming an empty MANIFEST,
 * and the database refuses to open ("no meta-nextfile entry in descriptor"). A file that
 * LevelDB's compaction removes meanwhile is skipped, and so is LOCK (it holds no data).
 */
async function syncDatabaseFiles(dir: string): Promise<void> {
	const syncOne = async (path: string): Promise<void> => {
		let handle: Awaited<ReturnType<typeof open>>;
		try {
			handle = await open(path, "r");
		} catch (error) {
			if ((error as { code?: unknown }).code === "ENOENT") return;
			throw error;
		}
		try {
			await handle.sync();
		} finally {
			await handle.close();
		}
	};
	// Never LOCK: closing any descriptor of a file drops every fcntl lock this process holds on
	// it, LevelDB's included, and a second host could then open the same database.
	for (const entry of await readdir(dir, { withFileTypes: true }))
		if (entry.isFile() && entry.name !== "LOCK") await syncOne(join(dir, entry.name));
	await syncOne(dir);
}

/** The level storage: `--data-dir`. */
export const levelStorage: StorageEntry = {
	kind: "level",
	summary: "embedded, on disk",
	// One fsync covers the creates of every partition in flight: at 1 a partition's next create
	// waits for its predecessor's fsync (16 clients: 75 % of the unsynced host's rate, 92 % at 8).
	defaultPipelineDepth: 8,
	options: [
		{
			key: "dataDir",
			flag: "data-dir",
			env: ["VVM_DATA_DIR"],
			def: "./.vvm-data",
			parse: nonEmpty,
			help: "level: directory of the database (created if missing; one process at a time)",
		},
		{
			key: "durability",
			flag: "level-durability",
			env: ["VVM_LEVEL_DURABILITY"],
			def: "sync",
			parse: oneOf(["sync", "unsafe-no-sync"]),
			help: "level: sync (every write fsynced before it is acknowledged) or unsafe-no-sync (a machine crash or power cut can lose acknowledged commands; benchmarks and throwaway data only)",
		},
		{
			key: "writeBufferMib",
			flag: "level-write-buffer-mib",
			env: ["VVM_LEVEL_WRITE_BUFFER_MIB"],
			def: "64",
			parse: intIn(1, 1024),
			help: "level: LevelDB's write buffer (memtable), MiB, 1..1024: larger means fewer, larger compactions (64 served 16 % more creates/s than LevelDB's own 4) for memory (up to twice this) and a longer log replay at start after a crash",
		},
	],
	async open(settings, _signal, logger) {
		const [{ ClassicLevel }, { createLevelTTLStorage }] = await Promise.all([
			load("classic-level", "level storage", () => import("classic-level")),
			load("@vvm/ttlstorage-level", "level storage", () => import("@vvm/ttlstorage-level")),
		]);
		const dir = resolve(settings.dataDir as string);
		const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, {
			keyEncoding: "view",
			valueEncoding: "view",
			// LevelDB's 4 MiB default flushes and compacts every few thousand creates: CPU taken from
			// the event loop on a small machine.
			writeBufferSize: (settings.writeBufferMib as number) * 1024 * 1024,
		});
		const unsafeNoSync = settings.durability === "unsafe-no-sync";
		try {
			await mkdir(dir, { recursive: true });
			await db.open();
			if (!unsafeNoSync) await syncDatabaseFiles(dir);
		} catch (error) {
			await db.close().catch(() => {});
			throw new StorageOpenError(
				`level storage: cannot open ${dir}: ${message(error)}; is another vvm-host using this --data-dir?`,
				{ cause: error },
			);
		}
		const driver = createLevelTTLStorage({
			db,
			ownsDb: true,
			unsafeNoSync,
			...(logger === undefined ? {} : { logger }),
		});
		return {
			driver,
			// Said in the storage-open log line: a host that may lose acknowledged commands.
			location: unsafeNoSync
				? `${dir} (UNSAFE: writes not fsynced, --level-durability unsafe-no-sync)`
				: dir,
			close: async () => {
				await driver.close();
				if (db.status !== "closed") await db.close();
			},
		};
	},
};
