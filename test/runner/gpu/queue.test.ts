// How many verifications a command runs at once (EVOKERNEL_GPU_SHARE, read as the harness's
// gpulock.share_limit reads it), and the GPU queue that lets them.
import { describe, expect, it } from "vitest";
import { EnvironmentError } from "../../../runner/src/errors.js";
import { createGpuQueue, gpuShare, verificationsAtOnce } from "../../../runner/src/gpu/queue.js";

describe("gpuShare", () => {
  it("is 2 unset or empty, the number set from 1 to 8, and refuses anything else", () => {
    expect(gpuShare({})).toBe(2);
    expect(gpuShare({ EVOKERNEL_GPU_SHARE: " " })).toBe(2);
    expect(gpuShare({ EVOKERNEL_GPU_SHARE: "1" })).toBe(1);
    expect(gpuShare({ EVOKERNEL_GPU_SHARE: "8" })).toBe(8);
    for (const bad of ["0", "9", "-1", "1.5", "two"]) {
      expect(() => gpuShare({ EVOKERNEL_GPU_SHARE: bad }), bad).toThrow(EnvironmentError);
    }
  });
});

describe("verificationsAtOnce", () => {
  it("shares a GPU among as many as there are candidates, never on the CPU or unlocked", () => {
    const env = { EVOKERNEL_GPU_SHARE: "3" };
    expect(verificationsAtOnce("cuda", 10, env)).toBe(3);
    expect(verificationsAtOnce("cuda", 2, env)).toBe(2);
    expect(verificationsAtOnce("cuda", 0, env)).toBe(1);
    expect(verificationsAtOnce("cpu", 10, env)).toBe(1);
    // with no lock, nothing would keep a timing in the same command alone
    expect(verificationsAtOnce("cuda", 10, { ...env, EVOKERNEL_GPU_LOCKS: "off" })).toBe(1);
    expect(verificationsAtOnce("cuda", 10, {})).toBe(2);
  });
});

describe("createGpuQueue", () => {
  it("runs one piece of GPU work at a time by default, and as many as it is given", async () => {
    for (const concurrency of [1, 2]) {
      const queue = createGpuQueue(concurrency === 1 ? undefined : concurrency);
      let running = 0;
      let most = 0;
      const gates: (() => void)[] = [];
      const work = () =>
        queue(async () => {
          running += 1;
          most = Math.max(most, running);
          await new Promise<void>((open) => gates.push(open));
          running -= 1;
        });
      const all = [work(), work(), work()];
      while (gates.length > 0 || running > 0) {
        await new Promise((tick) => setImmediate(tick));
        gates.shift()?.();
      }
      await Promise.all(all);
      expect(most).toBe(concurrency);
    }
  });
});
