// Prints one closing line from vitest's JSON report: "tests: N passed, N failed, N skipped".
// Exits non-zero when the report is missing or no test ran, so a silent run never looks green.
import { readFileSync } from "node:fs";

const file = process.argv[2] ?? ".test-results/vitest.json";
let report;
try {
	report = JSON.parse(readFileSync(file, "utf8"));
} catch (error) {
	console.error(`test-summary: cannot read ${file}: ${error.message}`);
	process.exit(1);
}
const byProject = new Map();
for (const suite of report.testResults ?? []) {
	const project = suite.name.match(/\/(?:packages|apps|examples)\/([^/]+)\//)?.[1] ?? "root";
	const counts = byProject.get(project) ?? { passed: 0, failed: 0, skipped: 0 };
	for (const t of suite.assertionResults ?? []) {
		if (t.status === "passed") counts.passed++;
		else if (t.status === "failed") counts.failed++;
		else counts.skipped++;
	}
	byProject.set(project, counts);
}
console.log("\nTests per package:");
for (const [project, c] of [...byProject].sort()) {
	console.log(
		`  ${project.padEnd(20)} ${String(c.passed).padStart(4)} passed  ${c.failed} failed  ${c.skipped} skipped`,
	);
}
const passed = report.numPassedTests ?? 0;
const failed = report.numFailedTests ?? 0;
const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
if (passed === 0) {
	console.error("test-summary: no test ran");
	process.exit(1);
}
