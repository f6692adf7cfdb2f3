// The host configuration of a command line, for tests (no --help or --version).
import type { HostConfig } from "../../src/config.ts";
import { parseHostConfig } from "../../src/config.ts";

/** Parses `argv` and `env` as the CLI does; throws on `--help`/`--version`. */
export function hostConfig(argv: string[], env: Record<string, string> = {}): HostConfig {
	const parsed = parseHostConfig(argv, env);
	if (parsed.help) throw new Error("unexpected help");
	return parsed.config;
}
