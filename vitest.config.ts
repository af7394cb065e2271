import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    // Tests that start the harness wait on torch imports and CPU verification.
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
