// --cas-address-map: the nodes a Cassandra cluster reports are reached through the mapped
// addresses (NAT, or the chaos test's proxy per node). Parsing, and the translator the driver gets.
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { parseHostConfig } from "../src/config.ts";
import { addressTranslation } from "../src/storage/cas.ts";
import { hostConfig as config } from "./support/config.ts";
import { APP_DIR } from "./support/host-process.ts";

/** The settings of --storage cas from these flags and variables. */
const cas = (argv: string[], env: Record<string, string> = {}) =>
	config(["--storage", "cas", ...argv], env).storage.settings;

describe("--cas-address-map", () => {
	it("parses reported=connect pairs, from the flag or CASSANDRA_ADDRESS_MAP; empty by default", () => {
		expect(cas([]).addressMap).toEqual({});
		expect(
			cas(["--cas-address-map", "127.0.0.2:9042=127.0.0.1:19042, 127.0.0.3:9042=127.0.0.1:19043"])
				.addressMap,
		).toEqual({ "127.0.0.2:9042": "127.0.0.1:19042", "127.0.0.3:9042": "127.0.0.1:19043" });
		expect(cas([], { CASSANDRA_ADDRESS_MAP: "10.0.0.2:9042=127.0.0.1:1" }).addressMap).toEqual({
			"10.0.0.2:9042": "127.0.0.1:1",
		});
	});

	it.each(["127.0.0.2:9042", "127.0.0.2=127.0.0.1:1", "127.0.0.2:9042=127.0.0.1", "a:1=b:2=c:3"])(
		"rejects %j naming the flag",
		(raw) => {
			expect(() => parseHostConfig(["--cas-address-map", raw], {})).toThrow(
				/--cas-address-map must list reported=connect pairs of host:port/,
			);
		},
	);

	it("maps reported nodes and passes the others", async () => {
		class AddressTranslator {
			translate(address: string, port: number, callback: (endpoint: string) => void): void {
				callback(`${address}:${port}`);
			}
		}
		const translation = addressTranslation({ AddressTranslator } as never, {
			"127.0.0.3:9042": "127.0.0.1:19043",
		});
		const translator = translation.policies?.addressResolution;
		expect(translator).toBeInstanceOf(AddressTranslator);
		const translate = (address: string) =>
			new Promise<string>((resolve) => translator?.translate(address, 9042, resolve));
		expect(await translate("127.0.0.3")).toBe("127.0.0.1:19043");
		expect(await translate("127.0.0.4")).toBe("127.0.0.4:9042");
		expect(addressTranslation({ AddressTranslator } as never, {})).toEqual({});
	});

	it("the real driver accepts the translator and uses it for the nodes it discovers", () => {
		// In a child Node process: under this project's resolve conditions vitest cannot load the
		// driver's CommonJS dependency "long" (Long.fromInt), which the host never meets.
		const script = `
			import cassandra from "cassandra-driver";
			import { addressTranslation } from "./src/storage/cas.ts";
			const t = addressTranslation(cassandra.policies.addressResolution, { "127.0.0.3:9042": "127.0.0.1:19043" });
			const client = new cassandra.Client({ contactPoints: ["127.0.0.1:19042"], localDataCenter: "dc1", ...t });
			const cc = client.controlConnection;
			const row = { rpc_address: { toString: () => "127.0.0.3" }, peer: "127.0.0.3" };
			console.log(await cc.getAddressForPeerHost(row, 9042));
		`;
		const out = execFileSync(
			process.execPath,
			["--import", "tsx", "--conditions=@vvm/source", "--input-type=module", "-e", script],
			{ cwd: APP_DIR, encoding: "utf8" },
		);
		expect(out.trim()).toBe("127.0.0.1:19043");
	});
});
