import { defineVvmProject } from "@vvm/vitest-config";
import { defineConfig } from "vitest/config";

// One run over every package and app; each has its own vitest.config.ts (see tooling/vitest).
// The driver example runs here too, against the packages' sources (its own vitest.config.ts is a
// user's, for the published packages).
export default defineConfig({
	test: {
		projects: [
			"packages/*",
			"apps/*",
			defineVvmProject(
				new URL("examples/custom-ttl-storage/vitest.config.ts", import.meta.url).href,
				{
					name: "example-custom-ttl-storage",
				},
			),
		],
	},
});
