// What a program that embeds the host needs (the CLI is src/cli.ts). Everything reusable beyond
// the host lives in the packages: placement in @vvm/appparts, commands in @vvm/cp.
export { ConfigError, type HostConfig, parseHostConfig } from "./config.ts";
export {
	EXIT,
	HOST_APP_ID,
	type HostHandle,
	type RunHostOptions,
	runHost,
	startHost,
} from "./host.ts";
