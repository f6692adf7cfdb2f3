import { defineConfig } from "tsdown";

export default defineConfig({
	entry: { index: "src/index.ts", "testing/index": "src/testing/index.ts" },
	format: ["esm"],
	dts: true,
	platform: "node",
	fixedExtension: true,
	sourcemap: true,
	external: ["vitest"],
});
