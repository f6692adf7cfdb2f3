// The host's flags: what each one is (flag, variables, default, help) and the syntax of its
// value. The rules of a value belong to the package that owns it (cp, orch, leases, a driver):
// config.ts asks them once every flag is read, naming each value by the flag or variable it came
// from.

/** A bad flag or environment variable; the CLI prints `message` and exits with code 2. */
export class ConfigError extends Error {
	override readonly name: string = "ConfigError";
	readonly code = "HOST_BAD_CONFIG" as const;
}

/** One flag: where its value comes from and how its text is read. */
export interface OptionSpec {
	/** The field it sets in its section. */
	readonly key: string;
	readonly flag: string;
	/** Environment variables read when the flag is not given, in order. */
	readonly env: readonly string[];
	/** The default's text, parsed like a given value; `undefined`: no value. */
	readonly def: string | undefined;
	readonly help: string;
	readonly parse: (raw: string, source: string) => unknown;
}

/** An integer written in decimal digits; its range is the owning package's rule. */
export const integer = (raw: string, source: string): number => {
	const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
	if (!Number.isSafeInteger(n)) throw new ConfigError(`${source} must be an integer, got "${raw}"`);
	return n;
};

/** An integer in `min..max` (a rule of the host itself, such as a port). */
export const intIn =
	(min: number, max: number) =>
	(raw: string, source: string): number => {
		const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
		if (!Number.isSafeInteger(n) || n < min || n > max) {
			throw new ConfigError(`${source} must be an integer in ${min}..${max}, got "${raw}"`);
		}
		return n;
	};

export const nonEmpty = (raw: string, source: string): string => {
	if (raw.trim() === "") throw new ConfigError(`${source} must not be empty`);
	return raw.trim();
};

export const oneOf =
	(values: readonly string[]) =>
	(raw: string, source: string): string => {
		if (!values.includes(raw)) {
			throw new ConfigError(`${source} must be one of ${values.join(", ")}, got "${raw}"`);
		}
		return raw;
	};

/** Runs a package's validator; its error becomes a {@link ConfigError} without the package tag. */
export function ownedBy<T>(check: () => T): T {
	try {
		return check();
	} catch (error) {
		const text = error instanceof Error ? error.message : String(error);
		throw new ConfigError(text.replace(/^\[@vvm\/[a-z-]+\] /, ""));
	}
}

/**
 * `off` (read as 0) or an integer in `0..max`: a bound that 0 (or `off`) turns off, such as
 * `--max-event-loop-delay-ms`.
 */
export const offOrIntIn =
	(max: number) =>
	(raw: string, source: string): number => {
		if (raw.trim().toLowerCase() === "off") return 0;
		const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
		if (!Number.isSafeInteger(n) || n > max) {
			throw new ConfigError(
				`${source} must be an integer in 0..${max} (0 or "off" turns it off), got "${raw}"`,
			);
		}
		return n;
	};
