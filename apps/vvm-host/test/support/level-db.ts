// Opens a host's level database from a test, while no host process holds it.
import type { TTLStorage } from "@vvm/ttlstorage";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { ClassicLevel } from "classic-level";

/** Runs `use` on the level TTL storage of the database at `path`, then closes it. */
export async function withLevelStorage<T>(
	path: string,
	use: (driver: TTLStorage) => Promise<T>,
): Promise<T> {
	const db = new ClassicLevel<Uint8Array, Uint8Array>(path, {
		keyEncoding: "view",
		valueEncoding: "view",
	});
	const driver = createLevelTTLStorage({ db, ownsDb: true });
	try {
		return await use(driver);
	} finally {
		await driver.close();
	}
}
