import { describe, expect, it } from "vitest";
import { ConfigError, helpText, parseHostConfig } from "../src/config.ts";
import { hostConfig as config } from "./support/config.ts";

describe("parseHostConfig", () => {
	it("has the documented defaults", () => {
		expect(config([])).toMatchObject({
			storage: "level",
			dataDir: "./.vvm-data",
			leadershipSeconds: 20,
			acquireTimeoutMs: 120_000,
			acquireRetryMs: 1_000,
			numVVM: 1,
			address: undefined,
			httpHost: "127.0.0.1",
			httpPort: 8080,
			casContactPoints: ["127.0.0.1:9042"],
			dynEndpoint: undefined,
		});
	});

	it("reads environment variables and lets flags win", () => {
		const env = {
			VVM_STORAGE: "mem",
			VVM_HTTP_PORT: "9000",
			VVM_NUM: "3",
			DYNAMODB_ENDPOINT: "http://127.0.0.1:8000",
		};
		expect(config([], env)).toMatchObject({
			storage: "mem",
			httpPort: 9000,
			numVVM: 3,
			dynEndpoint: "http://127.0.0.1:8000",
		});
		expect(config(["--http-port", "0", "--storage=dyn"], env)).toMatchObject({
			storage: "dyn",
			httpPort: 0,
		});
		expect(config(["--cas-contact-points", "a:1, b:2"]).casContactPoints).toEqual(["a:1", "b:2"]);
	});

	it.each([
		[["--storage", "redis"], "--storage must be one of level, mem, cas, dyn"],
		[["--http-port", "70000"], "--http-port must be an integer in 0..65535"],
		[["--leadership-seconds", "0"], "--leadership-seconds must be an integer in 1..31536000"],
		[["--leadership-seconds", "2.5"], "--leadership-seconds must be an integer"],
		[["--num-vvm=-1"], "--num-vvm must be an integer"],
		[["--acquire-retry-ms", "0"], "--acquire-retry-ms must be an integer in 1.."],
		[["--dyn-endpoint", "localhost:8000"], "--dyn-endpoint must be an http(s) URL"],
		[["--cas-keyspace", "bad-name"], "--cas-keyspace must match ^[a-z][a-z0-9_]{0,47}$"],
		[["--cas-keyspace", "Vvm"], "--cas-keyspace must match ^[a-z][a-z0-9_]{0,47}$"],
		[["--address", " "], "--address must not be empty"],
		[["--nope"], "Unknown option '--nope'"],
		[["extra"], "Unexpected argument 'extra'"],
	])("rejects %j naming the flag", (argv, message) => {
		expect(() => parseHostConfig(argv, {})).toThrow(ConfigError);
		expect(() => parseHostConfig(argv, {})).toThrow(message);
	});

	it("names the environment variable when the bad value came from it", () => {
		expect(() => parseHostConfig([], { VVM_LEADERSHIP_SECONDS: "ten" })).toThrow(
			'VVM_LEADERSHIP_SECONDS must be an integer in 1..31536000, got "ten"',
		);
	});

	it("--help lists every flag with its variable and default", () => {
		expect(parseHostConfig(["--help"], {})).toEqual({ help: true, show: "help" });
		expect(parseHostConfig(["-h"], {})).toEqual({ help: true, show: "help" });
		expect(parseHostConfig(["--version"], {})).toEqual({ help: true, show: "version" });
		expect(parseHostConfig(["-V"], {})).toEqual({ help: true, show: "version" });
		const text = helpText();
		for (const flag of [
			"--storage",
			"--data-dir",
			"--leadership-seconds",
			"--acquire-timeout-ms",
			"--num-vvm",
			"--address",
			"--http-port",
			"--dyn-endpoint",
			"--cas-contact-points",
		]) {
			expect(text).toContain(flag);
		}
		expect(text).toContain("VVM_LEADERSHIP_SECONDS");
		expect(text).toContain("Exit codes");
	});
});
