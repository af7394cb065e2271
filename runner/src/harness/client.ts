// Calls into the harness: one function per harness command, each building the command's
// typed request (src/shared/contract/harness-request.ts) and returning the parsed record.
// Candidate-facing calls (static, build, verify, bench) turn every failure into a failed
// record; task and machine calls (inspect, device, ceilings) throw HarnessError.
import { extname, join, resolve } from "node:path";
import type { z } from "zod";
import { HarnessError } from "../errors.js";
import { cacheDir } from "../paths.js";
import { runHarness } from "./exec.js";
import {
  failedBench,
  failedBuild,
  failedStatic,
  failedVerify,
  type Failure,
} from "./failed-records.js";
import { failureOf, logTail, type HarnessOutcome, type HarnessRunner } from "./outcome.js";
import { sandboxMode, scratchFolder } from "../sandbox/sandbox.js";
import { sealBuild } from "./sealed.js";
import { parseRecordText } from "./records.js";
import {
  benchRecordSchema,
  buildRecordSchema,
  ceilingsSchema,
  deviceRecordSchema,
  staticContextSchema,
  staticRecordSchema,
  taskInfoSchema,
  verifyRecordSchema,
  type BenchRecord,
  type BuildRecord,
  type Ceilings,
  type Device,
  type DeviceRecord,
  type StaticContext,
  type StaticRecord,
  type TaskInfo,
  type VerifyRecord,
} from "#shared/contract/records.js";
import {
  EVALUATE_STAGES,
  type EvaluateStage,
  type HarnessCommand,
} from "#shared/contract/harness-request.js";
import { readText, removeAll } from "../workspace/files.js";
import type { Task } from "../tasks/schema.js";

export { ForkServer, type ForkServerOptions } from "./fork-server.js";
export type { HarnessOutcome, HarnessRunner } from "./outcome.js";

/**
 * The task a command works on: its path, or its path and, for a native task, its task.json as
 * the run read and checked it (`loadTarget`), which the request carries so that the harness
 * does not read the file again.
 */
export type TaskRef = string | { path: string; spec: Task | null };

export function taskPath(task: TaskRef): string {
  return typeof task === "string" ? task : task.path;
}

/** A request's task fields: the path, resolved, and the parsed task.json when the run has it. */
function taskFields(task: TaskRef): { task: string; taskSpec?: Record<string, unknown> } {
  const path = resolve(taskPath(task));
  return typeof task === "string" || task.spec === null
    ? { task: path }
    : { task: path, taskSpec: task.spec };
}

export type CallOptions = {
  /** Where the command runs: its own process (the default) or a ForkServer's `run`. */
  runner?: HarnessRunner;
  timeoutMs?: number;
};

/**
 * Runs each harness command in a process of its own: `python -m evokernel_harness request
 * JSON`, the typed request as one argument.
 */
export const directRunner: HarnessRunner = async function runDirect(request, timeoutMs) {
  const ended = await runHarness(["request", JSON.stringify(request)], { timeoutMs });
  return {
    exitCode: ended.exitCode,
    signal: ended.signal,
    timedOut: ended.timedOut,
    memKilled: false,
    seconds: ended.seconds,
    log: ended.output,
  };
};

type Called<T> = { record: T } | { failure: Failure; cause?: HarnessError };

/** A command that writes one record to its `out` (evaluate writes three). */
type OneRecord = Exclude<HarnessCommand, { command: "evaluate" }>;

async function call<T extends z.ZodType>(
  request: OneRecord,
  schema: T,
  what: string,
  options: CallOptions,
  defaultTimeoutMs: number,
): Promise<Called<z.infer<T>>> {
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  const dir = await scratchFolder("h-");
  const out = join(dir, `${what}.json`);
  try {
    const outcome = await (options.runner ?? directRunner)({ ...request, out }, timeoutMs);
    const failure = failureOf(outcome, timeoutMs, stageName(what));
    if (failure !== null) return { failure };
    const text = await readText(out).catch(() => null);
    if (text === null) {
      const message = `${stageName(what)}: the harness exited 0 but wrote no record`;
      return { failure: { status: "error", message, log: logTail(outcome.log) } };
    }
    return { record: parseRecordText(schema, text, what) };
  } catch (error) {
    if (!(error instanceof HarnessError)) throw error;
    return { failure: harnessErrorFailure(stageName(what), error), cause: error };
  } finally {
    await removeAll(dir);
  }
}

/** What a stage is called where a failure names it. */
const STAGE_NAMES: Readonly<Record<string, string>> = {
  static: "static check",
  "static-context": "static context",
  task: "task inspection",
  build: "build",
  verify: "verification",
  quick: "quick check",
  bench: "timing",
  device: "device query",
  ceilings: "ceilings measurement",
};

function stageName(what: string): string {
  return STAGE_NAMES[what] ?? what;
}

/** A harness error (a record that does not parse, a server that went away) as a failure. */
function harnessErrorFailure(stage: string, error: HarnessError): Failure {
  return { status: "error", message: `${stage}: ${error.message}`, log: logTail(error.log) };
}

function recordOrThrow<T>(called: Called<T>, what: string): T {
  if ("record" in called) return called.record;
  throw new HarnessError(`harness ${what}: ${called.failure.message}`, {
    cause: called.cause,
    issues: called.cause?.issues ?? [],
    log: called.failure.log,
  });
}

export async function inspectTask(
  task: TaskRef,
  options: CallOptions & { probe?: boolean } = {},
): Promise<TaskInfo> {
  const request: OneRecord = {
    command: "inspect",
    ...taskFields(task),
    ...(options.probe ? { probe: true } : {}),
  };
  return recordOrThrow(await call(request, taskInfoSchema, "task", options, 300_000), "inspect");
}

/** The task's static context, or null where the harness cannot give one (the task does not load). */
export async function staticContext(
  task: TaskRef,
  options: CallOptions = {},
): Promise<StaticContext | null> {
  const request: OneRecord = { command: "static-context", ...taskFields(task) };
  const called = await call(request, staticContextSchema, "static-context", options, 300_000);
  return "record" in called ? called.record : null;
}

/**
 * Static contexts asked once per task and kept: a static check given one starts no torch
 * (about 2 s a candidate on the CPU, more on a GPU machine). One per search or per command:
 * the task's files do not change under a run.
 */
export type StaticContexts = (task: TaskRef) => Promise<StaticContext | null>;

export function createStaticContexts(
  ask: (task: TaskRef) => Promise<StaticContext | null> = (task) => staticContext(task),
): StaticContexts {
  const known = new Map<string, Promise<StaticContext | null>>();
  return (task) => {
    const key = resolve(taskPath(task));
    let context = known.get(key);
    if (context === undefined) {
      context = ask(task).catch(() => null);
      known.set(key, context);
    }
    return context;
  };
}

export async function staticCheck(
  candidate: string,
  options: CallOptions & {
    task?: TaskRef;
    /** Flag only the reference's own ops: for CPU runs, where a py candidate is plain torch. */
    relaxed?: boolean;
    /** The task's context (instead of the harness loading the task, with torch, each time). */
    contexts?: StaticContexts;
  } = {},
): Promise<StaticRecord> {
  const context =
    options.task === undefined || options.contexts === undefined
      ? null
      : await options.contexts(options.task);
  const about =
    context !== null
      ? { referenceOps: context.referenceOps, libraries: context.libraries }
      : options.task === undefined
        ? {}
        : taskFields(options.task);
  const request: OneRecord = {
    command: "static",
    candidate: resolve(candidate),
    ...about,
    ...(options.relaxed ? { relaxed: true } : {}),
  };
  const called = await call(request, staticRecordSchema, "static", options, 60_000);
  return "record" in called ? called.record : failedStatic(called.failure);
}

export type Defines = Readonly<Record<string, string | number>>;

export async function build(
  candidate: string,
  options: CallOptions & {
    cache?: string;
    defines?: Defines;
    flags?: readonly string[];
    /** The task it is built for: a Python candidate that builds when constructed builds here. */
    task?: TaskRef;
  } = {},
): Promise<BuildRecord> {
  const defines = Object.entries(options.defines ?? {}).map(([name, value]) => `${name}=${value}`);
  const cache = resolve(options.cache ?? cacheDir());
  const request: OneRecord = {
    command: "build",
    candidate: resolve(candidate),
    cache,
    ...(defines.length > 0 ? { defines } : {}),
    ...(options.flags === undefined || options.flags.length === 0
      ? {}
      : { nvccFlags: [...options.flags] }),
    ...(options.task !== undefined && extname(candidate) === ".py" ? taskFields(options.task) : {}),
  };
  const called = await call(request, buildRecordSchema, "build", options, 900_000);
  if (!("record" in called)) return failedBuild(called.failure);
  // Inside the sandbox, its library goes where no candidate can rewrite it (sealed.ts).
  return sandboxMode() === "off" ? called.record : sealBuild(called.record, cache);
}

export type VerifyOptions = CallOptions & {
  /** The build's artifact; py candidates have none. */
  artifact?: string | null;
  heldout?: boolean;
  /** The smallest visible configuration only: a cheap first gate before the full check. */
  quick?: boolean;
  device?: "cuda" | "cpu";
  seed?: number;
  /** Only these configurations, by name (the harness's --config). */
  configs?: readonly string[];
  /** Written into a failed record when the run never described the device itself. */
  knownDevice?: Device;
  /**
   * The candidate's static-check record (staticCheck's, same task and device): the harness
   * carries its findings instead of checking the source a second time.
   */
  static?: StaticRecord;
};

export async function verify(
  task: TaskRef,
  candidate: string,
  options: VerifyOptions = {},
): Promise<VerifyRecord> {
  const request: OneRecord = {
    command: "verify",
    ...taskFields(task),
    candidate: resolve(candidate),
    ...(options.artifact ? { artifact: options.artifact } : {}),
    ...(options.heldout ? { heldout: true } : {}),
    ...(options.quick ? { quick: true } : {}),
    ...(options.device === undefined ? {} : { device: options.device }),
    ...(options.seed === undefined ? {} : { seed: options.seed }),
    ...configField(options.configs),
    ...(options.static === undefined ? {} : { static: options.static }),
  };
  const called = await call(request, verifyRecordSchema, "verify", options, 600_000);
  if ("record" in called) return called.record;
  return failedVerify(called.failure, {
    task: taskPath(task),
    candidate,
    ...(options.knownDevice === undefined ? {} : { device: options.knownDevice }),
    ...(options.seed === undefined ? {} : { seed: options.seed }),
  });
}

/**
 * What the search's screen races a candidate against, per configuration, from the leader's
 * own screen: `leader`, its least favourable speedup over the kernel to beat; `ceilings`, the
 * kernel to beat's time over the roofline floor (the most a kernel could gain there, before
 * the harness's margin for a time under the floor). The harness stops a candidate once even
 * its most favourable speedups so far, with the ceilings on the configurations still to come,
 * cannot reach the leader's over all of them; with no ceiling for one of those, it goes on.
 */
export type Race = {
  leader: Readonly<Record<string, number>>;
  ceilings: Readonly<Record<string, number>>;
};

export type BenchOptions = CallOptions & {
  candidate?: string;
  /** The inputs' seed (the harness chooses one when not given). */
  seed?: number;
  /** Only these configurations, by name (the harness's --config). */
  configs?: readonly string[];
  artifact?: string | null;
  baseline?: string;
  baselineArtifact?: string | null;
  /** Time torch.compile as a second baseline (slow to warm up); on unless false. */
  compile?: boolean;
  /** Seconds of timing per configuration (the harness's default, 1.5, when not given). */
  budgetS?: number;
  /** The search's screen (evaluate) only: what a candidate races against (Race). */
  race?: Race;
  knownDevice?: Device;
  /**
   * The reference alone, no candidate or baseline: torch.compile compiled before the GPU's lock
   * is taken (work beside it goes on), then eager and torch.compile timed as a judge times them.
   */
  warmCompile?: boolean;
};

export async function bench(task: TaskRef, options: BenchOptions = {}): Promise<BenchRecord> {
  const request: OneRecord = {
    command: "bench",
    ...taskFields(task),
    ...(options.candidate === undefined ? {} : { candidate: resolve(options.candidate) }),
    ...(options.artifact ? { artifact: options.artifact } : {}),
    ...(options.seed === undefined ? {} : { seed: options.seed }),
    ...configField(options.configs),
    ...timing(options),
    ...(options.warmCompile === true ? { warmCompile: true, noBaseline: true } : {}),
  };
  const called = await call(request, benchRecordSchema, "bench", options, 600_000);
  if ("record" in called) return called.record;
  return failedBench(called.failure, {
    task: taskPath(task),
    ...(options.knownDevice === undefined ? {} : { device: options.knownDevice }),
  });
}

/** The request's `config` field: none when no configuration is named (all of them run). */
function configField(configs: readonly string[] | undefined): { config?: string[] } {
  return configs === undefined || configs.length === 0 ? {} : { config: [...configs] };
}

/** Bench's and evaluate's options about timing (the race is evaluate's only). */
function timing(options: Omit<BenchOptions, keyof CallOptions | "candidate" | "artifact">) {
  return {
    ...(options.baseline === undefined ? {} : { baseline: resolve(options.baseline) }),
    ...(options.baselineArtifact ? { baselineArtifact: options.baselineArtifact } : {}),
    ...(options.compile === false ? { noCompile: true } : {}),
    ...(options.budgetS === undefined ? {} : { budget: options.budgetS }),
    // measured once per GPU, then read back: the harness re-measures if the GPU differs
    ceilings: join(cacheDir(), "ceilings.json"),
  };
}

export { EVALUATE_STAGES, type EvaluateStage };

/**
 * A stage's record, as `evaluate` wrote it; `next`: the stage the harness runs after it, null
 * where the cascade stopped (after a record that is not ok, or the last stage).
 */
export type OnStageRecord = (
  stage: EvaluateStage,
  record: VerifyRecord | BenchRecord,
  next: EvaluateStage | null,
) => void;

/** What `evaluate` wrote, stage by stage: null for a stage after one that was not ok. */
export type EvaluateRecords = {
  quick: VerifyRecord | null;
  verify: VerifyRecord | null;
  bench: BenchRecord | null;
};

export type CascadeOptions = Omit<CallOptions, "timeoutMs"> &
  Omit<VerifyOptions, keyof CallOptions | "quick"> &
  Omit<BenchOptions, keyof CallOptions | "candidate" | "artifact"> & {
    /** The limits of the separate commands (10 minutes each): the child gets their sum. */
    verifyTimeoutMs?: number;
    benchTimeoutMs?: number;
    /**
     * Each stage's record as it ends, in order (seen by polling while the child runs; a
     * failed record for the stage a crash or a timeout interrupted comes after the child).
     */
    onRecord?: OnStageRecord;
    /** How often the records' files are looked for while the child runs (100 ms). */
    pollMs?: number;
  };

/**
 * The search's cascade in one harness child: the quick check (smallest configuration), the
 * full verification, then timing beside the baseline (without a candidate, nothing to do).
 * The child writes each stage's record to a file of its own and stops after the first that
 * is not ok. A child that crashes or times out gives a failed record for the stage it was in.
 */
export async function evaluate(
  task: TaskRef,
  candidate: string,
  options: CascadeOptions = {},
): Promise<EvaluateRecords> {
  const timeoutMs = (options.verifyTimeoutMs ?? 600_000) + (options.benchTimeoutMs ?? 600_000);
  const dir = await scratchFolder("h-");
  const outs = Object.fromEntries(
    EVALUATE_STAGES.map((stage) => [stage, join(dir, `${stage}.json`)]),
  ) as Record<EvaluateStage, string>;
  const request: HarnessCommand = {
    command: "evaluate",
    ...taskFields(task),
    candidate: resolve(candidate),
    ...(options.artifact ? { artifact: options.artifact } : {}),
    ...(options.heldout ? { heldout: true } : {}),
    ...(options.device === undefined ? {} : { device: options.device }),
    ...(options.seed === undefined ? {} : { seed: options.seed }),
    ...configField(options.configs),
    ...(options.static === undefined ? {} : { static: options.static }),
    ...timing(options),
    ...(options.race === undefined
      ? {}
      : { race: { ...options.race.leader }, raceCeilings: { ...options.race.ceilings } }),
    quickOut: outs.quick,
    verifyOut: outs.verify,
    benchOut: outs.bench,
  };
  const records: EvaluateRecords = { quick: null, verify: null, bench: null };
  let next = 0; // the stage whose record comes next
  let stopped = false; // a record that is not ok ended the run
  const where = {
    task: taskPath(task),
    ...(options.knownDevice === undefined ? {} : { device: options.knownDevice }),
  };
  function take(stage: EvaluateStage, record: VerifyRecord | BenchRecord): void {
    if (record.kind === "bench") records.bench = record;
    else if (stage !== "bench") records[stage] = record;
    next += 1;
    stopped = !record.ok;
    options.onRecord?.(stage, record, stopped ? null : (EVALUATE_STAGES[next] ?? null));
  }
  function failed(stage: EvaluateStage, failure: Failure): VerifyRecord | BenchRecord {
    if (stage === "bench") return failedBench(failure, where);
    const seed = options.seed === undefined ? {} : { seed: options.seed };
    return failedVerify(failure, { ...where, candidate, ...seed });
  }
  /** Takes the records written so far, in order, up to the first that is not there yet. */
  async function collect(): Promise<void> {
    while (!stopped && next < EVALUATE_STAGES.length) {
      const stage = EVALUATE_STAGES[next] as EvaluateStage;
      const text = await readText(outs[stage]).catch(() => null);
      if (text === null) return;
      try {
        const schema = stage === "bench" ? benchRecordSchema : verifyRecordSchema;
        take(stage, parseRecordText(schema, text, stage === "bench" ? "bench" : "verify"));
      } catch (error) {
        if (!(error instanceof HarnessError)) throw error;
        take(stage, failed(stage, harnessErrorFailure(stageName(stage), error)));
      }
    }
  }
  try {
    let ended = false;
    const running = (options.runner ?? directRunner)(request, timeoutMs).finally(() => {
      ended = true;
    });
    const pollMs = options.pollMs ?? 100;
    while (!ended) {
      await Promise.race([running.catch(() => undefined), delay(pollMs)]);
      if (!ended) await collect();
    }
    let ending: Failure | HarnessOutcome;
    try {
      ending = await running;
    } catch (error) {
      if (!(error instanceof HarnessError)) throw error;
      ending = { status: "error", message: error.message, log: error.log };
    }
    await collect(); // what the child wrote last, before it ended
    if (!stopped && next < EVALUATE_STAGES.length) {
      // the stage that was running when the child ended wrote nothing: a failed record
      const stage = EVALUATE_STAGES[next] as EvaluateStage;
      const name = stageName(stage);
      const failure =
        "status" in ending
          ? { ...ending, message: `${name}: ${ending.message}`, log: logTail(ending.log) }
          : failureOf(ending, timeoutMs, name);
      const none = {
        status: "error" as const,
        message: `${name}: the harness exited 0 but wrote no record`,
        log: "status" in ending ? "" : logTail(ending.log),
      };
      take(stage, failed(stage, failure ?? none));
    }
    return records;
  } finally {
    await removeAll(dir);
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function device(options: CallOptions = {}): Promise<DeviceRecord> {
  return recordOrThrow(
    await call({ command: "device" }, deviceRecordSchema, "device", options, 120_000),
    "device",
  );
}

export async function ceilings(options: CallOptions = {}): Promise<Ceilings> {
  return recordOrThrow(
    await call({ command: "ceilings" }, ceilingsSchema, "ceilings", options, 300_000),
    "ceilings",
  );
}
