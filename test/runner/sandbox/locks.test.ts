// The GPU locks' folder as the sandbox is given it (sandbox.ts, allowLocks): one the app's
// local backend prepared for the runners of every uid (root's, a lock file of root's for each
// GPU) stays root's, so no job's sandbox user can remove or replace the lock files the other
// jobs' sandboxes lock; any other folder is the sandbox user's, as before.
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { gpuLockName } from "../../../src/process/gpu-locks.js";
import { allowLocks } from "../../../runner/src/sandbox/sandbox.js";

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-locks-"));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe.skipIf(process.getuid?.() !== 0)("allowLocks, for a root runner", () => {
  it("leaves a folder prepared for every uid root's", async () => {
    await writeFile(join(dir, "gpu-0.lock"), "", { mode: 0o644 });
    await allowLocks(dir);
    expect((await stat(dir)).uid).toBe(0);
  });

  it("makes the lock file of a GPU the app did not prepare, root's, as the app makes them", async () => {
    await writeFile(join(dir, "gpu-0.lock"), "", { mode: 0o644 });
    expect(existsSync(join(dir, "gpu-1.lock"))).toBe(false);
    await allowLocks(dir, "1,0");
    const made = await stat(join(dir, "gpu-1.lock"));
    expect(made.uid).toBe(0);
    expect(made.mode & 0o7777).toBe(0o644);
    await allowLocks(dir, "GPU-8f2e/11aa");
    expect(existsSync(join(dir, "gpu-GPU-8f2e_11aa.lock"))).toBe(true);
  });

  it("gives any other folder to the sandbox's user", async () => {
    const fresh = join(dir, "locks");
    await allowLocks(fresh);
    expect((await stat(fresh)).uid).toBe(Number(process.env["EVOKERNEL_SANDBOX_UID"] ?? 60999));
  });
});

describe("gpuLockName", () => {
  it("names the first GPU CUDA_VISIBLE_DEVICES lists, as gpulock.py does", () => {
    expect(gpuLockName(undefined)).toBe("0");
    expect(gpuLockName("")).toBe("0");
    expect(gpuLockName(" 3, 1")).toBe("3");
    expect(gpuLockName("GPU-8f2e.11aa")).toBe("GPU-8f2e_11aa");
  });
});
