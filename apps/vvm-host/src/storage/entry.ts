// What one storage of the host is: its flags, its driver's rules for them, and how it opens.
// A new driver is one entry (a file beside this one) listed in index.ts.
import type { TTLStorage } from "@vvm/ttlstorage";
import type { Logger } from "pino";
import type { OptionSpec } from "../options.ts";

/** An opened storage driver plus whatever the host created for it (client, database). */
export interface OpenedStorage {
	readonly driver: TTLStorage;
	/** Human-readable location, for the logs. */
	readonly location: string;
	/** Closes the driver and the client or database the host created. */
	close(): Promise<void>;
}

/** What a storage's defaults may depend on: how `@vvm/cp` runs over it. */
interface CpRun {
	readonly trustLevel: number;
	readonly pipelineDepth: number;
}

/** The settings of one storage, by its flags' keys. */
export type StorageSettings = Readonly<Record<string, unknown>>;

/** One storage the host can run on (`--storage <kind>`). */
export interface StorageEntry {
	readonly kind: string;
	/** What `--help` says of it after its name. */
	readonly summary: string;
	/**
	 * `--pipeline-depth` when none is given (1 when absent): above 1 only where it was measured
	 * faster (a driver that groups the writes of many commands in one fsync or one round trip).
	 */
	readonly defaultPipelineDepth?: number;
	/**
	 * Its settings with the defaults that depend on how the command processor runs (those measured
	 * fastest for that), given settings untouched; the host calls it once cp's settings are known.
	 */
	readonly tune?: (settings: StorageSettings, cp: CpRun) => StorageSettings;
	/** Its flags (`--<kind>-…`); their keys are the fields of its settings. */
	readonly options: readonly OptionSpec[];
	/**
	 * The driver's own rules over the settings (names, limits), before any I/O; `name` is how the
	 * user gave a setting (its flag or variable). Throws the driver's error.
	 */
	readonly check?: (settings: StorageSettings, name: (key: string) => string) => void;
	/**
	 * Opens the driver; every network step gives up at once when `signal` aborts. `logger` takes
	 * the driver's own lines (a failed background sweep), where it has any.
	 */
	readonly open: (
		settings: StorageSettings,
		signal?: AbortSignal,
		logger?: Logger,
	) => Promise<OpenedStorage>;
}

/** Opening the storage failed: the CLI prints the message and exits with code 1. */
export class StorageOpenError extends Error {
	override readonly name: string = "StorageOpenError";
	readonly code = "HOST_STORAGE_OPEN" as const;
}

/** Imports a driver or client lazily: a missing one is a clear error, not a crash at start. */
export async function load<T>(
	specifier: string,
	what: string,
	loader: () => Promise<T>,
): Promise<T> {
	try {
		return await loader();
	} catch (error) {
		throw new StorageOpenError(
			`${what}: cannot load ${specifier} (${error instanceof Error ? error.message : String(error)})`,
			{ cause: error },
		);
	}
}

/** An error's message with its cause's, for one log line. */
export const message = (error: unknown): string => {
	if (!(error instanceof Error)) return String(error);
	const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
	return `${error.message}${cause}`;
};

/**
 * Time one start-up request (a DynamoDB table check, a Redis or PostgreSQL connect) may take
 * before it fails.
 */
export const STARTUP_REQUEST_TIMEOUT_MS = 5_000;

/** How long a stop request waits for the undo of a start-up step before it goes on. */
const UNDO_WAIT_MS = 1_000;

/**
 * `promise`, or nothing once `ms` have passed (its outcome then ignored): a close of a client
 * whose connect hangs must not hold the stop or the failure it is part of.
 */
export async function within(promise: Promise<unknown>, ms: number = UNDO_WAIT_MS): Promise<void> {
	let timer: NodeJS.Timeout | undefined;
	try {
		await Promise.race([
			promise.catch(() => {}),
			new Promise<void>((resolve) => {
				timer = setTimeout(resolve, ms);
			}),
		]);
	} finally {
		clearTimeout(timer);
	}
}

/**
 * `work`, unless `signal` aborts first: then `undo` runs (waited for at most a second: it may
 * wait for the very request that hangs) and the abort reason is thrown.
 */
export async function untilStopped<T>(
	signal: AbortSignal | undefined,
	work: Promise<T>,
	undo: () => Promise<void>,
): Promise<T> {
	if (signal === undefined) return work;
	signal.throwIfAborted();
	let onAbort: () => void = () => {};
	const stopped = new Promise<never>((_, reject) => {
		onAbort = () => reject(signal.reason);
		signal.addEventListener("abort", onAbort, { once: true });
	});
	try {
		return await Promise.race([work, stopped]);
	} catch (error) {
		if (signal.aborted) {
			work.catch(() => {}); // settles after the undo; its outcome no longer matters
			await within(undo());
		}
		throw error;
	} finally {
		signal.removeEventListener("abort", onAbort);
	}
}
