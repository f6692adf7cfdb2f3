import { defineVvmProject } from "@vvm/vitest-config";

export default defineVvmProject(import.meta.url);
