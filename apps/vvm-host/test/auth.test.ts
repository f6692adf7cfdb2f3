import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, exportSPKI, generateKeyPair, SignJWT } from "jose";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { AuthSettings } from "../src/http/auth.ts";
import { AuthConfigError, createAuthenticator, guardRoutes, JWT_CLAIMS } from "../src/http/auth.ts";
import type { HttpServer } from "../src/http/router.ts";
import { createRouteTable, startHttpServer } from "../src/http/router.ts";
import type { HostProcess } from "./support/host-process.ts";
import { killHard, spawnHost } from "./support/host-process.ts";

const WRITER = `${"w".repeat(12)}1001-only-writer-token`;
const ADMIN = `${"a".repeat(12)}operator-and-all-token`;

let dir = "";
const servers: HttpServer[] = [];
const hosts: HostProcess[] = [];
afterEach(async () => {
	for (const s of servers.splice(0)) await s.close();
});
afterAll(async () => {
	for (const h of hosts) killHard(h);
	if (dir !== "") await rm(dir, { recursive: true, force: true });
});

async function file(name: string, content: unknown): Promise<string> {
	if (dir === "") dir = await mkdtemp(join(tmpdir(), "vvm-auth-"));
	const path = join(dir, name);
	await writeFile(path, typeof content === "string" ? content : JSON.stringify(content));
	return path;
}

const tokensFile = () =>
	file("tokens.json", {
		tokens: [
			{ name: "writer", token: WRITER, workspaces: [1001] },
			{ name: "admin", token: ADMIN, workspaces: "*", operator: true },
		],
	});

/** A server with an API route and an operator route behind the authenticator of `settings`. */
async function serve(settings: AuthSettings): Promise<string> {
	const auth = await createAuthenticator(settings);
	expect(auth).toBeDefined();
	const table = createRouteTable([
		{ method: "*", path: "/api/v2/", prefix: true, handle: () => ({ status: 200, body: "api" }) },
		{ method: "GET", path: "/metrics", handle: () => ({ status: 200, body: "metrics" }) },
		{ method: "GET", path: "/healthz", handle: () => ({ status: 200, body: "ok" }) },
	]);
	const http = await startHttpServer(guardRoutes(table, auth), "127.0.0.1", 0);
	servers.push(http);
	return `http://127.0.0.1:${http.port}`;
}

const ws = (wsid: number) => `/api/v2/apps/vvm/demo/workspaces/${wsid}/docs/app1pkg.Customer`;

async function call(base: string, path: string, token?: string, method = "GET") {
	const r = await fetch(`${base}${path}`, {
		method,
		headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
		...(method === "POST" ? { body: '{"name":"Ada"}' } : {}),
	});
	const body = (await r.json()) as { code?: string; committed?: string; message?: string };
	return { status: r.status, body, challenge: r.headers.get("www-authenticate") };
}

describe("bearer tokens from a file", () => {
	it("answers 401 without a valid token, 403 outside the token's grant, and lets the grant through", async () => {
		const base = await serve({ tokensFile: await tokensFile() });
		const none = await call(base, ws(1001), undefined, "POST");
		expect(none).toMatchObject({
			status: 401,
			body: { code: "HOST_UNAUTHENTICATED", committed: "no" },
		});
		expect(none.challenge).toContain("Bearer");
		expect((await call(base, ws(1001), `${WRITER}x`, "POST")).status).toBe(401);
		expect((await call(base, ws(1001), WRITER.slice(0, -1), "POST")).status).toBe(401);
		expect((await call(base, ws(1001), WRITER, "POST")).status).toBe(200);
		const other = await call(base, ws(1002), WRITER, "POST");
		expect(other).toMatchObject({ status: 403, body: { code: "HOST_FORBIDDEN", committed: "no" } });
		expect(other.body.message).not.toContain(WRITER); // tokens are never echoed
		expect((await call(base, ws(1002), ADMIN, "POST")).status).toBe(200);
		// The workspace as the API parses it: percent-encoded digits are workspace 1002 too
		// (review of 3ce9ef5: the raw-path check let them through to any valid token).
		for (const path of [
			"/api/v2/apps/vvm/demo/workspaces/%31002/docs/app1pkg.Customer",
			"/api/v2/apps/vvm/demo/workspaces/100%32/docs/app1pkg.Customer",
		]) {
			expect(await call(base, path, WRITER, "POST")).toMatchObject({
				status: 403,
				body: { code: "HOST_FORBIDDEN" },
			});
		}
		expect(
			(
				await call(
					base,
					"/api/v2/apps/vvm/demo/workspaces/100%31/docs/app1pkg.Customer",
					WRITER,
					"POST",
				)
			).status,
		).toBe(200);
		// Operator routes: an operator token only; probes are open.
		expect((await call(base, "/metrics", WRITER)).status).toBe(403);
		expect((await call(base, "/metrics")).status).toBe(401);
		expect((await call(base, "/metrics", ADMIN)).status).toBe(200);
		expect((await call(base, "/healthz")).status).toBe(200);
		// Another scheme is no bearer token.
		const basic = await fetch(`${base}${ws(1001)}`, {
			headers: { authorization: `Basic ${WRITER}` },
		});
		expect(basic.status).toBe(401);
	});

	it.each([
		[{ tokens: [] }, "at least one token"],
		[{ tokens: [{ name: "a", token: "short" }] }, "at least 24 characters"],
		[{ tokens: [{ name: "a", token: WRITER, workspaces: [0] }] }, "workspaces must be"],
		[
			{
				tokens: [
					{ name: "a", token: WRITER },
					{ name: "a", token: ADMIN },
				],
			},
			"used twice",
		],
		["not json", "cannot read it as JSON"],
	])("refuses a bad tokens file %#, naming the flag and the problem", async (content, message) => {
		const path = await file("bad.json", content);
		const made = createAuthenticator({ tokensFile: path });
		await expect(made).rejects.toThrow(AuthConfigError);
		await expect(made).rejects.toThrow(message);
		await expect(made).rejects.toThrow("--auth-tokens-file");
	});
});

describe("JWT bearer tokens", () => {
	it("verifies by a JWKS file or a public key, with workspace and operator claims, exp, iss and aud", async () => {
		const { publicKey, privateKey } = await generateKeyPair("ES256");
		const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" };
		const sign = (claims: Record<string, unknown>, exp: string | number = "5m", iss = "vvm-test") =>
			new SignJWT(claims)
				.setProtectedHeader({ alg: "ES256", kid: "k1" })
				.setSubject("client-7")
				.setIssuer(iss)
				.setAudience("vvm")
				.setIssuedAt()
				.setExpirationTime(exp)
				.sign(privateKey);
		const only1001 = await sign({ [JWT_CLAIMS.workspaces]: [1001] });
		const operator = await sign({ [JWT_CLAIMS.workspaces]: "*", [JWT_CLAIMS.operator]: true });
		const expired = await sign(
			{ [JWT_CLAIMS.workspaces]: [1001] },
			Math.floor(Date.now() / 1000) - 60,
		);
		const wrongIssuer = await sign({ [JWT_CLAIMS.workspaces]: [1001] }, "5m", "someone-else");
		const other = await generateKeyPair("ES256");
		const forged = await new SignJWT({ [JWT_CLAIMS.workspaces]: "*" })
			.setProtectedHeader({ alg: "ES256", kid: "k1" })
			.setExpirationTime("5m")
			.sign(other.privateKey);
		const jwks = await file("jwks.json", { keys: [jwk] });
		const pem = await file("key.pem", await exportSPKI(publicKey));
		for (const settings of [
			{ jwksFile: jwks, jwtIssuer: "vvm-test", jwtAudience: "vvm" },
			{ jwtPublicKeyFile: pem, jwtIssuer: "vvm-test", jwtAudience: "vvm" },
		]) {
			const base = await serve(settings);
			expect((await call(base, ws(1001), only1001, "POST")).status).toBe(200);
			expect((await call(base, ws(1001), only1001, "POST")).status).toBe(200); // cached
			expect((await call(base, ws(1002), only1001, "POST")).status).toBe(403);
			expect((await call(base, "/metrics", only1001)).status).toBe(403);
			expect((await call(base, "/metrics", operator)).status).toBe(200);
			expect((await call(base, ws(1001), expired, "POST")).status).toBe(401);
			expect((await call(base, ws(1001), wrongIssuer, "POST")).status).toBe(401);
			expect((await call(base, ws(1001), forged, "POST")).status).toBe(401);
		}
	});
});

describe("the host with authentication", () => {
	it("listens on every interface with a tokens file and refuses an unauthenticated write (401); talks over loopback", async () => {
		const data = await mkdtemp(join(tmpdir(), "vvm-auth-host-"));
		const host = spawnHost("auth-open", [
			"--storage",
			"level",
			"--data-dir",
			data,
			"--http-port",
			"0",
			"--http-host",
			"0.0.0.0",
			"--auth-tokens-file",
			await tokensFile(),
		]);
		hosts.push(host);
		try {
			await host.waitFor((l) => l.event === "services-started");
			const base = `http://127.0.0.1:${await host.port()}`;
			expect((await fetch(`${base}/healthz`)).status).toBe(200);
			let status = 503;
			const until = Date.now() + 20_000;
			while (status === 503 && Date.now() < until) {
				status = (await call(base, ws(1001), WRITER, "POST")).status;
				if (status === 503) await new Promise((r) => setTimeout(r, 50)); // partition deploying
			}
			expect(status).toBe(201);
			expect((await call(base, ws(1001), undefined, "POST")).status).toBe(401);
			expect((await call(base, ws(1002), WRITER, "POST")).status).toBe(403);
			expect(JSON.stringify([host.lines, host.stderr])).not.toContain(WRITER);
		} finally {
			await rm(data, { recursive: true, force: true });
		}
	}, 60_000);
});
