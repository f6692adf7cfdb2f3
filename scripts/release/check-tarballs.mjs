// Checks what a registry actually serves for each published package, as a user would get it:
// fetches its tarball with `npm pack <name>@<version>`, and fails when
//   - its package.json still holds a `workspace:` or `catalog:` specifier anywhere,
//   - `publint --strict` reports anything,
//   - `attw --profile esm-only` reports anything.
//
//   node check-tarballs.mjs <registry-url> <work-dir> <name@version>...
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";

const [registry, dir, ...specs] = process.argv.slice(2);
if (registry === undefined || dir === undefined || specs.length === 0) {
	console.error("usage: check-tarballs.mjs <registry-url> <work-dir> <name@version>...");
	process.exit(2);
}
const bin = (name) => new URL(`../../node_modules/.bin/${name}`, import.meta.url).pathname;
mkdirSync(dir, { recursive: true });

/** Every `workspace:`/`catalog:` specifier left in a manifest, as "field.name: spec". */
function leftovers(manifest) {
	const found = [];
	const walk = (node, path) => {
		if (typeof node === "string") {
			if (/^(workspace|catalog):/.test(node)) found.push(`${path}: ${node}`);
		} else if (node !== null && typeof node === "object") {
			for (const [k, v] of Object.entries(node)) walk(v, path === "" ? k : `${path}.${k}`);
		}
	};
	walk(manifest, "");
	return found;
}

function run(cmd, args) {
	const r = spawnSync(cmd, args, { encoding: "utf8" });
	return { ok: r.status === 0, output: `${r.stdout}${r.stderr}`.trim() };
}

const problems = [];
for (const spec of specs) {
	const [{ filename }] = JSON.parse(
		execFileSync(
			"npm",
			["pack", spec, `--registry=${registry}`, `--pack-destination=${dir}`, "--json"],
			{
				encoding: "utf8",
				stdio: ["ignore", "pipe", "pipe"],
			},
		),
	);
	const tarball = join(dir, filename);
	const manifest = JSON.parse(
		execFileSync("tar", ["-xOzf", tarball, "package/package.json"], { encoding: "utf8" }),
	);
	const left = leftovers(manifest);
	const publint = run(bin("publint"), ["run", tarball, "--strict"]);
	const attw = run(bin("attw"), [tarball, "--profile", "esm-only", "--format", "ascii"]);
	const ok = left.length === 0 && publint.ok && attw.ok;
	console.log(
		`${ok ? "ok  " : "FAIL"} ${spec}: manifest ${left.length === 0 ? "clean" : `holds ${left.join(", ")}`}, publint --strict ${publint.ok ? "ok" : "FAILED"}, attw esm-only ${attw.ok ? "ok" : "FAILED"}`,
	);
	if (!publint.ok) console.log(publint.output);
	if (!attw.ok) console.log(attw.output);
	if (!ok) problems.push(spec);
	// The dependency ranges as published, for the log (and the lowest/newest test that uses them).
	for (const field of ["dependencies", "peerDependencies"]) {
		const deps = manifest[field] ?? {};
		if (Object.keys(deps).length > 0) console.log(`     ${field}: ${JSON.stringify(deps)}`);
	}
}
if (problems.length > 0) {
	console.error(
		`check-tarballs: ${problems.length} of ${specs.length} package(s) failed: ${problems.join(", ")}`,
	);
	process.exit(1);
}
console.log(
	`check-tarballs: ${specs.length} published package(s) clean (no workspace:/catalog:, publint --strict, attw esm-only)`,
);
