import { defineConfig } from "tsdown";

export default defineConfig({
	entry: { index: "src/index.ts" },
	format: ["esm"],
	dts: true,
	platform: "node",
	fixedExtension: true,
	sourcemap: true,
});
