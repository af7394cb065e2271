// The CPU fork server (`serve --cpu`) runs every static check and build of a search in one
// sandbox, many at once. A Python candidate whose source names load_inline is imported by its
// build, so its code runs there: a process it detaches (setsid, a double fork) leaves its
// child's session, which the server ends with the child. Inside the sandbox the server kills
// any process outside a running child's session; the control shows the stray outliving its
// build without the sandbox, so the test fails without the protection.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { build, ForkServer } from "../../runner/src/harness/client.js";
import { startCpuServer } from "../../runner/src/harness/fork-server.js";
import { allowRead } from "../../runner/src/sandbox/sandbox.js";
import { beats, killStray, stopsBeating } from "../helpers/heartbeat.js";
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
  await rm(dir, { recursive: true, force: true, maxRetries: 5 });
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
                f.write(f"{os.getpid()} {time.time()}")
            time.sleep(0.1)
    os._exit(0)
`,
  );
  allowRead(join(dir, "candidates"));
  return file;
}

async function buildInServer(sandbox: "on" | "off"): Promise<void> {
  vi.stubEnv("EVOKERNEL_SANDBOX", sandbox);
  vi.stubEnv("EVOKERNEL_CACHE", join(dir, "cache"));
  const candidate = await strayCandidate();
  server = new ForkServer({ concurrent: true, start: startCpuServer });
  const record = await build(candidate, { runner: server.run });
  expect(record.format).toBe("py");
}

describe.skipIf(skipWithoutPython)("the CPU fork server's sandbox", () => {
  it("kills a process a build detached from its session, while the server stays up", async () => {
    await buildInServer("on");
    // the server stays up (a search's next builds would run there)
    expect(await stopsBeating(heartbeat())).toBe(true);
  });

  it("control: without the sandbox the detached process outlives its build", async () => {
    await buildInServer("off");
    const alive = await beats(heartbeat());
    await killStray(heartbeat()); // it outlives its build by design: stopped before cleanup
    expect(alive).toBe(true);
  });
});
