/**
 * One log method: a structured object first, then an optional message, as pino, bunyan and
 * `console` take them.
 */
export type LogMethod = (fields: object, message?: string) => void;

/**
 * What every package of the toolkit logs through: any pino-compatible object (a pino `Logger`,
 * a child logger, `console`, or your own). Libraries log nothing unless given one.
 *
 * @example
 * ```ts
 * import { pino } from "pino";
 * const logger: Logger = pino();
 * createLevelTTLStorage({ db, logger });
 * ```
 */
export interface Logger {
	readonly error: LogMethod;
	readonly warn: LogMethod;
	readonly info: LogMethod;
	readonly debug: LogMethod;
}

const ignore: LogMethod = () => {};

/**
 * The default of every `logger` option: logs nothing (library code never writes to the console
 * by itself).
 *
 * @example
 * ```ts
 * const log = options.logger ?? silentLogger;
 * ```
 */
export const silentLogger: Logger = Object.freeze({
	error: ignore,
	warn: ignore,
	info: ignore,
	debug: ignore,
});

/**
 * The logger a library uses: `logger` (or {@link silentLogger}), with every call guarded so a
 * logger that throws can never break the caller (a failed renewal must not become a crash
 * because a log transport failed). `bindings` are merged into every line (pino's `child`, when
 * the logger has one; otherwise added to the fields).
 *
 * @example
 * ```ts
 * const log = libraryLogger(options.logger, { pkg: "@vvm/isequencer" });
 * log.warn({ operation: "readNumbers", err }, "storage failed, retrying");
 * ```
 */
export function libraryLogger(logger: Logger | undefined, bindings: object = {}): Logger {
	if (logger === undefined || logger === silentLogger) return silentLogger;
	const withChild = logger as Logger & { child?: (b: object) => Logger };
	let target: Logger = logger;
	let extra: object = bindings;
	if (typeof withChild.child === "function" && Object.keys(bindings).length > 0) {
		try {
			target = withChild.child(bindings);
			extra = {};
		} catch {
			// a broken child(): keep the fields on every line instead
		}
	}
	const guard =
		(level: keyof Logger): LogMethod =>
		(fields, message) => {
			try {
				target[level]({ ...extra, ...fields }, message);
			} catch {
				// A logger must never break the library (see above).
			}
		};
	return Object.freeze({
		error: guard("error"),
		warn: guard("warn"),
		info: guard("info"),
		debug: guard("debug"),
	});
}
