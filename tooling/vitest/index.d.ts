import type { UserWorkspaceConfig } from "vitest/config";
/** Shared vitest project preset: source condition, node environment, restoreMocks, no retries. */
export declare function defineVvmProject(
	configUrl: string,
	test?: UserWorkspaceConfig["test"],
): UserWorkspaceConfig;
