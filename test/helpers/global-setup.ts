// Bundles the CLI once per test run, so CLI tests spawn what ships (dist/evokernel.mjs is
// built the same way) and never a stale build. At the end, fails the run where /dev/null is
// no longer the device it was at the start: a test that wrote a record "to" it, renamed over
// it as root, once broke every later process of another uid on the machine, and the failures
// showed up far from their cause.
import { statSync } from "node:fs";
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

const isDevice = (path: string) => {
  try {
    return statSync(path).isCharacterDevice();
  } catch {
    return false;
  }
};

export default async function setup(project: TestProject) {
  const devNullWasDevice = isDevice("/dev/null");
  const dir = await mkdtemp(join(tmpdir(), "evokernel-cli-"));
  // A local job's runner runs as a user of its own (src/app/dispatch/job-processes.ts): it
  // must read the bundle, as it reads dist/ beside an installed app.
  await chmod(dir, 0o755);
  project.provide("cliBundle", await bundleCli(join(dir, "evokernel.mjs")));
  return async function teardown() {
    await rm(dir, { recursive: true, force: true });
    if (devNullWasDevice && !isDevice("/dev/null"))
      throw new Error(
        "/dev/null is no longer a character device after the tests: one of them replaced it (a file renamed over it?). Restore it (rm /dev/null; mknod -m 666 /dev/null c 1 3) and find the test",
      );
  };
}
