// Stand-ins for the engine's seams: a proposer whose proposals follow from the context it is
// given (so two runs with the same seed get the same proposals), an evaluator that reads a
// candidate's fate from its source, a clock moved by hand, and a rechecker.
import type {
  Clock,
  Evaluation,
  Evaluator,
  FinalConfigTiming,
  FinalTiming,
  FinalVerification,
  Individual,
  ProposalContext,
  ProposalResult,
  Proposer,
  Rechecker,
  Usage,
} from "../../../runner/src/evolve/types.js";

export function fakeClock(): Clock & { advance(seconds: number): void } {
  let ms = 1_000;
  return {
    now: () => ms,
    advance(seconds) {
      ms += seconds * 1000;
    },
  };
}

export function usage(usd = 0): Usage {
  return { inputTokens: 100, outputTokens: 50, cacheReadTokens: 10, cacheWriteTokens: 5, usd };
}

/**
 * Sources say what becomes of them: `speed=1.25` is the fitness, `fail=verify` fails at
 * that stage. Each evaluation takes `seconds` of the fake clock.
 */
export function fakeEvaluator(clock?: ReturnType<typeof fakeClock>, seconds = 0) {
  const evaluated: string[] = [];
  const evaluator: Evaluator = {
    async evaluate({ source }) {
      evaluated.push(source);
      await Promise.resolve();
      clock?.advance(seconds);
      return evaluationOf(source);
    },
  };
  return { evaluator, evaluated };
}

export function evaluationOf(source: string): Evaluation {
  const failed = /fail=(\w+)/.exec(source)?.[1];
  const seconds = { compile: 1, verify: 2, time: 3 };
  if (failed !== undefined) {
    return {
      ok: false,
      stage: failed as Evaluation["stage"],
      reason: failed === "compile" ? "compile-error" : "mismatch",
      message: `failed at ${failed}`,
      timings: [],
      fitness: null,
      profile: null,
      seconds,
    };
  }
  const fitness = Number(/speed=([\d.]+)/.exec(source)?.[1] ?? "1");
  return {
    ok: true,
    stage: "done",
    reason: null,
    message: "",
    timings: [
      {
        config: "odd",
        medianMs: 1 / fitness,
        p20Ms: 0.99 / fitness,
        p80Ms: 1.01 / fitness,
        baselineMs: 1,
        baselineP20Ms: 0.99,
        baselineP80Ms: 1.01,
        floorMs: 0.25,
      },
    ],
    fitness,
    profile: null,
    seconds,
  };
}

/**
 * Proposes from the context alone: the speed is the best's times a factor drawn from the
 * proposal's seed, and one proposal in six fails verification. Records every context.
 */
export function fakeProposer(
  options: {
    usd?: number;
    /** Throws on this call (1-based): a crash in the middle of a run. */
    crashOn?: number;
    propose?: (context: ProposalContext, call: number) => ProposalResult;
  } = {},
) {
  const contexts: ProposalContext[] = [];
  let calls = 0;
  const proposer: Proposer = {
    name: "fake",
    async propose(context) {
      calls += 1;
      const call = calls;
      contexts.push(context);
      await Promise.resolve();
      if (options.crashOn === call) throw new Error("the proposer crashed");
      if (options.propose !== undefined) return options.propose(context, call);
      return { ok: true, proposal: proposalFor(context), usage: usage(options.usd ?? 0.1) };
    },
  };
  return { proposer, contexts, calls: () => calls };
}

export function proposalFor(context: ProposalContext) {
  const base = Math.max(...[context.best, ...context.parents].map(fitnessOf));
  const factor = 0.85 + (context.seed % 1000) / 2500; // 0.85 … 1.25
  const speed = (base * factor).toFixed(4);
  const fail = context.seed % 6 === 0 ? " fail=verify" : "";
  return {
    name: `k${context.seed}`,
    source: `// ${context.operator}\n__global__ void k${context.seed}() {} // speed=${speed}${fail}\n`,
    defines: {},
    flags: [],
    insight: `insight of ${context.seed}`,
  };
}

function fitnessOf(individual: Individual): number {
  return individual.evaluation.fitness ?? 1;
}

export const task: ProposalContext["task"] = {
  name: "softmax",
  reference: "def forward(x): return x.softmax(-1)",
  visibleConfigs: [
    { name: "8192x8192", dims: { M: 8192, N: 8192 } },
    { name: "odd-4097x5003", dims: { M: 4097, N: 5003 } },
  ],
  format: "evk",
  gpu: "NVIDIA H100 80GB HBM3",
  cuda: "12.8",
};

export const BASELINE = "__global__ void softmax() {} // speed=1\n";

/** One configuration's final timing: the baseline at 1 ms, the candidate as given. */
export function finalConfig(
  config: string,
  candidate: { medianMs: number; p20Ms: number; p80Ms: number } | null,
): FinalConfigTiming {
  return {
    config,
    floorMs: 0.25,
    launchBound: false,
    eager: { medianMs: 2, p20Ms: 1.9, p80Ms: 2.1 },
    compile: { medianMs: 1.5, p20Ms: 1.45, p80Ms: 1.55 },
    baseline: { medianMs: 1, p20Ms: 0.95, p80Ms: 1.05 },
    candidate,
  };
}

export function fakeRechecker(
  verdicts: {
    verify?: (source: string) => FinalVerification;
    time?: (source: string | null) => FinalTiming;
  } = {},
) {
  const calls: string[] = [];
  const rechecker: Rechecker = {
    async verify({ source }) {
      calls.push(`verify ${source.trim()}`);
      await Promise.resolve();
      return (
        verdicts.verify?.(source) ?? {
          ok: true,
          status: "passed",
          reason: null,
          message: "passed",
          configs: [
            { name: "8192x8192", heldout: false, ok: true, reason: null },
            { name: "tall-12289x999", heldout: true, ok: true, reason: null },
          ],
        }
      );
    },
    async time(candidate) {
      calls.push(`time ${candidate === null ? "baseline" : candidate.source.trim()}`);
      await Promise.resolve();
      const speed = Number(/speed=([\d.]+)/.exec(candidate?.source ?? "")?.[1] ?? "1");
      return (
        verdicts.time?.(candidate?.source ?? null) ?? {
          ok: true,
          reason: null,
          message: "",
          configs: [
            finalConfig(
              "8192x8192",
              candidate === null
                ? null
                : { medianMs: 1 / speed, p20Ms: 0.98 / speed, p80Ms: 1.02 / speed },
            ),
          ],
        }
      );
    },
  };
  return { rechecker, calls };
}
