// The GPU locks' folder as the sandbox is given it (sandbox.ts, allowLocks): a root runner keeps
// it root's, with its GPU's lock file of root's, as the app's local backend prepares it for the
// runners of every uid, so no job's sandbox user can remove or replace the lock files the other
// jobs' sandboxes lock, and the app and a root CLI preparing it at once leave it the same.
import { chown, mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { gpuLockFiles, gpuLockName } from "../../../src/process/gpu-locks.js";
import { allowLocks } from "../../../runner/src/sandbox/sandbox.js";
import { prepareGpuLocks } from "../../../src/app/dispatch/runner-access.js";

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

  it("makes a new folder root's, with its GPU's lock file, never the sandbox user's", async () => {
    const fresh = join(dir, "locks");
    await allowLocks(fresh, "1");
    const folder = await stat(fresh);
    expect(folder.uid).toBe(0);
    expect(folder.mode & 0o7777).toBe(0o755);
    expect((await stat(join(fresh, "gpu-1.lock"))).uid).toBe(0);
  });

  it("takes back a folder the sandbox's user was given (an older run gave it so)", async () => {
    const given = join(dir, "locks");
    await mkdir(given, { mode: 0o700 });
    await chown(given, 60999, 60999);
    await allowLocks(given);
    const folder = await stat(given);
    expect([folder.uid, folder.mode & 0o7777]).toEqual([0, 0o755]);
    expect((await stat(join(given, "gpu-0.lock"))).uid).toBe(0);
  });

  it("leaves the folder the same whether the app or a root CLI on another GPU prepares it first, or both at once", async () => {
    // on two H200s: the app (EVOKERNEL_GPUS=1) and a CLI on GPU 1 started together; the CLI
    // found no gpu-0.lock yet, gave the folder to its sandbox's user, the app took it back,
    // and the CLI's sandbox could not make gpu-1.lock (exit 4 before the search)
    for (let round = 0; round < 20; round++) {
      const shared = join(dir, `locks-${String(round)}`);
      const both = [prepareGpuLocks(shared, 1), allowLocks(shared, "1")];
      await Promise.all(round % 2 === 0 ? both : both.reverse());
      const folder = await stat(shared);
      expect([folder.uid, folder.mode & 0o7777]).toEqual([0, 0o755]);
      for (const file of [...gpuLockFiles("0"), ...gpuLockFiles("1")]) {
        const lock = await stat(join(shared, file));
        expect([lock.uid, lock.mode & 0o7777]).toEqual([0, 0o644]);
      }
    }
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
