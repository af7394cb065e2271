// The real Evaluator and Rechecker, on the harness: each candidate source is written to a
// file of its own, then goes through the cascade (cascade.ts: static check → build in the
// pool → quick check on the smallest configuration → full verification → timing beside the
// baseline, without torch.compile; the three GPU steps in one harness child). Builds run in
// parallel; GPU work waits its turn in one queue, so proposing and compiling overlap the
// timing of another candidate.
import { createHash } from "node:crypto";
import { extname, join } from "node:path";
import type { BuildPool } from "../build/pool.js";
import {
  runCascade,
  type CandidateResult,
  type CascadeOptions,
  type GpuSteps,
  type CascadeEvent,
  type HarnessCalls,
} from "../cascade.js";
import type { GpuQueue } from "../gpu/queue.js";
import type { Lanes } from "../gpu/lanes.js";
import * as client from "../harness/client.js";
import { createResources } from "../build/resources.js";
import type { BenchRecord, Device, Profile, Stat } from "#shared/contract/records.js";
import { judgeTimings } from "./noise.js";
import type {
  ConfigTiming,
  Evaluation,
  Evaluator,
  FinalTiming,
  FinalVerification,
  Rechecker,
  Spread,
  Variant,
} from "./types.js";
import { makeFolder, writeData } from "../workspace/files.js";

export type HarnessEvaluatorOptions = {
  /** The task: its path, and its task.json as the run read it (then the harness does not). */
  task: client.TaskRef;
  /** The kernel to beat: timed beside every candidate. */
  baseline: string;
  /** Where candidate files are written (one per distinct source). */
  workDir: string;
  server?: Pick<client.ForkServer, "run">;
  /**
   * A search over several GPUs (gpu/lanes.ts): the screens go to the first free lane (its
   * runner in `server`), the final checks to lane 0; each evaluation says its lane's GPU.
   */
  lanes?: Lanes;
  /** The CPU fork server: static checks run there (the pool given builds there too). */
  checks?: client.ForkServer;
  knownDevice?: Device;
  pool?: BuildPool;
  gpu?: GpuQueue;
  harness?: Partial<HarnessCalls>;
  onEvent?: (event: CascadeEvent) => void;
  timeouts?: CascadeOptions["timeouts"];
  /**
   * Seconds of timing per configuration while searching (0.5): a screen, since the winner is
   * timed again at the harness's full budget before it is called one.
   */
  searchBudgetS?: number;
  /**
   * The reference's own timing (referenceTiming), already started: optimize starts it as the
   * harness starts, so its torch.compile compiles while the fork server imports torch.
   */
  reference?: Promise<BenchRecord>;
};

/**
 * Times the reference alone, eager and torch.compile (bench --warm-compile, in a process of its
 * own: torch.compile compiles before it takes the GPU's lock). A failure of the harness is a
 * failed record; it rejects only where the harness cannot start at all.
 */
export function referenceTiming(
  task: client.TaskRef,
  options: { knownDevice?: Device; bench?: typeof client.bench } = {},
): Promise<BenchRecord> {
  return (options.bench ?? client.bench)(task, {
    warmCompile: true,
    ...(options.knownDevice === undefined ? {} : { knownDevice: options.knownDevice }),
  });
}

export const SEARCH_BUDGET_S = 0.5;

/** A message shown to the next proposal: the end of it, where compilers put the error. */
const MESSAGE_LIMIT = 4000;

export type HarnessEvaluator = Evaluator &
  Rechecker & {
    /**
     * Starts timing the reference alone, eager and torch.compile (referenceTiming, beside the
     * search; or takes options.reference, started before). The final timings then take
     * torch.compile's times from it and skip their warm-up; when it gives none, the first
     * final timing times torch.compile as before.
     */
    timeReference(): void;
  };

export function createHarnessEvaluator(options: HarnessEvaluatorOptions): HarnessEvaluator {
  // the static checks' limit stays each evaluation's own, as runCascade makes it
  const { lanes } = options;
  const { pool, gpu: screens } = createResources({
    ...(options.pool === undefined ? {} : { pool: options.pool }),
    ...(options.gpu === undefined ? {} : { gpu: options.gpu }),
    ...(lanes === undefined ? {} : { gpu: lanes.gpu }),
  });
  // the final checks time the kept kernel and the baselines on one GPU: lane 0's
  const gpu = lanes?.first ?? screens;
  const benchCall = options.harness?.bench ?? client.bench;
  const { server } = options;
  const shared: Omit<CascadeOptions, keyof GpuSteps> = {
    pool,
    // one search, one task: its static context is asked once, not with torch per candidate;
    // in a child of the fork server, which has torch imported (a process of its own imported
    // it again: 5-8 s before the baseline's first step on the H100)
    staticContexts: client.createStaticContexts(
      server === undefined
        ? undefined
        : (task) => client.staticContext(task, { runner: server.run }),
    ),
    ...(options.server === undefined ? {} : { server: options.server }),
    ...(options.checks === undefined ? {} : { checks: options.checks }),
    ...(options.knownDevice === undefined ? {} : { knownDevice: options.knownDevice }),
    ...(options.harness === undefined ? {} : { harness: options.harness }),
    ...(options.onEvent === undefined ? {} : { onEvent: options.onEvent }),
    ...(options.timeouts === undefined ? {} : { timeouts: options.timeouts }),
  };

  async function write(source: string): Promise<string> {
    const name = createHash("sha256").update(source).digest("hex").slice(0, 16);
    const file = join(options.workDir, `${name}${extname(options.baseline)}`);
    await makeFolder(options.workDir);
    await writeData(file, source);
    return file;
  }

  async function cascade(
    variant: Variant,
    extra: CascadeOptions,
    queue: GpuQueue,
  ): Promise<CandidateResult> {
    const file = await write(variant.source);
    const [result] = await runCascade(options.task, [file], {
      ...shared,
      gpu: queue,
      defines: variant.defines,
      flags: variant.flags,
      ...extra,
    });
    if (result === undefined) throw new Error("runCascade returned no result");
    return result;
  }

  /**
   * torch.compile's times per configuration from the run's first final timing that had them:
   * the reference, its configurations and the machine are the same for every contender, so a
   * later one is timed beside the baseline and eager only and carries these (its bench skips
   * torch.compile's warm-up, seconds in a fresh process). Null until a timing has them.
   */
  let compileTimes: Map<string, Spread> | null = null;
  /** The reference's own timing (timeReference), while it runs or once it has. */
  let reference: Promise<Map<string, Spread> | null> | null = null;
  /** Whether that timing has ended. */
  let referenceEnded = false;

  return {
    timeReference() {
      reference ??= (
        options.reference ??
        referenceTiming(options.task, {
          bench: benchCall,
          ...(options.knownDevice === undefined ? {} : { knownDevice: options.knownDevice }),
        })
      )
        .then(compileTimesOf, () => null)
        .finally(() => {
          referenceEnded = true;
        });
    },

    verifiesAside() {
      return lanes !== undefined && lanes.count > 1;
    },

    timingWaits() {
      return compileTimes === null && reference !== null && !referenceEnded;
    },

    async evaluate(variant, _signal, race, order) {
      // the search's screen: the harness's cascade (quick → verify → bench) in one child
      const screen = () =>
        cascade(
          variant,
          {
            ...(order === undefined ? {} : { gpuOrder: order }),
            quick: true,
            bench: {
              baseline: options.baseline,
              compile: false,
              budgetS: options.searchBudgetS ?? SEARCH_BUDGET_S,
              ...(race === undefined ? {} : { race }),
            },
          },
          screens,
        );
      if (lanes === undefined) return toEvaluation(await screen());
      // the race compares speedups, each over the baseline timed in the same child on the
      // same lane: never a time from another GPU (gpu/lanes.ts says why that is enough)
      const { value, gpu: on } = await lanes.noted(screen);
      const evaluation = toEvaluation(value);
      return on === null ? evaluation : { ...evaluation, gpu: on };
    },

    async verify(variant) {
      // correctness is not a timing: on several GPUs it runs on another lane than lane 0's
      // final timings, beside them (final.ts)
      const result = await cascade(variant, { heldout: true }, lanes?.aside ?? gpu);
      return toFinalVerification(result);
    },

    async time(candidate) {
      // before the GPU queue: the reference's timing waits for the GPU's lock, not for it. A
      // final timing waits for it whole: its torch.compile runs GPU work (inductor's first
      // calls) outside the lock, which must not fall inside a final timing
      if (compileTimes === null && reference !== null) compileTimes = await reference;
      const file = candidate === null ? null : await write(candidate.source);
      const [built, baseline] = await Promise.all([
        file === null || candidate === null
          ? null
          : pool.build(file, candidate.defines, candidate.flags, options.task),
        pool.build(options.baseline),
      ]);
      if (built !== null && !built.ok) {
        return { ok: false, reason: "compile-error", message: built.log, configs: [] };
      }
      const record = await gpu(() =>
        benchCall(options.task, {
          ...(file === null ? {} : { candidate: file, artifact: built?.artifact ?? null }),
          baseline: options.baseline,
          baselineArtifact: baseline.ok ? baseline.artifact : null,
          compile: compileTimes === null,
          ...(options.server === undefined ? {} : { runner: options.server.run }),
          ...(options.knownDevice === undefined ? {} : { knownDevice: options.knownDevice }),
        }),
      );
      const timing = toFinalTiming(record);
      if (compileTimes !== null) {
        const known = compileTimes;
        return {
          ...timing,
          configs: timing.configs.map((c) => ({ ...c, compile: known.get(c.config) ?? null })),
        };
      }
      compileTimes = compileTimesOf(record);
      return timing;
    },
  };
}

/**
 * torch.compile's times per timed configuration in a bench record (a final timing's, or the
 * reference's alone, whose rows have no baseline), or null where any is missing.
 */
function compileTimesOf(record: BenchRecord): Map<string, Spread> | null {
  const timed = record.configs.filter((config) => config.eager !== null);
  if (!record.ok || timed.length === 0) return null;
  const times = new Map<string, Spread>();
  for (const { name, compile } of timed) {
    if (compile === null) return null;
    times.set(name, spread(compile));
  }
  return times;
}

/** The cascade's result as the engine sees it: which stage ended it, timings, fitness. */
export function toEvaluation(result: CandidateResult): Evaluation {
  const seconds = {
    compile: result.seconds.compile,
    verify: result.seconds.verify,
    time: result.seconds.time,
  };
  const stage = stageOf(result);
  const message = tail(result.message);
  const phases = result.bench?.phases ?? {};
  const timePhases = {
    ...(Object.keys(phases).length > 0 ? { timePhases: phases } : {}),
    ...verifyPhasesOf(result),
  };
  if (!result.ok) {
    return {
      ok: false,
      stage,
      reason: result.reason,
      message,
      timings: [],
      fitness: null,
      profile: null,
      seconds,
      ...timePhases,
    };
  }
  const timings = timingsOf(result.bench);
  const race = result.bench?.race ?? null;
  if (race !== null) {
    return {
      ok: true,
      stage: "time",
      reason: "raced",
      message,
      timings,
      fitness: null,
      profile: null,
      seconds,
      ...timePhases,
      raced: {
        config: race.config,
        timed: race.timed,
        speedupUpper: race.speedupUpper,
        leaderLower: race.leaderLower,
      },
    };
  }
  const judged = judgeTimings(timings);
  const configs = result.bench?.configs.length ?? 0;
  if (judged === null || timings.length !== configs) {
    return {
      ok: false,
      stage: "time",
      reason: "not-timed",
      message: "no time beside the baseline on every configuration",
      timings,
      fitness: null,
      profile: null,
      seconds,
      ...timePhases,
    };
  }
  return {
    ok: true,
    stage: "done",
    reason: null,
    message,
    timings,
    fitness: judged.speedup,
    profile: profileText(result.bench?.profile ?? null),
    seconds,
    ...timePhases,
  };
}

/** The verification children's phases, quick and full, where their records have them. */
function verifyPhasesOf(result: CandidateResult): Pick<Evaluation, "verifyPhases"> {
  const quick = result.quick?.phases ?? {};
  const full = result.verify?.phases ?? {};
  const verifyPhases = {
    ...(Object.keys(quick).length > 0 ? { quick } : {}),
    ...(Object.keys(full).length > 0 ? { full } : {}),
  };
  return Object.keys(verifyPhases).length > 0 ? { verifyPhases } : {};
}

/** The profile as a proposal reads it: each kernel's share of one call's GPU time. */
export function profileText(profile: Profile | null): string | null {
  if (profile === null || profile.kernels.length === 0) return null;
  const total = profile.kernels.reduce((sum, kernel) => sum + kernel.us, 0);
  const lines = profile.kernels.map((kernel) => {
    const share = total > 0 ? Math.round((kernel.us / total) * 100) : 0;
    const us = kernel.us.toFixed(1).padStart(9);
    return `${us} µs ${String(share).padStart(3)} %  ×${kernel.calls}  ${kernel.name}`;
  });
  return [`GPU kernels of one call on ${profile.config}, longest first:`, ...lines].join("\n");
}

function stageOf(result: CandidateResult): Evaluation["stage"] {
  if (!result.static.ok) return "static";
  if (result.build !== null && !result.build.ok) return "compile";
  if (result.quick !== undefined && !result.quick.ok) return "quick";
  if (result.verify === null || !result.verify.ok) return "verify";
  if (result.bench !== null && !result.bench.ok) return "time";
  return "done";
}

function timingsOf(bench: BenchRecord | null): ConfigTiming[] {
  return (bench?.configs ?? []).flatMap((config) =>
    config.candidate === null || config.baseline === null
      ? []
      : [
          {
            config: config.name,
            medianMs: config.candidate.medianMs,
            p20Ms: config.candidate.p20Ms,
            p80Ms: config.candidate.p80Ms,
            baselineMs: config.baseline.medianMs,
            baselineP20Ms: config.baseline.p20Ms,
            baselineP80Ms: config.baseline.p80Ms,
            launchBound: config.launchBound,
            ...(config.floorMs > 0 ? { floorMs: config.floorMs } : {}),
          },
        ],
  );
}

export function toFinalVerification(result: CandidateResult): FinalVerification {
  return {
    ok: result.ok,
    status: result.status,
    reason: result.reason,
    message: tail(result.message),
    configs: (result.verify?.configs ?? []).map((config) => ({
      name: config.name,
      heldout: config.heldout,
      ok: config.ok,
      reason: config.reason,
    })),
    ...phasesOf(result.verify?.phases),
  };
}

function phasesOf(phases: Readonly<Record<string, number>> | undefined) {
  return phases === undefined || Object.keys(phases).length === 0 ? {} : { phases };
}

export function toFinalTiming(record: BenchRecord): FinalTiming {
  return {
    ok: record.ok,
    reason: record.reason,
    message: tail(record.message),
    // bench times eager on every configuration (only the search's screen leaves it out)
    configs: record.configs.flatMap((config) =>
      config.baseline === null || config.eager === null
        ? []
        : [
            {
              config: config.name,
              floorMs: config.floorMs,
              launchBound: config.launchBound,
              eager: spread(config.eager),
              compile: config.compile === null ? null : spread(config.compile),
              baseline: spread(config.baseline),
              candidate: config.candidate === null ? null : spread(config.candidate),
            },
          ],
    ),
    ...phasesOf(record.phases),
  };
}

function spread(stat: Stat): Spread {
  return { medianMs: stat.medianMs, p20Ms: stat.p20Ms, p80Ms: stat.p80Ms };
}

function tail(message: string): string {
  return message.length <= MESSAGE_LIMIT ? message : `…${message.slice(-MESSAGE_LIMIT)}`;
}
