// What the candidates of a run share on this machine, and their defaults, in one place: the
// build pool (builds in parallel, one per core, the same content built once: pool.ts), the
// GPU queue (one piece of GPU work at a time: gpu/queue.ts) and the limit on static checks
// (one per core). The session (pipeline/session.ts) owns the fork server. A command makes one
// set and hands it to every evaluation it starts; a call given none makes its own.
import { availableParallelism } from "node:os";
import { createBuildPool, type BuildPool } from "./pool.js";
import { createGpuQueue, type GpuQueue } from "../gpu/queue.js";
import { createLimit, type Limit } from "../util/limit.js";

export type Resources = {
  pool: BuildPool;
  gpu: GpuQueue;
  /** Static checks in flight at once. */
  cpu: Limit;
};

/** The resources given, and the defaults for those not given. */
export function createResources(given: Partial<Resources> = {}): Resources {
  return {
    pool: given.pool ?? createBuildPool({ concurrency: availableParallelism() }),
    gpu: given.gpu ?? createGpuQueue(),
    cpu: given.cpu ?? createLimit(availableParallelism()),
  };
}
