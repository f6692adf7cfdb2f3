// Type-checks every ```ts block of every README.md (and CONTRIBUTING.md) in the repository with
// tsc under @vvm/tsconfig/app.json (strict, exactOptionalPropertyTypes, noUncheckedIndexedAccess),
// each block on its own as an ES module: what a user copies must compile as it stands.
//
// A block that cannot stand alone (an excerpt of a larger file) is marked on the line just before
// its fence, with the reason, which this check prints on every run:
//
//   <!-- readme-check: skip: <reason> -->
//
// Errors are reported at the README's own path and line.
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "../..");
const out = join(here, ".blocks");
const SKIP = /^<!--\s*readme-check:\s*skip:\s*(.+?)\s*-->$/;
const FENCE = /^\s*```(ts|typescript)\b/;
const IGNORED_DIRS = new Set([".git", "node_modules", "dist", ".tools", ".servers", ".turbo"]);

function* markdownFiles(dir) {
	for (const entry of readdirSync(dir, { withFileTypes: true })) {
		if (entry.isDirectory()) {
			if (!IGNORED_DIRS.has(entry.name)) yield* markdownFiles(join(dir, entry.name));
		} else if (entry.name === "README.md" || (dir === root && entry.name === "CONTRIBUTING.md")) {
			yield join(dir, entry.name);
		}
	}
}

/** Every ts block of one file: its first code line (1-based), its code, and a skip reason. */
function blocks(file) {
	const lines = readFileSync(file, "utf8").split("\n");
	const found = [];
	for (let i = 0; i < lines.length; i++) {
		if (!FENCE.test(lines[i])) continue;
		const end = lines.findIndex((l, j) => j > i && /^\s*```\s*$/.test(l));
		if (end === -1) throw new Error(`${relative(root, file)}:${i + 1}: unterminated code block`);
		const skip = (lines[i - 1] ?? "").trim().match(SKIP)?.[1];
		found.push({ line: i + 2, code: lines.slice(i + 1, end).join("\n"), skip });
		i = end;
	}
	return found;
}

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const origin = new Map(); // generated file -> { readme, line }
const skipped = [];
let readmes = 0;
for (const file of markdownFiles(root)) {
	const readme = relative(root, file);
	const found = blocks(file);
	if (found.length > 0) readmes++;
	for (const block of found) {
		if (block.skip !== undefined) {
			skipped.push(`${readme}:${block.line}: ${block.skip}`);
			continue;
		}
		const name = `${readme.replaceAll("/", "__").replace(/\.md$/, "")}__L${block.line}.ts`;
		// `export {}` keeps a block without imports a module (top-level await, no global clashes).
		writeFileSync(join(out, name), `${block.code}\nexport {};\n`);
		origin.set(name, { readme, line: block.line });
	}
}

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
const result = spawnSync(process.execPath, [tsc, "-p", here, "--noEmit", "--pretty", "false"], {
	cwd: here,
	encoding: "utf8",
});
const errors = `${result.stdout}${result.stderr}`
	.split("\n")
	.filter((l) => l.trim() !== "")
	.map((l) => {
		const m = l.match(/^\.blocks\/(.+?\.ts)\((\d+),(\d+)\): (.*)$/);
		const at = m && origin.get(m[1]);
		return at ? `${at.readme}:${at.line + Number(m[2]) - 1}:${m[3]}: ${m[4]}` : l;
	});
for (const s of skipped) console.log(`readme-check: skipped ${s}`);
if (result.status !== 0) {
	console.error(errors.join("\n"));
	console.error(`readme-check: ${errors.length} error line(s) in README code blocks`);
	process.exit(1);
}
console.log(
	`readme-check: ${origin.size} TypeScript block(s) in ${readmes} file(s) compile under tsc --strict (${skipped.length} skipped)`,
);
