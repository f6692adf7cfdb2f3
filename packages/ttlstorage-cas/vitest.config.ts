import { defineVvmProject } from "@vvm/vitest-config";

const project = defineVvmProject(import.meta.url);

// vitest passes `ssr.resolve.conditions` to the test worker as `node --conditions ...`. The
// preset's list contains "import", so Node's own `require("long")` inside cassandra-driver (CJS)
// would load long's ESM build and fail (`Long.fromInt is not a function`). Keep only the
// conditions that are safe for `require`.
export default {
	...project,
	ssr: {
		...project.ssr,
		resolve: {
			...project.ssr?.resolve,
			conditions: ["@vvm/source", "node"],
		},
	},
};
