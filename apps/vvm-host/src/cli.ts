#!/usr/bin/env node
import { ConfigError, helpText, parseHostConfig } from "./config.ts";
import { EXIT, runHost } from "./host.ts";
import { REPAIR_LEASE_ROOT_COMMAND, runRepairLeaseRoot } from "./repair-lease-root.ts";
import { hostVersion } from "./version.ts";

/** `vvm-host <version> (Node.js <version>)`. */
function versionText(): string {
	return `vvm-host ${hostVersion()} (Node.js ${process.version})`;
}

async function main(): Promise<number> {
	const argv = process.argv.slice(2);
	// `vvm-host repair-lease-root [options]`: the operator's lease-root repair, then exit.
	const repair = argv[0] === REPAIR_LEASE_ROOT_COMMAND;
	let parsed: ReturnType<typeof parseHostConfig>;
	try {
		parsed = parseHostConfig(repair ? argv.slice(1) : argv, process.env);
	} catch (error) {
		if (!(error instanceof ConfigError)) throw error;
		process.stderr.write(
			`vvm-host: bad configuration: ${error.message}\nRun vvm-host --help for the options (from the repository: npm run host -- --help).\n`,
		);
		return EXIT.BAD_CONFIG;
	}
	if (parsed.help) {
		process.stdout.write(`${parsed.show === "help" ? helpText() : versionText()}\n`);
		return EXIT.OK;
	}
	return repair ? runRepairLeaseRoot(parsed.config) : runHost(parsed.config);
}

main().then(
	// Exit right away: after a graceful shutdown the killer is still armed (seed 001).
	(code) => process.exit(code),
	(error: unknown) => {
		process.stderr.write(
			`vvm-host: unexpected failure: ${error instanceof Error ? error.stack : String(error)}\n`,
		);
		process.exit(EXIT.FAILURE);
	},
);
