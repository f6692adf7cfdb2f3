import { defineConfig } from "vitest/config";

// One run over every package and app; each has its own vitest.config.ts (see tooling/vitest).
export default defineConfig({
	test: {
		projects: ["packages/*", "apps/*", "tooling/chaos"],
	},
});
