// The cascade each candidate goes through: static check → build → the GPU steps. Static checks
// and builds run in parallel on the CPU; the GPU steps wait their turn for the GPU, so a build
// overlaps the GPU work of the candidate before it. A failing step ends that candidate's
// cascade; its result is data, never an exception. The GPU steps are verify (then bench, when
// asked), or, for the search's screen (`quick`), the harness's own cascade in one child
// (`evaluate`: quick → verify → bench, each stage and where it stops the harness's decision).
// The static check runs once: its record goes with the GPU steps, which carry its findings.
// (Named a cascade: "evaluate" is kept for the search's screen of a candidate, that is the
// harness command, client.evaluate, and the search's Evaluator built on them.)
import type { BuildPool } from "./build/pool.js";
import type { GpuQueue } from "./gpu/queue.js";
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
} from "#shared/contract/records.js";
import { createResources } from "./build/resources.js";
import type { Limit } from "./util/limit.js";

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

export type CascadeEvent =
  | { type: "start"; step: Step; candidate: string }
  | { type: "done"; step: Step; candidate: string; ok: boolean; seconds: number; detail: string };

/** The harness calls the cascade makes; tests put stand-ins here. */
export type HarnessCalls = {
  staticCheck: typeof client.staticCheck;
  verify: typeof client.verify;
  bench: typeof client.bench;
  /** The search's screen: the harness's cascade in one child (`quick`). */
  evaluate: typeof client.evaluate;
};

/** Timing beside the baseline: `bench`'s options, and the timing stage of the search's cascade. */
export type BenchOptions = {
  baseline?: string;
  compile?: boolean;
  budgetS?: number;
  race?: client.Race;
};

/**
 * The GPU steps: verification, then timing when asked (`verify` and `bench`, a harness child
 * each), or the search's screen (`quick`): the quick check on the smallest configuration, the
 * full check and the timing, the cascade the harness runs in one child (`evaluate`) and
 * decides, stage by stage; this side only asks for it and reads its records.
 */
export type GpuSteps =
  { quick?: false; bench?: false | BenchOptions } | { quick: true; bench: BenchOptions };

export type CascadeOptions = GpuSteps & {
  heldout?: boolean;
  device?: "cuda" | "cpu";
  /** The inputs' seed, the same for verification and timing (the harness's choice when absent). */
  seed?: number;
  /** Only these configurations, by name (a verdict's reproduction; all when absent). */
  configs?: readonly string[];
  defines?: client.Defines;
  /** Precision-keeping nvcc flags for the build (the tuner's; proposers/compile-flags.ts). */
  flags?: readonly string[];
  /** Stop after the static check (a machine without a GPU). */
  staticOnly?: boolean;
  /** Written into records of runs that never described the device. */
  knownDevice?: Device;
  /** Verification and timing run in its children when given. */
  server?: Pick<client.ForkServer, "run">;
  /**
   * Static checks run in its children when given: the CPU fork server (one sandbox for all of
   * them, not one each). The build pool given is built on it by whoever made the pool.
   */
  checks?: client.ForkServer;
  pool?: BuildPool;
  gpu?: GpuQueue;
  /** Limits the static checks; shared by calls that share a pool (one per core by default). */
  cpu?: Limit;
  /** The tasks' static contexts, asked once (one per call by default; a search shares one). */
  staticContexts?: client.StaticContexts;
  harness?: Partial<HarnessCalls>;
  onEvent?: (event: CascadeEvent) => void;
  /** Limits for one candidate's GPU steps (defaults: the client's, 10 minutes each). */
  timeouts?: { verifyMs?: number; benchMs?: number };
  /** Its place in the GPU queue: lower first (the search's proposal number); none: last. */
  gpuOrder?: number;
};

export async function runCascade(
  task: client.TaskRef,
  candidates: readonly string[],
  options: CascadeOptions = {},
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
    ...createResources(pick(options, "pool", "gpu", "cpu")),
    staticContexts: options.staticContexts ?? client.createStaticContexts(),
    emit: options.onEvent ?? (() => undefined),
    gpuCall: {
      ...(options.server === undefined ? {} : { runner: options.server.run }),
      ...pick(options, "knownDevice"),
    },
  };
  return Promise.all(candidates.map((candidate) => cascadeOne(context, candidate)));
}

type Context = {
  task: client.TaskRef;
  options: CascadeOptions;
  calls: HarnessCalls;
  pool: BuildPool;
  gpu: GpuQueue;
  cpu: Limit;
  staticContexts: client.StaticContexts;
  emit: (event: CascadeEvent) => void;
  /** Options every GPU call gets: the fork server, the device for failed records. */
  gpuCall: Pick<client.VerifyOptions, "runner" | "knownDevice">;
};

type Records = Pick<CandidateResult, "static" | "build" | "verify" | "bench" | "quick">;
type Verdict = Pick<CandidateResult, "ok" | "status" | "reason" | "message">;
type Seconds = Omit<CandidateResult["seconds"], "total">;

async function cascadeOne(context: Context, candidate: string): Promise<CandidateResult> {
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
        ...(options.checks === undefined ? {} : { runner: options.checks.run }),
      }),
    ),
  );
  const afterStatic: Records = { static: checked.record, build: null, verify: null, bench: null };
  if (!checked.record.ok) return finish(staticVerdict(checked.record), afterStatic, none);
  if (options.staticOnly) return finish(NOT_VERIFIED, afterStatic, none);

  const built = await runStep(context, "build", candidate, () =>
    context.pool.build(candidate, options.defines, options.flags, task),
  );
  const afterBuild = { ...afterStatic, build: built.record };
  const compiled = { ...none, compile: built.record.seconds };
  if (!built.record.ok) return finish(buildVerdict(built.record), afterBuild, compiled);

  const bench = options.bench;
  const checkedBuild = { static: checked.record, built: built.record };
  const staged = options.quick
    ? await screen(context, candidate, checkedBuild, options.bench)
    : await verifyThenTime(context, candidate, checkedBuild);
  const { quick } = staged;
  const afterQuick: Records = quick === null ? afterBuild : { ...afterBuild, quick: quick.record };
  const quickSeconds = quick?.seconds ?? 0;
  if (quick !== null && !quick.record.ok) {
    const verdict = verifyVerdict(quick.record);
    return finish(verdict, afterQuick, { ...compiled, verify: quickSeconds });
  }

  const verified =
    staged.verify ??
    unwritten(failedVerify(noRecord("verify"), { task: client.taskPath(task), candidate }));
  const afterVerify = { ...afterQuick, verify: verified.record };
  const checkedOnGpu = { ...compiled, verify: quickSeconds + verified.seconds };
  const verdict = verifyVerdict(verified.record);
  if (!verified.record.ok || !bench) return finish(verdict, afterVerify, checkedOnGpu);

  const timed =
    staged.bench ?? unwritten(failedBench(noRecord("bench"), { task: client.taskPath(task) }));
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

/** Verification (`verify`, judged), then timing when asked and verified (`bench`): two commands. */
async function verifyThenTime(
  context: Context,
  candidate: string,
  { static: checked, built }: Checked,
): Promise<Staged> {
  const { task, options, calls } = context;
  const verify = await context.gpu(
    () =>
      runStep(context, "verify", candidate, () =>
        calls.verify(task, candidate, {
          artifact: built.artifact,
          static: checked,
          ...pick(options, "heldout", "device", "seed", "configs"),
          ...context.gpuCall,
          ...(options.timeouts?.verifyMs === undefined
            ? {}
            : { timeoutMs: options.timeouts.verifyMs }),
        }),
      ),
    options.gpuOrder,
  );
  if (!verify.record.ok || !options.bench) return { quick: null, verify, bench: null };
  const bench = await timeCandidate(context, candidate, built, options.bench);
  return { quick: null, verify, bench };
}

/**
 * The search's screen: the harness's cascade in one child (`evaluate`): the quick check, the
 * full check and the timing, the task and the candidate loaded once. The harness decides which
 * stage runs and where the cascade stops; here each record it wrote is a step's done event, and
 * the stage the client says comes next a start. A step's seconds run from the end of the one
 * before to its record.
 */
async function screen(
  context: Context,
  candidate: string,
  { static: checked, built }: Checked,
  bench: BenchOptions,
): Promise<Staged> {
  const { task, options } = context;
  const beside = await baselineBeside(context, bench);
  return context.gpu(async () => {
    const seconds: Partial<Record<client.EvaluateStage, number>> = {};
    let since = performance.now();
    context.emit({ type: "start", step: client.EVALUATE_STAGES[0], candidate });
    const report: client.OnStageRecord = (step, record, next) => {
      const took = (performance.now() - since) / 1000;
      seconds[step] = took;
      since = performance.now();
      const detail = describeRecord(record);
      context.emit({ type: "done", step, candidate, ok: record.ok, seconds: took, detail });
      if (next !== null) context.emit({ type: "start", step: next, candidate });
    };
    const records = await context.calls.evaluate(task, candidate, {
      artifact: built.artifact,
      static: checked,
      ...pick(options, "heldout", "device", "seed", "configs"),
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
    const timed = <T>(record: T | null, step: client.EvaluateStage): Timed<T> | null =>
      record === null ? null : { record, seconds: seconds[step] ?? 0 };
    return {
      quick: timed(records.quick, "quick"),
      verify: timed(records.verify, "verify"),
      bench: timed(records.bench, "bench"),
    };
  }, options.gpuOrder);
}

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
  return context.gpu(
    () =>
      runStep(context, "bench", candidate, () =>
        context.calls.bench(context.task, {
          candidate,
          artifact: built.artifact,
          ...pick(context.options, "seed", "configs"),
          ...beside,
          ...pick(bench, "compile"),
          ...pick(bench, "budgetS"),
          ...context.gpuCall,
          ...(context.options.timeouts?.benchMs === undefined
            ? {}
            : { timeoutMs: context.options.timeouts.benchMs }),
        }),
      ),
    context.options.gpuOrder,
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

/**
 * A step's outcome in a few words for a progress line; where the harness itself failed, with
 * what failed (the stage and the exception or signal), never a bare code.
 */
function describeRecord(record: StepRecord): string {
  if (record.kind === "static") {
    if (record.ok) return record.format;
    const codes = record.findings.map((finding) => finding.code).join(", ");
    return staticFailure(record) === null
      ? codes
      : withCause(codes, record.findings[0]?.message ?? "");
  }
  if (record.kind === "build") {
    return record.ok ? `${record.format}${record.cached ? ", cached" : ""}` : "compile error";
  }
  const code = record.reason ?? (record.kind === "verify" ? record.status : "timed");
  return HARNESS_FAILURES.has(code) ? withCause(code, record.message) : code;
}

/** The statuses that mean the harness's run ended badly (not a verdict on the candidate). */
const HARNESS_FAILURES: ReadonlySet<string> = new Set(["error", "crash", "timeout"]);

function withCause(code: string, message: string): string {
  const line = message.trim().split("\n")[0] ?? "";
  if (line === "") return code;
  return `${code}: ${line.length <= 240 ? line : `${line.slice(0, 239)}…`}`;
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
