// Builds candidates in parallel and never builds the same thing twice at once: identical
// source with identical defines and nvcc flags shares one build. Finished builds are cached
// by the harness (content-hashed), so the pool keeps only what is in flight. This bounds the
// build processes of one evokernel process (one per core); the cores of the machine are
// shared through the harness's compile slots (candidates/jobserver.py): every compiler
// process of every evokernel command on the machine holds one, and a second build of one
// content hash in another process waits for the first's artifact.
import { createHash } from "node:crypto";
import { availableParallelism } from "node:os";
import { extname, resolve } from "node:path";
import { build as harnessBuild, taskPath, type Defines, type TaskRef } from "../harness/client.js";
import type { BuildRecord } from "#shared/contract/records.js";
import { createLimit } from "../util/limit.js";
import { readBytes } from "../workspace/files.js";

/**
 * task: the task the candidate is built for, where the caller knows it: a Python candidate
 * whose ModelNew builds its extension when constructed is constructed in the build, off the
 * GPU lock (the harness's `build --task`).
 */
export type BuildFn = (
  candidate: string,
  defines: Defines,
  flags: readonly string[],
  task?: TaskRef,
) => Promise<BuildRecord>;

export type BuildPool = {
  build(
    candidate: string,
    defines?: Defines,
    flags?: readonly string[],
    task?: TaskRef,
  ): Promise<BuildRecord>;
};

export type BuildPoolOptions = {
  concurrency?: number;
  /** How one build runs; the harness's `build` by default. */
  build?: BuildFn;
};

export function createBuildPool(options: BuildPoolOptions = {}): BuildPool {
  const limit = createLimit(options.concurrency ?? availableParallelism());
  const run =
    options.build ??
    ((candidate, defines, flags, task) =>
      harnessBuild(candidate, { defines, flags, ...(task === undefined ? {} : { task }) }));
  const inFlight = new Map<string, Promise<BuildRecord>>();

  async function build(
    candidate: string,
    defines: Defines = {},
    flags: readonly string[] = [],
    task?: TaskRef,
  ): Promise<BuildRecord> {
    // a Python candidate built for a task is constructed with that task's init inputs: the
    // task is part of what makes two of its builds the same
    const forTask = task !== undefined && extname(candidate) === ".py" ? `\0${taskPath(task)}` : "";
    const key = (await buildKey(candidate, defines, flags)) + forTask;
    const running = inFlight.get(key);
    if (running !== undefined) return running;
    const started = limit(() => run(candidate, defines, flags, task)).finally(() =>
      inFlight.delete(key),
    );
    inFlight.set(key, started);
    return started;
  }

  return { build };
}

/** Source content, its kind of file, sorted defines and flags: what makes two builds the same. */
async function buildKey(
  candidate: string,
  defines: Defines,
  flags: readonly string[],
): Promise<string> {
  const source = await readBytes(candidate).catch(() => `missing:${resolve(candidate)}`);
  const sorted = Object.entries(defines).sort(([a], [b]) => a.localeCompare(b));
  return createHash("sha256")
    .update(source)
    .update(JSON.stringify([extname(candidate), sorted, [...flags].sort()]))
    .digest("hex");
}
