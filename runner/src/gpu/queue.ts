// GPU work (verification, timing) runs one piece at a time: two candidates on one GPU would
// disturb each other's timings and memory. Builds run beside it on the CPU.
import { createLimit, type Limit } from "../util/limit.js";

export type GpuQueue = Limit;

export function createGpuQueue(): GpuQueue {
  return createLimit(1);
}
