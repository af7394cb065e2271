import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    // Hang guards, not speed limits: on a loaded 2-core CI machine a test that starts the
    // harness waits minutes for torch imports and CPU verification.
    testTimeout: 900_000,
    hookTimeout: 900_000,
  },
});
