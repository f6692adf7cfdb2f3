import { defineConfig } from "tsdown";

// The host bundles the @vvm/* workspace packages from their sources (the "@vvm/source"
// condition), so dist/ is self-contained and needs no prior build of the libraries; third-party
// dependencies stay external. Drivers are imported lazily and land in their own chunks.
export default defineConfig({
	entry: ["src/cli.ts", "src/index.ts", "src/launch.ts"],
	format: ["esm"],
	dts: false,
	platform: "node",
	sourcemap: true,
	outExtensions: () => ({ js: ".mjs" }),
	noExternal: [/^@vvm\//],
	inputOptions: { resolve: { conditionNames: ["@vvm/source", "import", "node", "default"] } },
});
