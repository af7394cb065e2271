// Builders for proposer tests: individuals, evaluations and proposal contexts.
import type {
  ConfigTiming,
  Evaluation,
  Individual,
  ProposalContext,
} from "../../../runner/src/evolve/types.js";

export function evaluation(fitness: number | null, extra: Partial<Evaluation> = {}): Evaluation {
  return {
    ok: fitness !== null,
    stage: fitness === null ? "verify" : "done",
    reason: fitness === null ? "mismatch" : null,
    message: fitness === null ? "mismatch at [3, 7]" : "",
    timings: [],
    fitness,
    profile: null,
    seconds: { compile: 1, verify: 1, time: 1 },
    ...extra,
  };
}

export function individual(
  id: string,
  source: string,
  fitness: number | null,
  extra: Partial<Individual> = {},
): Individual {
  return {
    id,
    hash: `hash-${id}`,
    source,
    defines: {},
    flags: [],
    parents: [],
    insight: "",
    proposer: "test",
    evaluation: evaluation(fitness),
    ...extra,
  };
}

export function timing(config: string, medianMs: number, baselineMs: number): ConfigTiming {
  return {
    config,
    medianMs,
    p20Ms: medianMs * 0.98,
    p80Ms: medianMs * 1.02,
    baselineMs,
    baselineP20Ms: baselineMs * 0.98,
    baselineP80Ms: baselineMs * 1.02,
  };
}

export function context(best: Individual, extra: Partial<ProposalContext> = {}): ProposalContext {
  return {
    task: {
      name: "softmax",
      reference: "import torch\n\ndef forward(x):\n    return torch.softmax(x, dim=-1)\n",
      visibleConfigs: [
        { name: "8192x8192", dims: { M: 8192, N: 8192 } },
        { name: "odd-4097x5003", dims: { M: 4097, N: 5003 } },
      ],
      format: "evk",
      gpu: "NVIDIA H100 80GB HBM3",
      cuda: "13.0",
    },
    config: "free",
    best,
    parents: [],
    operator: "new",
    insights: [],
    lastFailure: null,
    techniques: "Memory: coalescing; vectorised loads. Compute: warp shuffles.",
    seed: 1,
    ...extra,
  };
}
