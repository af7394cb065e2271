// Issue 16.1 and 16.3, through the CLI as a user or a job runs it, with the real harness on
// the CPU:
// - a pull request that adds `torch.py` and an `evokernel_harness/` package beside its task
//   (and runs the CLI from there) replaced PyTorch and the verifier: the harness now starts
//   isolated (-I, working folder in scratch, sys.path of its own), so neither is imported;
// - a process a task's code detaches (setsid, double fork) outlived its job and tampered with
//   the next one: inside the sandbox every process of a job dies with it.
// Each test fails without its protection (the second with EVOKERNEL_SANDBOX=off, shown by
// its control).
import { cp, mkdtemp, readFile, rm, writeFile, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repo, runCli } from "../helpers/cli.js";
import { beats, killStray, stopsBeating } from "../helpers/heartbeat.js";
import { skipWithoutPython } from "../helpers/python.js";

let dir: string;
let task: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-harness-start-"));
  task = join(dir, "pr", "small_relu");
  await cp(join(repo, "test", "fixtures", "tasks", "small_relu"), task, { recursive: true });
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true, maxRetries: 5 });
});

describe.skipIf(skipWithoutPython)("the harness's start, attacked from the PR's tree", () => {
  it("imports neither a torch.py nor an evokernel_harness/ that the PR puts beside its task", async () => {
    const forged = "raise SystemExit('FORGED: the PR replaced this module')\n";
    for (const where of [join(dir, "pr"), task]) {
      await writeFile(join(where, "torch.py"), forged);
      await mkdir(join(where, "evokernel_harness"), { recursive: true });
      await writeFile(join(where, "evokernel_harness", "__init__.py"), forged);
      await writeFile(join(where, "evokernel_harness", "__main__.py"), forged);
    }
    const run = await runCli(["tasks", "--probe", task], {
      cwd: join(dir, "pr"),
      env: { EVOKERNEL_CACHE: join(dir, "cache") },
    });
    expect(run.stderr).not.toContain("FORGED");
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toContain("ok (probed)");
  });

  const heartbeat = (cache: string) => join(cache, "stray-heartbeat");
  // The task's reference detaches a process at import that writes a heartbeat into the build
  // cache (a folder the sandbox may write and the host sees) for a minute.
  async function plantStray(cache: string): Promise<void> {
    const reference = join(task, "reference.py");
    const code = await readFile(reference, "utf8");
    await writeFile(
      reference,
      `import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(600):
            with open(${JSON.stringify(heartbeat(cache))}, "w") as f:
                f.write(f"{os.getpid()} {time.time()}")
            time.sleep(0.1)
    os._exit(0)
${code}`,
    );
  }

  it("a process the task's code detaches dies with the job inside the sandbox", async () => {
    const cache = join(dir, "cache");
    await plantStray(cache);
    const run = await runCli(["tasks", "--probe", task], { env: { EVOKERNEL_CACHE: cache } });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(await stopsBeating(heartbeat(cache))).toBe(true);
  });

  it("control: without the sandbox the detached process outlives the job", async () => {
    const cache = join(dir, "cache");
    await plantStray(cache);
    const run = await runCli(["tasks", "--probe", task], {
      env: { EVOKERNEL_CACHE: cache, EVOKERNEL_SANDBOX: "off" },
    });
    expect(run.exitCode, run.stderr).toBe(0);
    const alive = await beats(heartbeat(cache));
    await killStray(heartbeat(cache)); // it outlives the job by design: stopped before cleanup
    expect(alive).toBe(true);
  });
});
