// One search over several GPUs (issue 38.1): which GPUs a run is given (--gpus, else
// CUDA_VISIBLE_DEVICES, else one), and the lanes: one fork server per GPU, each started with
// CUDA_VISIBLE_DEVICES=<that GPU> (so the harness's lock and its device 0 are that GPU), and
// a queue that hands the next piece of GPU work to the first free lane. Builds stay on the
// shared CPU pool. A piece of work runs with its lane in an AsyncLocalStorage, so the one
// runner the cascade is given sends each request to the fork server of the lane it holds.
//
// Timings taken on different GPUs are never compared: the search's screen times every
// candidate beside the kernel to beat in the same harness child, on its lane's GPU, and the
// search ranks and races on that ratio (the speedup), never on a time from another lane. Two
// GPUs of one model differing by a few percent (clocks, cooling) slow the candidate and the
// kernel beside it alike, so a candidate screened on a slower lane neither loses nor wins by
// it. One number crosses lanes: a race's ceilings (the kernel to beat's time over the floor,
// from the leader's screen), the most a candidate could still gain on configurations not yet
// timed; a lane a few percent slower than the leader's makes that bound a few percent tight
// for its candidates, against ceilings that already assume a kernel at the floor. The final
// checks (the kept kernel, the baseline, eager, torch.compile) run on lane 0 alone, as on
// one GPU.
import { AsyncLocalStorage } from "node:async_hooks";
import { HarnessError, ServerDownError, UsageError } from "../errors.js";
import type { HarnessOutcome, HarnessRunner } from "../harness/outcome.js";
import type { GpuQueue } from "./queue.js";

/** A GPU's id as CUDA_VISIBLE_DEVICES names it: an index, or a UUID (GPU-…, MIG-…). */
const GPU_ID = /^(?:\d+|(?:GPU|MIG)-[0-9A-Za-z-]+)$/;

/**
 * The GPUs a run is given, in lane order: `--gpus` (checked against CUDA_VISIBLE_DEVICES where
 * that is set: a GPU it hides cannot be used), else CUDA_VISIBLE_DEVICES, else null (one GPU,
 * the run as it always was).
 */
export function gpusOf(given: string | undefined, env: NodeJS.ProcessEnv): string[] | null {
  const visibleText = env["CUDA_VISIBLE_DEVICES"]?.trim();
  const visible = visibleText === undefined || visibleText === "" ? null : splitList(visibleText);
  if (given === undefined) return visible;
  const gpus = splitList(given);
  const bad = gpus.filter((gpu) => !GPU_ID.test(gpu));
  if (gpus.length === 0 || bad.length > 0 || gpus.some((gpu) => gpu === "")) {
    throw new UsageError(
      `--gpus is a comma-separated list of GPU indices or UUIDs (such as 0,1,3), not ${JSON.stringify(given)}`,
    );
  }
  const twice = gpus.find((gpu, index) => gpus.indexOf(gpu) !== index);
  if (twice !== undefined) {
    throw new UsageError(`--gpus names GPU ${twice} twice: each GPU is one lane`);
  }
  const hidden = visible === null ? [] : gpus.filter((gpu) => !visible.includes(gpu));
  if (visible !== null && hidden.length > 0) {
    throw new UsageError(
      `--gpus names ${hidden.join(", ")}, which CUDA_VISIBLE_DEVICES=${visibleText ?? ""} hides: ` +
        "name GPUs from that list, or leave --gpus out to use all of them",
    );
  }
  return gpus;
}

function splitList(text: string): string[] {
  return text.split(",").map((part) => part.trim());
}

/**
 * What one lane did over the search: the optimize result's search.lanes; `stopped`, where its
 * fork server died at every start and the lane was given up (its work went to the others).
 */
export type LaneUse = { gpu: string; evaluated: number; busySeconds: number; stopped?: string };

export type Lanes = {
  /** The GPU queue of the search: each piece of work on the first free lane. */
  gpu: GpuQueue;
  /** Lane 0's queue alone (the first lane still up, where lane 0 was given up): the final checks' timings. */
  first: GpuQueue;
  /**
   * The last free lane (lane 0 only when no other is free first): the final checks'
   * verification, beside their timing on lane 0. With one lane, lane 0's queue.
   */
  aside: GpuQueue;
  /** How many lanes (GPUs) there are. */
  count: number;
  /** A runner that sends each request to the fork server of the lane its work holds (lane 0 outside). */
  run: HarnessRunner;
  /**
   * Runs `work` (one candidate's evaluation) noting the lane its GPU work took; `lane` is that
   * lane's GPU, or null where it took none (it failed before the GPU).
   */
  noted<T>(work: () => Promise<T>): Promise<{ value: T; gpu: string | null }>;
  /** Evaluations and busy seconds per lane so far. */
  use(): LaneUse[];
};

type Waiter = {
  order: number;
  asked: number;
  lane: number | null;
  start: (lane: number) => void;
  fail: (error: Error) => void;
};

/**
 * Lanes over `runners` (lane i runs on gpus[i] through runners[i]).
 *
 * A lane whose fork server is not started again (it died at every start: a GPU gone, a lock it
 * cannot open; ServerDownError) is given up: its piece of work runs again, whole, on a lane still
 * up (its records from the dead lane were the infrastructure's failure, never the candidate's),
 * and no work is given to it after. Where every lane is given up the work fails with why. Before
 * this, the dead lane, free at once after each failed request, took most of the search's
 * candidates and failed each.
 */
export function createLanes(gpus: readonly string[], runners: readonly HarnessRunner[]): Lanes {
  if (gpus.length === 0 || gpus.length !== runners.length) {
    throw new RangeError("createLanes needs one runner per GPU");
  }
  const holding = new AsyncLocalStorage<number>();
  const noting = new AsyncLocalStorage<{ lane: number | null }>();
  const busy = gpus.map(() => false);
  const use: LaneUse[] = gpus.map((gpu) => ({ gpu, evaluated: 0, busySeconds: 0 }));
  const waiting: Waiter[] = [];
  let asked = 0;

  /** Whether a lane was given up (its use says why). */
  function down(lane: number): boolean {
    return use[lane]?.stopped !== undefined;
  }

  /** The first lane still up: lane 0 while it is. */
  function primary(): number {
    return use.findIndex((entry) => entry.stopped === undefined);
  }

  function allStopped(): HarnessError {
    const why = use.map((entry) => `GPU ${entry.gpu}: ${entry.stopped ?? "up"}`).join("; ");
    return new HarnessError(
      `every GPU's fork server stopped, so nothing can run on a GPU (${why})`,
    );
  }

  function free(lane: number): void {
    if (down(lane)) return; // given up: it stays taken
    busy[lane] = false;
    const at = waiting.findIndex((waiter) => waiter.lane === null || waiter.lane === lane);
    if (at === -1) return;
    const [waiter] = waiting.splice(at, 1);
    busy[lane] = true;
    waiter?.start(lane);
  }

  /** Gives a lane up: its waiters go to the first lane up (or fail), and free lanes take work. */
  function retire(lane: number, error: Error): void {
    const entry = use[lane];
    if (entry === undefined || entry.stopped !== undefined) return;
    entry.stopped = why(error);
    busy[lane] = true;
    const next = primary();
    if (next === -1) {
      for (const waiter of waiting.splice(0)) waiter.fail(allStopped());
      return;
    }
    for (const waiter of waiting) if (waiter.lane === lane) waiter.lane = next;
    busy.forEach((taken, other) => {
      if (!taken) free(other);
    });
  }

  function take(only: number | null, order: number | undefined, last = false): Promise<number> {
    if (primary() === -1) return Promise.reject(allStopped());
    const wanted = only === null || !down(only) ? only : primary();
    const lane = wanted ?? (last ? busy.lastIndexOf(false) : busy.indexOf(false));
    if (lane !== -1 && busy[lane] === false) {
      busy[lane] = true;
      return Promise.resolve(lane);
    }
    return new Promise((start, fail) => {
      const entry = { order: order ?? Infinity, asked: asked++, lane: wanted, start, fail };
      const at = waiting.findIndex(
        (other) =>
          other.order > entry.order || (other.order === entry.order && other.asked > entry.asked),
      );
      waiting.splice(at === -1 ? waiting.length : at, 0, entry);
    });
  }

  function queue(only: number | null, last = false): GpuQueue {
    return async <T>(work: () => Promise<T>, order?: number): Promise<T> => {
      for (;;) {
        const lane = await take(only, order, last);
        const note = noting.getStore();
        if (note !== undefined) note.lane = lane;
        const started = performance.now();
        let done: { value: T } | { error: unknown };
        try {
          done = { value: await holding.run(lane, work) };
        } catch (error) {
          done = { error };
        } finally {
          const entry = use[lane];
          if (entry !== undefined) entry.busySeconds += (performance.now() - started) / 1000;
          free(lane);
        }
        // the lane was given up under this work: the work again, whole, on a lane still up
        if (down(lane)) continue;
        if ("error" in done) throw done.error;
        return done.value;
      }
    };
  }

  return {
    gpu: queue(null),
    first: queue(0),
    aside: queue(null, true),
    count: gpus.length,
    run: async (command, timeoutMs): Promise<HarnessOutcome> => {
      const lane = holding.getStore() ?? Math.max(primary(), 0);
      const runner = runners[lane] ?? runners[0];
      if (runner === undefined) throw new RangeError("no lane");
      try {
        return await runner(command, timeoutMs);
      } catch (error) {
        if (error instanceof ServerDownError) retire(lane, error);
        throw error;
      }
    },
    async noted(work) {
      const note: { lane: number | null } = { lane: null };
      const value = await noting.run(note, work);
      const entry = note.lane === null ? undefined : use[note.lane];
      if (entry !== undefined) entry.evaluated += 1;
      return { value, gpu: entry?.gpu ?? null };
    },
    use: () => use.map((entry) => ({ ...entry, busySeconds: round(entry.busySeconds) })),
  };
}

/** Why a lane was given up, in one line: the error and the last line its server wrote. */
function why(error: Error): string {
  const log = error instanceof HarnessError ? error.log : "";
  const last = log
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .at(-1);
  const text = last === undefined ? error.message : `${error.message}: ${last}`;
  return text.length <= 400 ? text : `${text.slice(0, 399)}…`;
}

function round(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}
