// Bundles the CLI once per test run, so CLI tests spawn what ships (dist/evokernel.mjs is
// built the same way) and never a stale build.
import { mkdtemp, rm } from "node:fs/promises";
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
  project.provide("cliBundle", await bundleCli(join(dir, "evokernel.mjs")));
  return async function teardown() {
    await rm(dir, { recursive: true, force: true });
  };
}
