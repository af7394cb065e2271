// A read-only folder inside a writable one (a task or candidates folder under the build cache
// or scratch) stays read-only inside the sandbox: binds go parents first whatever their mode.
// Bound before the writable folder around it, as the read-only binds all were, it was covered
// by that bind and writable.
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { pythonInvocation, runProcess } from "../../runner/src/harness/exec.js";
import { allowRead, mounts } from "../../runner/src/sandbox/sandbox.js";
import { skipWithoutPython } from "../helpers/python.js";

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-nested-binds-"));
});

afterEach(async () => {
  vi.unstubAllEnvs();
  await rm(dir, { recursive: true, force: true });
});

const WRITE =
  "import sys\ntry:\n    open(sys.argv[1], 'w').write('written')\n    print('wrote')\nexcept OSError as e:\n    print('refused', e.errno)\n";

describe("binds", () => {
  it("go parents first, read-only and writable together; what does not exist is left out", async () => {
    await mkdir(join(dir, "cache", "tasks"), { recursive: true });
    const order = mounts([
      ["--ro", join(dir, "cache", "tasks")],
      ["--ro", join(dir, "missing")],
      ["--rw", join(dir, "cache")],
      ["--ro", dir],
    ]);
    expect(order).toEqual([
      "--ro",
      dir,
      "--rw",
      join(dir, "cache"),
      "--ro",
      join(dir, "cache", "tasks"),
    ]);
  });
});

describe.skipIf(skipWithoutPython)("a read-only folder inside a writable one", () => {
  it("cannot be written inside the sandbox, while the writable folder around it can", async () => {
    const cache = join(dir, "cache");
    const tasks = join(cache, "tasks");
    await mkdir(tasks, { recursive: true });
    await writeFile(join(tasks, "reference.py"), "original\n");
    // writable by anyone (the sandbox's user included): only the bind can refuse the write
    await chmod(tasks, 0o777);
    await chmod(join(tasks, "reference.py"), 0o666);
    vi.stubEnv("EVOKERNEL_SANDBOX", "on");
    vi.stubEnv("EVOKERNEL_CACHE", cache);
    allowRead(tasks);
    const run = async (target: string) => {
      const invocation = await pythonInvocation(["-I", "-c", WRITE, target]);
      const ran = await runProcess(invocation.file, invocation.args, {
        env: invocation.env,
        cwd: invocation.cwd,
        timeoutMs: 120_000,
      });
      expect(ran.exitCode, ran.output).toBe(0);
      return ran.output.trim().split("\n").at(-1);
    };
    expect(await run(join(tasks, "reference.py"))).toMatch(/^refused/);
    expect(await readFile(join(tasks, "reference.py"), "utf8")).toBe("original\n");
    expect(await run(join(cache, "artifact.txt"))).toBe("wrote");
  });
});
