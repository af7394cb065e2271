// The contract of the evolution loop (issue 3): what a proposer is given, what it returns,
// and what the evaluator says of a candidate. Proposers (llm, tuner, …) implement
// `Proposer`; a new one is one new file in runner/src/proposers.
import type { CandidateFormat } from "#shared/contract/formats.js";
import type { Spread } from "#shared/result.js";
import type { Race } from "../harness/client.js";

export type { Spread } from "#shared/result.js";
export type { Race } from "../harness/client.js";

/** Timing of one configuration, in milliseconds (median and spread as the harness reports). */
export type ConfigTiming = {
  config: string;
  medianMs: number;
  p20Ms: number;
  p80Ms: number;
  /** The baseline kernel timed in the same process, interleaved. */
  baselineMs: number;
  baselineP20Ms: number;
  baselineP80Ms: number;
  /** The reference runs under 20 µs a call here: out of the fitness (noise.ts). */
  launchBound?: boolean | undefined;
  /** The configuration's roofline floor, as the screen computed it (absent: not known). */
  floorMs?: number | undefined;
};

/** What a candidate's evaluation produced: a verdict, and timings when it passed. */
export type Evaluation = {
  ok: boolean;
  /** Which stage ended it: static, compile, quick (smallest configuration), verify, time. */
  stage: "static" | "compile" | "quick" | "verify" | "time" | "done";
  reason: string | null;
  /** Compiler or verifier message for a failed child: shown to the next proposal. */
  message: string;
  timings: ConfigTiming[];
  /** Geometric mean over visible configurations of baseline / candidate median: fitness. */
  fitness: number | null;
  /** A short profile of the candidate (top kernels by time), when the GPU allows. */
  profile: string | null;
  seconds: { compile: number; verify: number; time: number };
  /**
   * The GPU (its CUDA_VISIBLE_DEVICES id) whose lane verified and timed it, in a search over
   * several GPUs (gpu/lanes.ts); absent on one GPU, or where it never reached the GPU.
   */
  gpu?: string | undefined;
  /** Where the timing step's seconds went, as the harness measured them (absent: not timed). */
  timePhases?: Record<string, number> | undefined;
  /**
   * Where the verification steps' seconds went: the quick check on the smallest configuration
   * and the full one, each a harness child of its own (absent: not verified, or a harness
   * that does not say).
   */
  verifyPhases?:
    | { quick?: Record<string, number> | undefined; full?: Record<string, number> | undefined }
    | undefined;
  /**
   * The screen stopped timing it: after `config`, the most it could still reach over every
   * configuration (`speedupUpper`: its most favourable speedup on those in `timed`, the most
   * a kernel could gain on the rest) was under the leader's least favourable one
   * (`leaderLower`). It passed verification (ok) but has no fitness: it is no contender, so
   * the configurations after `config` were not timed.
   */
  raced?:
    | {
        config: string;
        timed: string[];
        speedupUpper: number;
        leaderLower: number;
      }
    | undefined;
};

/** A kernel in the population: source, where it came from, and how it did. */
export type Individual = {
  id: string;
  /**
   * sha256 of the normalised source (comments and blank space removed), and of the defines
   * when there are any: the dedup key (see fingerprint.ts).
   */
  hash: string;
  source: string;
  /** Compile-time defines (-D) the tuner chose; empty for LLM proposals. */
  defines: Record<string, string>;
  /** Precision-keeping nvcc flags the tuner chose (proposers/compile-flags.ts); usually empty. */
  flags: string[];
  parents: string[];
  /** The proposer's one-paragraph "thought": why the kernel is written this way. */
  insight: string;
  proposer: string;
  evaluation: Evaluation;
};

/** EvoEngineer's three published configurations (see README: the default and why). */
export type EvoConfig = "free" | "insight" | "full";

/** What a proposer may see. Never held-out configurations, never text from a pull request. */
export type ProposalContext = {
  task: {
    name: string;
    reference: string; // source of the PyTorch reference
    visibleConfigs: {
      name: string;
      dims: Record<string, number>;
      /** The inputs' shapes, in order (absent where the task was not inspected). */
      shapes?: number[][];
    }[];
    format: CandidateFormat;
    gpu: string;
    cuda: string;
  };
  config: EvoConfig;
  best: Individual;
  /** Parents chosen by rank (full: 1 for mutation, 2 for crossover). */
  parents: Individual[];
  operator: "new" | "mutation" | "crossover";
  /** Insights sampled from the population (insight and full configurations). */
  insights: string[];
  /** The last failed child's message, so the next proposal can fix it. */
  lastFailure: { source: string; reason: string | null; message: string } | null;
  techniques: string;
  /** Deterministic per proposal under --seed. */
  seed: number;
  /**
   * Proposals the candidate budget allows after this one (absent: no such limit known); the
   * time or money budget may end the search sooner.
   */
  left?: number;
};

export type Proposal = {
  source: string;
  defines: Record<string, string>;
  insight: string;
  name: string;
  /** Precision-keeping nvcc flags (the tuner; see proposers/compile-flags.ts). */
  flags?: string[];
};

/** What is built and checked: a source with the -D values and nvcc flags it is built with. */
export type Variant = {
  source: string;
  defines: Readonly<Record<string, string>>;
  flags: readonly string[];
};

/** Tokens and money a proposal cost (zero for offline proposers). */
export type Usage = {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  usd: number;
};

/** What an offline proposal (or an unused slot) costs. */
export const ZERO_USAGE: Usage = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  usd: 0,
};

/** A proposal, or a record of why there is none (an unusable reply is data, not an error). */
export type ProposalResult =
  | { ok: true; proposal: Proposal; usage: Usage }
  | {
      ok: false;
      reason: string;
      message: string;
      usage: Usage;
      /** The proposer has nothing more to offer (the tuner's space is spent): stop the search. */
      final?: boolean;
    };

export type Proposer = {
  name: string;
  /**
   * false: the search must time every candidate on every configuration (the shape-keyed
   * tuner judges each class of configurations on its own, so one that loses on the first may
   * win on the others); otherwise candidates slower than the leader are raced out.
   */
  racing?: boolean;
  propose(context: ProposalContext, signal?: AbortSignal): Promise<ProposalResult>;
  /**
   * Optional: told of every evaluated candidate, failed ones and duplicates included (the
   * tuner learns fitness from it; without it, only from context.best and parents). The
   * engine calls it in proposal order, for candidate k just before proposal k + parallel is
   * asked (the first whose context holds k; the rest once the search ends), and for the
   * archive's candidates when a run resumes, so what a proposer learns does not depend on
   * timing.
   */
  observe?(individual: Individual): void;
};

/**
 * Evaluates one candidate source (cascade: static → compile → quick → verify → time).
 * `race`: what the leader reached on each configuration (noise.ts's lower bound of one
 * configuration) and how far from the floor the kernel to beat is there; a candidate that can
 * no longer reach the leader over every configuration stops being timed (Evaluation.raced).
 * Absent: every configuration is timed.
 */
export type Evaluator = {
  evaluate(
    variant: Variant,
    signal?: AbortSignal,
    race?: Race,
    /** Its place in the GPU queue (the proposal number): lower first. */
    order?: number,
  ): Promise<Evaluation>;
};

/** When the search stops: whichever runs out first. */
export type Budget = {
  /** Proposals, each counted once whatever became of it (failed, duplicate, evaluated). */
  candidates: number;
  /** Wall time of the search, over every run that resumed the same archive. */
  seconds: number;
  /** Money spent on proposals (Usage.usd). */
  usd: number;
};

/** Milliseconds since some fixed point; tests pass a fake that they move by hand. */
export type Clock = { now(): number };

/** The final verification of a winner: every configuration, held-out ones included. */
export type FinalVerification = {
  ok: boolean;
  status: string;
  reason: string | null;
  message: string;
  configs: { name: string; heldout: boolean; ok: boolean; reason: string | null }[];
  /** The harness's seconds in each part of the run (its record's phases), when it said. */
  phases?: Readonly<Record<string, number>>;
};

/** One configuration of the final timing: all four interleaved in one process. */
export type FinalConfigTiming = {
  config: string;
  floorMs: number;
  /** The reference runs under 20 µs a call here: timed, but out of the headline speedup. */
  launchBound: boolean;
  eager: Spread;
  compile: Spread | null;
  baseline: Spread;
  /** Null when only the baseline was timed. */
  candidate: Spread | null;
};

export type FinalTiming = {
  ok: boolean;
  reason: string | null;
  message: string;
  configs: FinalConfigTiming[];
  /** The harness's seconds in each part of the bench (its record's phases), when it said. */
  phases?: Readonly<Record<string, number>>;
};

/** The last word on a winner, before it is called one (torch.compile timed this once). */
export type Rechecker = {
  verify(variant: Variant, signal?: AbortSignal): Promise<FinalVerification>;
  /** Times the candidate (null: the baseline alone) beside the baseline, eager and compile. */
  time(variant: Variant | null, signal?: AbortSignal): Promise<FinalTiming>;
  /**
   * Whether a timing started now would first wait for something else to end (the reference's
   * own timing, whose torch.compile runs GPU work outside the GPU's lock and must not overlap
   * a final timing): then the first contender's verification fills the wait.
   */
  timingWaits?(): boolean;
  /**
   * Whether a verification runs on another GPU than the timings (a search over several GPUs:
   * the timings on the first, the verification on another lane): then each contender is
   * verified beside its timing, not after it.
   */
  verifiesAside?(): boolean;
};
