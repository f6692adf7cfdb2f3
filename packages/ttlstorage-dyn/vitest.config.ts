import { defineVvmProject } from "@vvm/vitest-config";

const preset = defineVvmProject(import.meta.url);

// The preset lists the "module" condition before "node"; the AWS SDK maps "module" to its
// bundler-only dist-es build (extensionless imports), which Node cannot load. Resolve as Node does.
const conditions = ["@vvm/source", "node", "import", "default"];

export default {
	...preset,
	resolve: { ...preset.resolve, conditions },
	ssr: { ...preset.ssr, resolve: { ...preset.ssr?.resolve, conditions } },
};
