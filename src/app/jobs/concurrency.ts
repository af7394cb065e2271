// Which jobs may run side by side and which one replaces another, for both backends: one
// group per kind, pull request and set of tasks. Two commands on different tasks of one PR
// run side by side; a later job of the same group supersedes the earlier (the app cancels
// it before dispatching the new one, and the example workflow's `concurrency` group, built
// from the same spec fields, cancels it on Actions too); a push supersedes every job of the
// old head (jobs/stop.ts). test/app/jobs/concurrency.test.ts checks the workflow against this.
import type { JobSpec } from "../../shared/job.js";
import type { ActiveJob } from "../job-registry.js";

/**
 * The group a job belongs to, exactly as action/example-workflow.yml's `concurrency.group`
 * evaluates on its spec: `evokernel-<kind>-<pr or job id>-<tasks, comma-joined>`. The spec's
 * tasks are sorted (job-spec.ts), so the same set names the same group.
 */
export function concurrencyGroup(spec: Pick<JobSpec, "kind" | "pr" | "id" | "tasks">): string {
  return `evokernel-${spec.kind}-${spec.pr ?? spec.id}-${spec.tasks.join(",")}`;
}

/** The live jobs that `spec` supersedes: same group, another job. */
export function supersededBy(jobs: readonly ActiveJob[], spec: JobSpec): ActiveJob[] {
  const group = concurrencyGroup(spec);
  return jobs.filter((job) => job.spec.id !== spec.id && concurrencyGroup(job.spec) === group);
}
