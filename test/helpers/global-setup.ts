// Bundles the CLI once per test run, so CLI tests spawn what ships (dist/evokernel.mjs is
// built the same way) and never a stale build.
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { bundleCli } from "../../scripts/bundle.mjs";

declare module "vitest" {
  export interface ProvidedContext {
    cliBundle: string;
  }
}

export default async function setup(project: TestProject) {
  const dir = await mkdtemp(join(tmpdir(), "evokernel-cli-"));
  // A local job's runner runs as a user of its own (src/app/dispatch/job-processes.ts): it
  // must read the bundle, as it reads dist/ beside an installed app.
  await chmod(dir, 0o755);
  project.provide("cliBundle", await bundleCli(join(dir, "evokernel.mjs")));
  return async function teardown() {
    await rm(dir, { recursive: true, force: true });
  };
}
