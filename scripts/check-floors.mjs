// The package map of ARCHITECTURE.md, checked: every @vvm dependency (runtime or peer) of a
// workspace package points to a lower floor, so no arrow runs up or sideways and no cycle exists
// between packages; and no relative import cycle inside a package's src (type imports count: a
// cycle of types is still two modules that cannot be understood one without the other).
// Run by `pnpm lint:workspace`.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

const FLOORS = {
	"@vvm/clock": 0,
	"@vvm/log": 0,
	"@vvm/ttlstorage": 1,
	"@vvm/ttlstorage-mem": 2,
	"@vvm/ttlstorage-level": 2,
	"@vvm/ttlstorage-cas": 2,
	"@vvm/ttlstorage-dyn": 2,
	"@vvm/isequencer": 2,
	"@vvm/ielections": 2,
	"@vvm/seqstorage": 3,
	"@vvm/orch": 4,
	"@vvm/leases": 4,
	"@vvm/cp": 4,
	"@vvm/appparts": 5,
	"@vvm/vvm-host": 6,
	"@vvm/chaos": 7,
};

const problems = [];

/** Relative imports of every .ts file under `dir`, keyed by path. */
function importGraph(dir) {
	const graph = new Map();
	const walk = (d) => {
		for (const name of readdirSync(d)) {
			const path = join(d, name);
			if (statSync(path).isDirectory()) walk(path);
			else if (name.endsWith(".ts")) {
				const text = readFileSync(path, "utf8");
				const targets = [...text.matchAll(/from "(\.{1,2}\/[^"]+\.ts)"/g)].map((m) =>
					join(d, m[1]),
				);
				graph.set(path, targets);
			}
		}
	};
	walk(dir);
	return graph;
}

/** One import cycle of `graph`, or undefined. */
function findCycle(graph) {
	const state = new Map(); // 1: on the path, 2: done
	const path = [];
	const visit = (node) => {
		state.set(node, 1);
		path.push(node);
		for (const next of graph.get(node) ?? []) {
			if (state.get(next) === 1) return [...path.slice(path.indexOf(next)), next];
			if (state.get(next) === undefined) {
				const found = visit(next);
				if (found) return found;
			}
		}
		path.pop();
		state.set(node, 2);
		return undefined;
	};
	for (const node of graph.keys()) {
		if (state.get(node) === undefined) {
			const found = visit(node);
			if (found) return found;
		}
	}
	return undefined;
}
for (const dir of ["packages", "apps"]) {
	for (const name of readdirSync(dir)) {
		let manifest;
		try {
			manifest = JSON.parse(readFileSync(join(dir, name, "package.json"), "utf8"));
		} catch {
			continue;
		}
		let src;
		try {
			src = statSync(join(dir, name, "src")).isDirectory() ? join(dir, name, "src") : undefined;
		} catch {
			src = undefined;
		}
		const cycle = src === undefined ? undefined : findCycle(importGraph(src));
		if (cycle) problems.push(`${manifest.name}: import cycle ${cycle.join(" -> ")}`);
		const floor = FLOORS[manifest.name];
		if (floor === undefined) {
			problems.push(
				`${manifest.name} (${dir}/${name}) has no floor: add it to scripts/check-floors.mjs and ARCHITECTURE.md`,
			);
			continue;
		}
		const deps = { ...manifest.dependencies, ...manifest.peerDependencies };
		for (const dep of Object.keys(deps).filter((d) => d.startsWith("@vvm/"))) {
			const to = FLOORS[dep];
			if (to === undefined) continue; // tooling packages (configs)
			if (to >= floor)
				problems.push(
					`${manifest.name} (floor ${floor}) depends on ${dep} (floor ${to}): arrows run down`,
				);
		}
	}
}
if (problems.length > 0) {
	for (const p of problems) console.error(`check-floors: ${p}`);
	process.exit(1);
}
console.log(
	`check-floors: every @vvm dependency of ${Object.keys(FLOORS).length} packages runs down; no import cycle in any src`,
);
