import { defineConfig } from "vitest/config";

// The runner imports src/ through package.json's "imports" (#shared/…): the tests run the
// TypeScript sources, as tsc checks them ("customConditions"), not the compiled dist/.
// (after it, Vite's own defaults for the server side)
const conditions = ["evokernel-source", "module", "node", "development|production"];

export default defineConfig({
  ssr: { resolve: { conditions } },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    // Hang guards, not speed limits: on a loaded 2-core CI machine a test that starts the
    // harness waits minutes for torch imports and CPU verification.
    testTimeout: 900_000,
    hookTimeout: 900_000,
  },
});
