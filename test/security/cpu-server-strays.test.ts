// The CPU fork server (`serve --cpu`) runs every static check and build of a search in one
// sandbox, many at once. A Python candidate whose source names load_inline is imported by its
// build, so its code runs there: a process it detaches (setsid, a double fork) leaves its
// child's session, which the server ends with the child. Inside the sandbox the server kills
// any process outside a running child's session; the control shows the stray outliving its
// build without the sandbox, so the test fails without the protection.
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { build, ForkServer } from "../../runner/src/harness/client.js";
import { startCpuServer } from "../../runner/src/harness/fork-server.js";
import { allowRead } from "../../runner/src/sandbox/sandbox.js";
import { skipWithoutPython } from "../helpers/python.js";

let dir: string;
let server: ForkServer | undefined;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-cpu-strays-"));
});

afterEach(async () => {
  await server?.close();
  server = undefined;
  vi.unstubAllEnvs();
  await rm(dir, { recursive: true, force: true });
});

const heartbeat = () => join(dir, "cache", "stray-heartbeat");

/** A candidate that detaches a process at import, writing a heartbeat for a minute. */
async function strayCandidate(): Promise<string> {
  const file = join(dir, "candidates", "stray.py");
  await import("node:fs/promises").then((fs) => fs.mkdir(join(dir, "candidates")));
  await writeFile(
    file,
    `# names load_inline, so its build imports it
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(600):
            with open(${JSON.stringify(heartbeat())}, "w") as f:
                f.write(str(time.time()))
            time.sleep(0.1)
    os._exit(0)
`,
  );
  allowRead(join(dir, "candidates"));
  return file;
}

async function beats(): Promise<boolean> {
  const first = await stat(heartbeat()).catch(() => null);
  await new Promise((done) => setTimeout(done, 1500));
  const second = await stat(heartbeat()).catch(() => null);
  return first !== null && second !== null && second.mtimeMs > first.mtimeMs;
}

async function buildInServer(sandbox: "on" | "off"): Promise<void> {
  vi.stubEnv("EVOKERNEL_SANDBOX", sandbox);
  vi.stubEnv("EVOKERNEL_CACHE", join(dir, "cache"));
  const candidate = await strayCandidate();
  server = new ForkServer({ concurrent: true, start: startCpuServer });
  const record = await build(candidate, { runner: server.run });
  expect(record.format).toBe("py");
  // the server stays up (a search's next builds would run there)
  await new Promise((done) => setTimeout(done, 600));
}

describe.skipIf(skipWithoutPython)("the CPU fork server's sandbox", () => {
  it("kills a process a build detached from its session, while the server stays up", async () => {
    await buildInServer("on");
    expect(await beats()).toBe(false);
  });

  it("control: without the sandbox the detached process outlives its build", async () => {
    await buildInServer("off");
    expect(await beats()).toBe(true);
  });
});
