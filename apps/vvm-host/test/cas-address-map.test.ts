// --cas-address-map: the nodes a Cassandra cluster reports are reached through the mapped
// addresses (NAT, or the chaos test's proxy per node). Parsing, and the translator the driver gets.
// Also the keyspace's replication as the start-up line reports it.
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { parseHostConfig } from "../src/config.ts";
import { addressTranslation, replicationNote } from "../src/storage/cas.ts";
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

describe("the keyspace's replication in the storage's start-up line", () => {
	const ks = "vvm";
	it("names the strategy and copies; no warning where the local data centre keeps min(3, its nodes) copies", () => {
		const simple1 = {
			class: "org.apache.cassandra.locator.SimpleStrategy",
			replication_factor: "1",
		};
		expect(replicationNote(simple1, "dc1", 1, ks)).toBe("SimpleStrategy RF 1");
		const nts3 = {
			class: "org.apache.cassandra.locator.NetworkTopologyStrategy",
			dc1: "3",
			dc2: "3",
		};
		expect(replicationNote(nts3, "dc1", 5, ks)).toBe("NetworkTopologyStrategy dc1=3,dc2=3");
		expect(replicationNote({ ...nts3, dc1: "2" }, "dc1", 2, ks)).toBe(
			"NetworkTopologyStrategy dc1=2,dc2=3",
		);
	});

	it("says UNSAFE, with the statement that fixes it, where a node's loss can lose acknowledged commands", () => {
		const simple1 = {
			class: "org.apache.cassandra.locator.SimpleStrategy",
			replication_factor: "1",
		};
		expect(replicationNote(simple1, "dc1", 3, ks)).toBe(
			"SimpleStrategy RF 1; UNSAFE: 1 copy in dc1 of 3 nodes, the loss of a node can lose acknowledged commands: ALTER KEYSPACE vvm WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3}, then nodetool repair vvm on every node",
		);
		// Copies only in another data centre: none here.
		const elsewhere = { class: "org.apache.cassandra.locator.NetworkTopologyStrategy", dc2: "3" };
		expect(replicationNote(elsewhere, "dc1", 2, ks)).toMatch(
			/^NetworkTopologyStrategy dc2=3; UNSAFE: 0 copies in dc1 of 2 nodes, .*'dc1': 2\}/,
		);
	});
});
