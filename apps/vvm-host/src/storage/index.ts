// The storages the host runs on (`--storage`). Adding a driver: its entry file beside these,
// listed here (and its package in the host's dependencies).
import type { Logger } from "pino";
import { casStorage } from "./cas.ts";
import { dynStorage } from "./dyn.ts";
import type { OpenedStorage, StorageEntry, StorageSettings } from "./entry.ts";
import { levelStorage } from "./level.ts";
import { memStorage } from "./mem.ts";
import { pgStorage } from "./pg.ts";
import { redisStorage } from "./redis.ts";

/** Every storage of `--storage`, the default first. */
export const STORAGES: readonly StorageEntry[] = [
	levelStorage,
	memStorage,
	casStorage,
	dynStorage,
	pgStorage,
	redisStorage,
];

/** The storage section of the host's configuration: the kind and its own settings. */
export interface StorageConfig {
	readonly kind: string;
	readonly settings: StorageSettings;
}

/**
 * Opens the configured storage. Drivers and their clients are imported lazily, one per kind, so
 * the host starts fast and a missing driver fails with a clear message. A stop request (`signal`)
 * is honoured at every network step.
 *
 * @example
 * ```ts
 * const opened = await openStorage(config.storage, signal);
 * ```
 */
export function openStorage(
	config: StorageConfig,
	signal?: AbortSignal,
	logger?: Logger,
): Promise<OpenedStorage> {
	const entry = STORAGES.find((s) => s.kind === config.kind);
	if (entry === undefined) throw new RangeError(`no storage "${config.kind}"`);
	return entry.open(config.settings, signal, logger);
}

export type { OpenedStorage } from "./entry.ts";
