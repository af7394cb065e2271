// GPU work (verification, timing) waits its turn in one queue per command. Timings run one at a
// time: two on one GPU would disturb each other. Verifications may run side by side, up to
// EVOKERNEL_GPU_SHARE of them (the harness's GPU lock shares the GPU among verifications and
// gives every timing it alone: gpulock.py), each in a fork server of its own (ForkServers).
// Builds run beside it on the CPU.
import { MAX_GPU_SHARE } from "#process/gpu-locks.js";
import { EnvironmentError } from "../errors.js";
import { createLimit, type Limit } from "../util/limit.js";

export type GpuQueue = Limit;

/** A queue with `concurrency` pieces of GPU work in flight (one by default). */
export function createGpuQueue(concurrency = 1): GpuQueue {
  return createLimit(concurrency);
}

/**
 * How many verifications may share one GPU: EVOKERNEL_GPU_SHARE, default 2 (1 = one at a
 * time), as the harness reads it (gpulock.share_limit); a setting out of range is refused,
 * saying what to set.
 */
export function gpuShare(env: NodeJS.ProcessEnv = process.env): number {
  const raw = (env["EVOKERNEL_GPU_SHARE"] ?? "").trim();
  if (raw === "") return 2;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < 1 || value > MAX_GPU_SHARE) {
    throw new EnvironmentError(
      `EVOKERNEL_GPU_SHARE=${raw} is not a number of verifications from 1 (never share a GPU) to ${MAX_GPU_SHARE}`,
    );
  }
  return value;
}

/**
 * Verifications a command of `candidates` runs at once: on a GPU, EVOKERNEL_GPU_SHARE of them
 * (the harness lets them share it, and runs one that does not pass there again alone:
 * gpulock.py), each in a fork server of its own; on the CPU, for one candidate, or with the
 * GPU lock off (EVOKERNEL_GPU_LOCKS=off: nothing would keep a timing alone), one.
 */
export function verificationsAtOnce(
  device: "cuda" | "cpu",
  candidates: number,
  env: NodeJS.ProcessEnv = process.env,
): number {
  if (device !== "cuda" || env["EVOKERNEL_GPU_LOCKS"] === "off") return 1;
  return Math.max(1, Math.min(gpuShare(env), candidates));
}
