// The status page rendered by a real headless Chromium (Debian's `chromium`, installed by
// scripts/test-packages.sh): a screenshot goes to .test-results/, and the DOM after the page's
// own script ran (--dump-dom with a virtual time budget) is asserted on.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import type { HostProcess } from "./support/host-process.ts";
import { APP_DIR, killHard, spawnHost } from "./support/host-process.ts";

const run = promisify(execFile);
const CHROMIUM = "/usr/bin/chromium";
const CI = process.env.CI === "true" || process.env.CI === "1";
let noChromium: false | string = false;
try {
	statSync(CHROMIUM);
} catch {
	if (CI)
		throw new Error(`${CHROMIUM} is missing: scripts/test-packages.sh installs Debian's chromium`);
	noChromium =
		"chromium is not installed (bash scripts/test-packages.sh, or apt-get install chromium)";
}

const spawned: HostProcess[] = [];
const profile = mkdtempSync(join(tmpdir(), "vvm-chromium-"));
afterAll(() => {
	for (const h of spawned) killHard(h);
	rmSync(profile, { recursive: true, force: true });
});

/** Headless Chromium as a closed network needs it: no background traffic, a fresh profile. */
async function chromium(args: string[]): Promise<string> {
	const { stdout } = await run(
		CHROMIUM,
		[
			"--headless",
			"--no-sandbox",
			"--disable-gpu",
			"--disable-quic",
			"--no-first-run",
			"--disable-background-networking",
			"--disable-component-update",
			"--disable-sync",
			`--user-data-dir=${profile}`,
			"--virtual-time-budget=3000",
			...args,
		],
		{ timeout: 60_000, maxBuffer: 10 * 1024 * 1024 },
	);
	return stdout;
}

/** The text of the first element with `data-testid="id"`, tags stripped. */
function byTestId(dom: string, id: string): string {
	const m = new RegExp(`data-testid="${id}"[^>]*>([\\s\\S]*?)</(span|tbody|div)>`).exec(dom);
	return (m?.[1] ?? "")
		.replace(/<[^>]+>/g, " ")
		.replace(/\s+/g, " ")
		.trim();
}

describe.skipIf(noChromium)("GET / status page in headless Chromium", () => {
	it("shows this host as leader of slot 1, its lease, and every slot's leader record", {
		timeout: 120_000,
	}, async () => {
		const host = spawnHost("status", [
			"--storage",
			"mem",
			"--http-port",
			"0",
			"--num-vvm",
			"2",
			"--leadership-seconds",
			"20",
		]);
		spawned.push(host);
		const acquired = await host.waitFor((l) => l.event === "acquired");
		await host.waitFor((l) => l.event === "services-started");
		const url = `http://127.0.0.1:${await host.port()}/`;

		const page = await fetch(url);
		expect(page.headers.get("content-type")).toContain("text/html");

		const results = resolve(APP_DIR, "../../.test-results");
		mkdirSync(results, { recursive: true });
		const shot = join(results, "status-page.png");
		await chromium([`--screenshot=${shot}`, "--window-size=1000,760", url]);
		expect(statSync(shot).size).toBeGreaterThan(5_000);
		console.info(`[status page] screenshot: ${shot}`);

		const dom = await chromium(["--dump-dom", url]);
		expect(byTestId(dom, "phase")).toBe("leader of slot 1");
		expect(byTestId(dom, "address")).toBe(acquired.address);
		expect(byTestId(dom, "pid")).toBe(String(host.pid));
		const leadership = byTestId(dom, "leadership");
		expect(leadership).toContain(`holder ${String(acquired.holder)}`);
		expect(leadership).toMatch(/lease time left \d+\.\d s/);
		expect(leadership).toContain(`fencing token ${String(acquired.fencingToken)}`);
		const slots = byTestId(dom, "slots");
		expect(slots).toMatch(new RegExp(`^1 ${String(acquired.holder)} \\d+ s 2 free`));
		expect(dom).toMatch(/data-testid="lease-bar" style="width: ?([1-9]\d?|100)%;?"/);
		expect(byTestId(dom, "fetch-error")).toBe("");
		host.child.kill("SIGTERM");
		expect((await host.exited).code).toBe(0);
	});
});
