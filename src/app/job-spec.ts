// Job specs as the app builds them, from a PR's commits, the repository's config and who
// asked: one builder for pull_request events, commands and re-runs, so a job means the same
// whichever way it started.
import type { EvokernelConfig } from "../shared/config.js";
import type { JobKind, JobSpec } from "../shared/job.js";
import type { RepoRef } from "./github.js";
import { newJobId } from "./job-registry.js";

export interface SpecInput {
  readonly kind: JobKind;
  readonly repo: RepoRef;
  readonly pull: { readonly number: number; readonly headSha: string; readonly baseSha: string };
  readonly config: EvokernelConfig;
  readonly tasks: readonly string[];
  readonly requestedBy: string;
  /** `/optimize --budget N`: candidates instead of the config's. */
  readonly candidates?: number;
  readonly proposer?: "llm" | "tuner";
  /** The webhook delivery (or comment) that asked for the job: its id is derived from it. */
  readonly seed?: string;
}

export function buildJobSpec(input: SpecInput): JobSpec {
  const { kind, config, pull } = input;
  // A review searches too when the config says so; an optimize job always does.
  const searches = kind === "optimize" || (kind === "review" && config.pullRequests === "optimize");
  const budget = {
    ...config.budget,
    ...(input.candidates === undefined ? {} : { candidates: input.candidates }),
  };
  return {
    schema: 1,
    id: newJobId(kind, pull.number, pull.headSha, input.seed),
    kind,
    repo: { owner: input.repo.owner, name: input.repo.repo },
    sha: pull.headSha,
    ...(kind === "verify" ? {} : { baseSha: pull.baseSha }),
    pr: pull.number,
    // Sorted and once each: the same set of tasks is the same concurrency group
    // (jobs/concurrency.ts), on the app and in the workflow.
    tasks: [...new Set(input.tasks)].sort(),
    roots: [...config.tasks],
    ...(config.paths === undefined ? {} : { paths: [...config.paths] }),
    ...(searches
      ? {
          ...(kind === "review" ? { optimize: true } : {}),
          budget,
          proposer: input.proposer ?? config.proposer,
        }
      : {}),
    ...(config.model === undefined ? {} : { model: config.model }),
    regressionThreshold: config.regressionThreshold,
    ...(config.thresholds === undefined ? {} : { thresholds: [...config.thresholds] }),
    runner: [...config.runner],
    requestedBy: input.requestedBy,
  };
}
