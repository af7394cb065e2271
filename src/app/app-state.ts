// What the handlers share: the work queue, the memory of what was already handled, the live
// jobs, the dispatch backends and how to reach GitHub for an installation. One object,
// built once per app (src/app/index.ts), so a test can build its own.
import type { Logger } from "probot";
import type { EvokernelConfig } from "../shared/config.js";
import type { Dispatcher } from "./dispatch/types.js";
import type { GitHub, RepoRef } from "./github.js";
import type { EarlyRuns } from "./early-runs.js";
import type { JobRegistry } from "./job-registry.js";
import type { WorkQueue } from "./queue.js";
import type { Redactor } from "./redact.js";
import type { SeenSet } from "./seen.js";

export interface AppState {
  readonly queue: WorkQueue;
  readonly seen: SeenSet;
  readonly jobs: JobRegistry;
  /** Runs that ended before their job was registered, handled again when it is. */
  readonly earlyRuns: EarlyRuns;
  readonly log: Logger;
  /** The backend for a repository's config, or why none may run there. */
  dispatcherFor(config: Pick<EvokernelConfig, "dispatch">): Dispatcher | string;
  /** Every backend, to cancel a job whichever started it. */
  readonly dispatchers: readonly Dispatcher[];
  /** A GitHub for an installation outside a webhook (a local job finishing, a timeout). */
  githubFor(installationId: number, repo: RepoRef): Promise<GitHub>;
  /** The App's id, when known: only its own check runs are matched to results. */
  readonly appId?: number;
  /** A job whose run never reports fails after this long. */
  readonly jobTimeoutMs: number;
  /** After a failed attempt to conclude a check run, the next one this much later. */
  readonly retryEndMs?: number;
  /**
   * Every string the app posts from a job goes through it (redact.ts): the secrets the app
   * holds, replaced. Without it, secrets are found by their shape only.
   */
  readonly redact?: Redactor;
  /** Jobs an installation may have running at once (job-registry.ts's default otherwise). */
  readonly maxJobsPerInstallation?: number;
}
