// A job from its spec to its result: plan the tasks from the two commits, then review each
// on this machine's GPU. `evokernel job` (the GitHub Action, the app's local backend) and
// `evokernel review` both come through here.
import { join } from "node:path";
import { DEFAULT_CONFIG } from "#shared/config.js";
import type { JobSpec } from "#shared/job.js";
import { reproductionOf, type ReviewResult, type TaskReview } from "#shared/review.js";
import { NO_GPU, type Session } from "../pipeline/session.js";
import { EnvironmentError } from "../errors.js";
import type { CascadeEvent } from "../cascade.js";
import type { Git } from "../git.js";
import { packageVersion } from "../paths.js";
import { optimizeHead, type Optimizer } from "./optimize-head.js";
import { planJob, type Plan } from "./plan.js";
import { needsGpu, quietReview, reviewTask } from "./review-task.js";
import { allowRead, sandboxMode, shareWithSandbox } from "../sandbox/sandbox.js";
import { makeFolder, makeTempFolder, removeAll } from "../workspace/files.js";

export const DEFAULT_THRESHOLD = 3;

export type JobOptions = {
  git: Git;
  /** Opens the harness (a fork server) only when there is GPU work to do. */
  openSession: <T>(work: (session: Session) => Promise<T>) => Promise<T>;
  say: (line: string) => void;
  onEvent: (event: CascadeEvent) => void;
  optimizer?: Optimizer;
  /** Told the plan before any GPU work (review prints the tasks it found). */
  onPlan?: (plan: Plan) => void;
};

export async function runJob(spec: JobSpec, options: JobOptions): Promise<ReviewResult> {
  const startedAt = new Date().toISOString();
  const work = await makeJobFolder();
  try {
    const plan = await planJob(options.git, spec, work);
    // The tasks as checked out, and the search's candidates beside them: read-only inside.
    allowRead(work);
    options.onPlan?.(plan);
    const threshold = spec.regressionThreshold ?? DEFAULT_THRESHOLD;
    const runUnchanged = spec.kind !== "review";
    const gpuTasks = plan.tasks.filter((task) => needsGpu(task, runUnchanged));
    if (gpuTasks.length === 0) {
      return finish(spec, threshold, plan.tasks.map(quietReview), noDevice(), startedAt);
    }
    return await options.openSession(async (session) => {
      if (!session.device.cuda) {
        const names = gpuTasks.map((task) => task.path).join(", ");
        throw new EnvironmentError(
          `found ${gpuTasks.length} task(s) to check (${names}), but ${NO_GPU}`,
        );
      }
      const tasks: TaskReview[] = [];
      for (const [index, task] of plan.tasks.entries()) {
        if (!needsGpu(task, runUnchanged)) {
          tasks.push(quietReview(task));
          continue;
        }
        const folder = join(work, "tasks", String(index));
        await makeFolder(folder);
        tasks.push(
          await reviewTask(task, {
            session,
            bench: spec.kind !== "verify",
            optimize: wantsOptimize(spec)
              ? {
                  optimizer: options.optimizer ?? optimizeHead,
                  budget: spec.budget ?? budgetOf(),
                  proposer: spec.proposer ?? "auto",
                  model: spec.model,
                  seed: spec.seed,
                }
              : null,
            // the config's rules per task and configuration refine the threshold
            threshold: { regression: threshold, win: 0, rules: spec.thresholds ?? [] },
            work: folder,
            say: options.say,
            onEvent: options.onEvent,
          }),
        );
      }
      const { device } = session.device;
      return finish(
        spec,
        threshold,
        tasks,
        {
          gpu: device.name,
          driver: device.driver,
          cuda: device.cuda,
          torch: device.torch,
          python: device.python,
          evokernel: packageVersion(),
          sandbox: sandboxMode(),
        },
        startedAt,
      );
    });
  } finally {
    await removeAll(work);
  }
}

/**
 * The job's folder (the two commits' task files, the search's candidates): a temporary folder,
 * which is 0700 and the runner's, shared with the sandbox's user, which reads it.
 */
export async function makeJobFolder(): Promise<string> {
  const work = await makeTempFolder("evokernel-job-");
  shareWithSandbox(work);
  return work;
}

/** The device of a job that ran nothing on one. */
function noDevice(): ReviewResult["device"] {
  return {
    gpu: "none (nothing to run)",
    driver: null,
    cuda: null,
    torch: "",
    python: "",
    evokernel: packageVersion(),
  };
}

function wantsOptimize(spec: JobSpec): boolean {
  if (spec.kind === "optimize") return true;
  return spec.kind === "review" && spec.optimize === true;
}

function budgetOf() {
  const { candidates, minutes, usd } = DEFAULT_CONFIG.budget;
  return { candidates, minutes, usd };
}

function finish(
  spec: JobSpec,
  threshold: number,
  tasks: TaskReview[],
  device: ReviewResult["device"],
  startedAt: string,
): ReviewResult {
  return {
    schema: 1,
    kind: "review",
    job: spec,
    threshold,
    // each verdict with the line that reproduces it (src/shared/reproduce.ts)
    tasks: tasks.map((task) => ({
      ...task,
      reproduce: reproductionOf(task, device.evokernel, spec),
    })),
    device,
    startedAt,
    finishedAt: new Date().toISOString(),
  };
}
