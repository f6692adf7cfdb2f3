// No data directory in the repository: a tracked LevelDB (an example's .data/, a host's
// .vvm-data/) makes the next run start from someone else's state and leaves `git status` dirty.
// Run by `pnpm lint:workspace`.
import { execFileSync } from "node:child_process";

const DATA = [
	/(^|\/)\.(data|vvm-data|servers|chaos)\//,
	/(^|\/)(LOCK|CURRENT|LOG|LOG\.old)$/,
	/(^|\/)MANIFEST-\d+$/,
	/\.ldb$/,
];
const tracked = execFileSync("git", ["ls-files", "-z"], { encoding: "utf8" }).split("\0");
const found = tracked.filter((path) => DATA.some((re) => re.test(path)));
if (found.length > 0) {
	for (const path of found) console.error(`check-tracked: a data file is tracked: ${path}`);
	console.error("check-tracked: remove it with git rm --cached and let .gitignore keep it out");
	process.exit(1);
}
