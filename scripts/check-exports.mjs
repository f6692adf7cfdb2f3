// After a build: every file named by a package's "exports" (outside the @vvm/source condition,
// which points at sources) and "bin" must exist, so a published package never points at nothing.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const dirs = ["packages", "apps"].flatMap((d) =>
	readdirSync(join(root, d), { withFileTypes: true })
		.filter((e) => e.isDirectory())
		.map((e) => join(root, d, e.name)),
);
const problems = [];
function targets(node, path) {
	if (typeof node === "string") return [[path, node]];
	if (node === null || typeof node !== "object") return [];
	return Object.entries(node).flatMap(([k, v]) =>
		k === "@vvm/source" ? [] : targets(v, `${path}.${k}`),
	);
}
for (const dir of dirs) {
	const pkgFile = join(dir, "package.json");
	if (!existsSync(pkgFile)) continue;
	const pkg = JSON.parse(readFileSync(pkgFile, "utf8"));
	const bins = typeof pkg.bin === "string" ? { bin: pkg.bin } : (pkg.bin ?? {});
	for (const [where, file] of [...targets(pkg.exports ?? {}, "exports"), ...Object.entries(bins)]) {
		if (!existsSync(join(dir, file)))
			problems.push(`${pkg.name}: ${where} -> ${file} does not exist`);
	}
}
if (problems.length > 0) {
	console.error(`check-exports: ${problems.length} missing target(s):\n  ${problems.join("\n  ")}`);
	process.exit(1);
}
console.log(`check-exports: every exports/bin target exists in ${dirs.length} packages`);
