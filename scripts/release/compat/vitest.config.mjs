export default { test: { include: ["*.test.ts"], testTimeout: 60_000, hookTimeout: 60_000 } };
