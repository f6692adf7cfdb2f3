// Shared vitest preset for every package and app. Plain JS so the config loader needs no transpiling.
import { basename, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { defineProject } from "vitest/config";

/**
 * Resolve sibling workspace packages to their TypeScript sources (no build needed for tests).
 * vitest also hands these to Node as `--conditions` for external dependencies, where Node's own
 * `require` uses them: so nothing here may select an ESM build ("import", "module"), or CJS
 * libraries such as cassandra-driver would `require` ESM code and break.
 */
const conditions = ["@vvm/source", "node"];

/**
 * @param {string} configUrl `import.meta.url` of the package's vitest.config.ts
 * @param {import("vitest/config").UserWorkspaceConfig["test"]} [test] overrides
 */
export function defineVvmProject(configUrl, test = {}) {
	const dir = dirname(fileURLToPath(configUrl));
	return defineProject({
		resolve: { conditions },
		ssr: { resolve: { conditions, externalConditions: ["@vvm/source"] } },
		test: {
			name: basename(dir),
			root: dir,
			include: ["test/**/*.test.ts"],
			environment: "node",
			restoreMocks: true,
			testTimeout: 30_000,
			hookTimeout: 60_000,
			// No retries: a flaky election test is a bug to fix, not to hide.
			retry: 0,
			...test,
		},
	});
}
