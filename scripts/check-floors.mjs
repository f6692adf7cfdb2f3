// The package map of ARCHITECTURE.md, checked: every @vvm dependency (runtime or peer) of a
// workspace package points to a lower floor, so no arrow runs up or sideways and no cycle exists
// between packages. Cycles inside a package are Biome's `noImportCycles` (type imports included).
// Run by `pnpm lint:workspace`.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const FLOORS = {
	"@vvm/clock": 0,
	"@vvm/log": 0,
	"@vvm/ttlstorage": 1,
	"@vvm/ttlstorage-mem": 2,
	"@vvm/ttlstorage-level": 2,
	"@vvm/ttlstorage-cas": 2,
	"@vvm/ttlstorage-dyn": 2,
	"@vvm/ttlstorage-pg": 2,
	"@vvm/ttlstorage-redis": 2,
	"@vvm/isequencer": 2,
	"@vvm/ielections": 2,
	"@vvm/seqstorage": 3,
	"@vvm/orch": 4,
	"@vvm/leases": 4,
	"@vvm/cp": 4,
	"@vvm/appparts": 5,
	"@vvm/vvm-host": 6,
	"@vvm/chaos": 7,
	// The conformance matrix (private): on top, so that nothing can depend on it.
	"@vvm/conformance": 8,
	// The write-path simulator (private): imports the chaos commands checker (floor 7).
	"@vvm/sim": 8,
	// The linearizability check of every driver (private): on top too.
	"@vvm/lincheck": 8,
};

const problems = [];

for (const dir of ["packages", "apps"]) {
	for (const name of readdirSync(dir)) {
		let manifest;
		try {
			manifest = JSON.parse(readFileSync(join(dir, name, "package.json"), "utf8"));
		} catch {
			continue;
		}
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
	`check-floors: every @vvm dependency of ${Object.keys(FLOORS).length} packages runs down`,
);
