// The nightly job: an optimize job on the default branch's head, over the configured tasks,
// with the nightly budget and proposer. The same kind of job `/optimize` dispatches, through
// the same startJob and dispatchers, read back by the same workflow_run handler; only its id
// says it is the night's, so the report adds the nightly pull request after the check run.
import { randomBytes } from "node:crypto";
import type { EvokernelConfig } from "../../shared/config.js";
import type { JobSpec } from "../../shared/job.js";
import { taskFolder } from "../../shared/task-id.js";
import type { RepoRef } from "../github.js";
import { resolveTaskNames } from "../planner.js";

/** `optimize-nightly-<sha7>-<hex>`: the shape parseExternalId reads back after a restart. */
export function nightlyJobId(sha: string): string {
  return `optimize-nightly-${sha.slice(0, 7)}-${randomBytes(3).toString("hex")}`;
}

export function isNightlyJob(spec: JobSpec): boolean {
  return (
    spec.kind === "optimize" && spec.pr === undefined && spec.id.startsWith("optimize-nightly-")
  );
}

export function nightlySpec(repo: RepoRef, config: EvokernelConfig, sha: string): JobSpec {
  const nightly = config.nightly;
  const names =
    nightly === undefined || nightly.tasks === "all"
      ? []
      : resolveTaskNames(config.tasks, nightly.tasks);
  // The runner selects named tasks by path; a glob it reads only as a root to look under.
  const globbed = names.some((name) => /[*?[]/.test(name));
  const tasks = globbed ? [] : names;
  const roots = globbed ? names.map(taskFolder) : [...config.tasks];
  return {
    schema: 1,
    id: nightlyJobId(sha),
    kind: "optimize",
    repo: { owner: repo.owner, name: repo.repo },
    sha,
    // Empty: every task under the roots (a job without a base reviews them all).
    tasks,
    roots,
    budget: { ...(nightly?.budget ?? config.budget) },
    proposer: nightly?.proposer ?? config.proposer,
    ...(config.model === undefined ? {} : { model: config.model }),
    regressionThreshold: config.regressionThreshold,
    ...(config.thresholds === undefined ? {} : { thresholds: [...config.thresholds] }),
  };
}
