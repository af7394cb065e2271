// The cascade each candidate goes through: static check → build → (quick) → verify → (bench). Static
// checks and builds run in parallel on the CPU; verification and timing wait their turn for
// the GPU, so a build overlaps the GPU work of the candidate before it. A failing step ends
// that candidate's cascade; its result is data, never an exception. With `oneChild`, the
// quick check, the full check and the timing run in one harness child (`evaluate`). The static
// check runs once: its record goes with the GPU steps, which carry its findings.
import { availableParallelism } from "node:os";
import { createBuildPool, type BuildPool } from "./build/pool.js";
import { createGpuQueue, type GpuQueue } from "./gpu/queue.js";
import * as client from "./harness/client.js";
import {
  failedBench,
  failedVerify,
  staticFailure,
  type Failure,
} from "./harness/failed-records.js";
import type {
  BenchRecord,
  BuildRecord,
  Device,
  StaticRecord,
  VerifyRecord,
  VerifyStatus,
} from "../../src/shared/contract/records.js";
import { createLimit, type Limit } from "./util/limit.js";

export type Step = "static" | "build" | "quick" | "verify" | "bench";

export type CandidateResult = {
  candidate: string;
  /** Passed every step that ran (verify, and bench when asked for). */
  ok: boolean;
  status: VerifyStatus;
  reason: string | null;
  message: string;
  static: StaticRecord;
  build: BuildRecord | null;
  verify: VerifyRecord | null;
  bench: BenchRecord | null;
  /** The check on the smallest configuration, when asked for (`quick`). */
  quick?: VerifyRecord;
  /** compile: the build's own time (0 when cached); verify, time: GPU time; total: wall time. */
  seconds: { compile: number; verify: number; time: number; total: number };
};

export type EvaluationEvent =
  | { type: "start"; step: Step; candidate: string }
  | { type: "done"; step: Step; candidate: string; ok: boolean; seconds: number; detail: string };

/** The harness calls the cascade makes; tests put stand-ins here. */
export type HarnessCalls = {
  staticCheck: typeof client.staticCheck;
  verify: typeof client.verify;
  bench: typeof client.bench;
  /** The three GPU steps in one child (`oneChild`). */
  evaluate: typeof client.evaluate;
};

export type EvaluateOptions = {
  heldout?: boolean;
  /** Check the smallest visible configuration first: a failure there saves the full check. */
  quick?: boolean;
  device?: "cuda" | "cpu";
  seed?: number;
  defines?: client.Defines;
  /** Precision-keeping nvcc flags for the build (the tuner's; proposers/compile-flags.ts). */
  flags?: readonly string[];
  /** Stop after the static check (a machine without a GPU). */
  staticOnly?: boolean;
  /**
   * With `quick` and `bench`: the quick check, the full check and the timing in one harness
   * child (client.evaluate) instead of three; the same events and results.
   */
  oneChild?: boolean;
  /** Time each candidate that passes; `baseline` is timed beside it when it builds. */
  bench?:
    | false
    | {
        baseline?: string;
        compile?: boolean;
        budgetS?: number;
        race?: Readonly<Record<string, number>>;
      };
  /** Written into records of runs that never described the device. */
  knownDevice?: Device;
  /** Verification and timing run in its children when given. */
  server?: client.ForkServer;
  pool?: BuildPool;
  gpu?: GpuQueue;
  /** Limits the static checks; shared by calls that share a pool (one per core by default). */
  cpu?: Limit;
  /** The tasks' static contexts, asked once (one per call by default; a search shares one). */
  staticContexts?: client.StaticContexts;
  harness?: Partial<HarnessCalls>;
  onEvent?: (event: EvaluationEvent) => void;
  /** Limits for one candidate's GPU steps (defaults: the client's, 10 minutes each). */
  timeouts?: { verifyMs?: number; benchMs?: number };
};

export async function evaluateCandidates(
  task: string,
  candidates: readonly string[],
  options: EvaluateOptions = {},
): Promise<CandidateResult[]> {
  const calls: HarnessCalls = {
    staticCheck: client.staticCheck,
    verify: client.verify,
    bench: client.bench,
    evaluate: client.evaluate,
    ...options.harness,
  };
  const context: Context = {
    task,
    options,
    calls,
    pool: options.pool ?? createBuildPool(),
    gpu: options.gpu ?? createGpuQueue(),
    cpu: options.cpu ?? createLimit(availableParallelism()),
    staticContexts: options.staticContexts ?? client.createStaticContexts(),
    emit: options.onEvent ?? (() => undefined),
    gpuCall: {
      ...(options.server === undefined ? {} : { runner: options.server.run }),
      ...pick(options, "knownDevice"),
    },
  };
  return Promise.all(candidates.map((candidate) => evaluateOne(context, candidate)));
}

type Context = {
  task: string;
  options: EvaluateOptions;
  calls: HarnessCalls;
  pool: BuildPool;
  gpu: GpuQueue;
  cpu: Limit;
  staticContexts: client.StaticContexts;
  emit: (event: EvaluationEvent) => void;
  /** Options every GPU call gets: the fork server, the device for failed records. */
  gpuCall: Pick<client.VerifyOptions, "runner" | "knownDevice">;
};

type Records = Pick<CandidateResult, "static" | "build" | "verify" | "bench" | "quick">;
type Verdict = Pick<CandidateResult, "ok" | "status" | "reason" | "message">;
type Seconds = Omit<CandidateResult["seconds"], "total">;

async function evaluateOne(context: Context, candidate: string): Promise<CandidateResult> {
  const started = performance.now();
  const { task, options, calls } = context;
  function finish(verdict: Verdict, records: Records, seconds: Seconds): CandidateResult {
    const total = (performance.now() - started) / 1000;
    return { candidate, ...verdict, ...records, seconds: { ...seconds, total } };
  }
  const none: Seconds = { compile: 0, verify: 0, time: 0 };

  const checked = await runStep(context, "static", candidate, () =>
    context.cpu(() =>
      calls.staticCheck(candidate, {
        task,
        relaxed: options.device === "cpu",
        contexts: context.staticContexts,
      }),
    ),
  );
  const afterStatic: Records = { static: checked.record, build: null, verify: null, bench: null };
  if (!checked.record.ok) return finish(staticVerdict(checked.record), afterStatic, none);
  if (options.staticOnly) return finish(NOT_VERIFIED, afterStatic, none);

  const built = await runStep(context, "build", candidate, () =>
    context.pool.build(candidate, options.defines, options.flags),
  );
  const afterBuild = { ...afterStatic, build: built.record };
  const compiled = { ...none, compile: built.record.seconds };
  if (!built.record.ok) return finish(buildVerdict(built.record), afterBuild, compiled);

  const bench = options.bench;
  const checkedBuild = { static: checked.record, built: built.record };
  const staged =
    options.oneChild && options.quick && bench
      ? await inOneChild(context, candidate, checkedBuild, bench)
      : await inChildren(context, candidate, checkedBuild);
  const { quick } = staged;
  const afterQuick: Records = quick === null ? afterBuild : { ...afterBuild, quick: quick.record };
  const quickSeconds = quick?.seconds ?? 0;
  if (quick !== null && !quick.record.ok) {
    const verdict = verifyVerdict(quick.record);
    return finish(verdict, afterQuick, { ...compiled, verify: quickSeconds });
  }

  const verified =
    staged.verify ?? unwritten(failedVerify(noRecord("verify"), { task, candidate }));
  const afterVerify = { ...afterQuick, verify: verified.record };
  const checkedOnGpu = { ...compiled, verify: quickSeconds + verified.seconds };
  const verdict = verifyVerdict(verified.record);
  if (!verified.record.ok || !bench) return finish(verdict, afterVerify, checkedOnGpu);

  const timed = staged.bench ?? unwritten(failedBench(noRecord("bench"), { task }));
  return finish(
    benchVerdict(timed.record, verdict),
    { ...afterVerify, bench: timed.record },
    { ...checkedOnGpu, time: timed.seconds },
  );
}

/** The GPU steps' records, up to the first that is not ok (verify is null only after a quick failure). */
type Staged = {
  quick: Timed<VerifyRecord> | null;
  verify: Timed<VerifyRecord> | null;
  bench: Timed<BenchRecord> | null;
};

/** A step's record that never came (not with the client, which fills them in): failed. */
function unwritten<T>(record: T): Timed<T> {
  return { record, seconds: 0 };
}

function noRecord(step: Step): Failure {
  return { status: "error", message: `the harness wrote no ${step} record`, log: "" };
}

/**
 * What the GPU steps start from: the static check's record (passed on, so the harness does not
 * check the source again) and the build's.
 */
type Checked = { static: StaticRecord; built: BuildRecord };

/** Quick check, full check and timing, each in a harness child of its own. */
async function inChildren(
  context: Context,
  candidate: string,
  { static: checked, built }: Checked,
): Promise<Staged> {
  const { task, options, calls } = context;
  const verifyOn = (step: "quick" | "verify") =>
    context.gpu(() =>
      runStep(context, step, candidate, () =>
        calls.verify(task, candidate, {
          artifact: built.artifact,
          static: checked,
          ...pick(options, "heldout", "device", "seed"),
          ...(step === "quick" ? { quick: true, heldout: false } : {}),
          ...context.gpuCall,
          ...(options.timeouts?.verifyMs === undefined
            ? {}
            : { timeoutMs: options.timeouts.verifyMs }),
        }),
      ),
    );
  const quick = options.quick ? await verifyOn("quick") : null;
  if (quick !== null && !quick.record.ok) return { quick, verify: null, bench: null };
  const verify = await verifyOn("verify");
  if (!verify.record.ok || !options.bench) return { quick, verify, bench: null };
  const bench = await timeCandidate(context, candidate, built, options.bench);
  return { quick, verify, bench };
}

/**
 * Quick check, full check and timing in one harness child (`evaluate`): the task, the
 * candidate and the GPU's context are set up once. The same steps, events and records as
 * three children; each step's seconds run from the end of the one before to its record.
 */
async function inOneChild(
  context: Context,
  candidate: string,
  { static: checked, built }: Checked,
  bench: BenchOptions,
): Promise<Staged> {
  const { task, options } = context;
  const beside = await baselineBeside(context, bench);
  return context.gpu(async () => {
    const staged: Staged = { quick: null, verify: null, bench: null };
    const steps = ["quick", "verify", "bench"] as const;
    let since = performance.now();
    let next = 0;
    let stopped = false;
    context.emit({ type: "start", step: "quick", candidate });
    const report = (step: (typeof steps)[number], record: VerifyRecord | BenchRecord) => {
      if (stopped || step !== steps[next]) return; // each step once, in order
      const seconds = (performance.now() - since) / 1000;
      const detail = describeRecord(record);
      context.emit({ type: "done", step, candidate, ok: record.ok, seconds, detail });
      if (record.kind === "bench") staged.bench = { record, seconds };
      else if (step !== "bench") staged[step] = { record, seconds };
      next += 1;
      stopped = !record.ok || next === steps.length;
      since = performance.now();
      const following = steps[next];
      if (!stopped && following !== undefined) {
        context.emit({ type: "start", step: following, candidate });
      }
    };
    const records = await context.calls.evaluate(task, candidate, {
      artifact: built.artifact,
      static: checked,
      ...pick(options, "heldout", "device", "seed"),
      ...beside,
      ...pick(bench, "compile"),
      ...pick(bench, "budgetS"),
      ...pick(bench, "race"),
      ...context.gpuCall,
      ...(options.timeouts?.verifyMs === undefined
        ? {}
        : { verifyTimeoutMs: options.timeouts.verifyMs }),
      ...(options.timeouts?.benchMs === undefined
        ? {}
        : { benchTimeoutMs: options.timeouts.benchMs }),
      onRecord: report,
    });
    // what a stand-in returned without reporting it, and a failed record for a step it left out
    for (const step of steps) {
      if (stopped) break;
      const given = records[step];
      const known = context.gpuCall.knownDevice;
      const where = { task, candidate, ...(known === undefined ? {} : { device: known }) };
      const record =
        given ??
        (step === "bench"
          ? failedBench(noRecord(step), where)
          : failedVerify(noRecord(step), where));
      report(step, record);
    }
    return staged;
  });
}

type BenchOptions = {
  baseline?: string;
  compile?: boolean;
  budgetS?: number;
  race?: Readonly<Record<string, number>>;
};

/** The baseline, built (shared by every candidate through the pool), to time beside. */
async function baselineBeside(
  context: Context,
  bench: BenchOptions,
): Promise<{ baseline?: string; baselineArtifact?: string | null }> {
  const baseline = bench.baseline === undefined ? null : await context.pool.build(bench.baseline);
  return baseline?.ok && bench.baseline !== undefined
    ? { baseline: bench.baseline, baselineArtifact: baseline.artifact }
    : {};
}

/** Builds the baseline, then times both. */
async function timeCandidate(
  context: Context,
  candidate: string,
  built: BuildRecord,
  bench: BenchOptions,
): Promise<Timed<BenchRecord>> {
  const beside = await baselineBeside(context, bench);
  return context.gpu(() =>
    runStep(context, "bench", candidate, () =>
      context.calls.bench(context.task, {
        candidate,
        artifact: built.artifact,
        ...beside,
        ...pick(bench, "compile"),
        ...pick(bench, "budgetS"),
        ...context.gpuCall,
        ...(context.options.timeouts?.benchMs === undefined
          ? {}
          : { timeoutMs: context.options.timeouts.benchMs }),
      }),
    ),
  );
}

type Timed<T> = { record: T; seconds: number };
type StepRecord = StaticRecord | BuildRecord | VerifyRecord | BenchRecord;

/** Runs one step between its start and done events, timing the work itself. */
async function runStep<T extends StepRecord>(
  context: Context,
  step: Step,
  candidate: string,
  work: () => Promise<T>,
): Promise<Timed<T>> {
  context.emit({ type: "start", step, candidate });
  const started = performance.now();
  const record = await work();
  const seconds = (performance.now() - started) / 1000;
  const detail = describeRecord(record);
  context.emit({ type: "done", step, candidate, ok: record.ok, seconds, detail });
  return { record, seconds };
}

function describeRecord(record: StepRecord): string {
  if (record.kind === "static") {
    return record.ok ? record.format : record.findings.map((finding) => finding.code).join(", ");
  }
  if (record.kind === "build") {
    return record.ok ? `${record.format}${record.cached ? ", cached" : ""}` : "compile error";
  }
  if (record.kind === "verify") return record.reason ?? record.status;
  return record.reason ?? "timed";
}

const NOT_VERIFIED: Verdict = {
  ok: false,
  status: "error",
  reason: "no-gpu",
  message: "stopped after the static check",
};

function staticVerdict(record: StaticRecord): Verdict {
  const first = record.findings.find((finding) => finding.severity === "reject");
  const message = first === undefined ? "the static check failed" : first.message;
  const failed = staticFailure(record);
  if (failed !== null) return { ok: false, status: failed, reason: failed, message };
  const where = first === undefined || first.line === 0 ? "" : ` (line ${first.line})`;
  return {
    ok: false,
    status: "rejected",
    reason: first?.code ?? "static",
    message: message + where,
  };
}

function buildVerdict(record: BuildRecord): Verdict {
  const lastLines = record.log.trimEnd().split("\n").slice(-20).join("\n");
  return { ok: false, status: "compile-error", reason: "compile-error", message: lastLines };
}

function verifyVerdict(record: VerifyRecord): Verdict {
  return { ok: record.ok, status: record.status, reason: record.reason, message: record.message };
}

/** Timing can still reject: a time under the physical floor, a wrong output while timed. */
function benchVerdict(record: BenchRecord, passed: Verdict): Verdict {
  if (record.ok) return passed;
  const reason = record.reason ?? "bench";
  const status =
    reason === "timeout" || reason === "crash" || reason === "error" ? reason : "rejected";
  return { ok: false, status, reason, message: record.message };
}

/** The named keys that are set, for exactOptionalPropertyTypes-clean spreading. */
function pick<T extends object, K extends keyof T>(from: T, ...keys: K[]): Partial<Pick<T, K>> {
  const picked: Partial<Pick<T, K>> = {};
  for (const key of keys) if (from[key] !== undefined) picked[key] = from[key];
  return picked;
}
