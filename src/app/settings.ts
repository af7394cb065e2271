// The app's settings from its environment (the operator's, not a repository's): the local
// backend, the queue's width, the job timeout. A repository's own options are in
// .github/evokernel.yml (src/shared/config.ts).
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Dispatcher } from "./dispatch/types.js";

export interface AppSettings {
  /** Webhook work items at once. */
  readonly concurrency: number;
  readonly jobTimeoutMs: number;
  /** Present when the operator enabled local runs (EVOKERNEL_LOCAL_REPO). */
  readonly local?: {
    repoDir: string;
    runnerCommand: readonly string[];
    gpus: number;
    /** GPUs one job searches over (EVOKERNEL_GPUS_PER_JOB); gpus / gpusPerJob jobs at once. */
    gpusPerJob?: number;
    timeoutMs: number;
    keepDir?: string;
    /** Each local job's record from dispatch to end (EVOKERNEL_LOCAL_STATE). */
    stateDir?: string;
  };
  /** EVOKERNEL_DISPATCH=local: every repository's jobs run locally (a single GPU box). */
  readonly forceLocal: boolean;
  /**
   * The nightly tick (src/app/nightly-scheduler.ts): how often, and how late a missed
   * window still runs. On unless EVOKERNEL_NIGHTLY=off; absent in tests, which tick by hand.
   */
  readonly nightly?: { tickMs: number; graceMs: number };
  /**
   * Start-up recovery (jobs/recover.ts): the app's own open check runs concluded past their
   * deadline. On unless EVOKERNEL_RECOVER=off; absent in tests, which call it by hand.
   */
  readonly recover?: { appId?: number };
  /** After a failed attempt to conclude a check run, the next one this much later. */
  readonly retryEndMs?: number;
  /** EVOKERNEL_MAX_JOBS_PER_INSTALLATION: jobs an installation may have running at once. */
  readonly maxJobsPerInstallation?: number;
  /** The App's id (APP_ID): a check run of another app is never taken for one of ours. */
  readonly appId?: number;
  /** Where GitHub is (GHE_HOST, GHE_PROTOCOL): what an error at start says to check. */
  readonly gitHub?: { GHE_HOST?: string; GHE_PROTOCOL?: string };
  /** The app's bot login (`<slug>[bot]`); asked of GitHub (GET /app) when absent. */
  readonly botLogin?: string;
  /**
   * The secret values the app holds, redacted from everything it posts from a job
   * (redact.ts); by default gathered from the environment, .env and the key file.
   */
  readonly secrets?: readonly string[];
  /** A replacement for the actions backend (tests). */
  readonly actions?: Dispatcher;
}

export function appSettings(env: NodeJS.ProcessEnv): AppSettings {
  const jobTimeoutMs = positive(env.EVOKERNEL_JOB_TIMEOUT_MIN, 120) * 60_000;
  const repoDir = env.EVOKERNEL_LOCAL_REPO;
  return {
    concurrency: positive(env.EVOKERNEL_CONCURRENCY, 16),
    jobTimeoutMs,
    forceLocal: env.EVOKERNEL_DISPATCH === "local",
    gitHub: {
      ...(env.GHE_HOST ? { GHE_HOST: env.GHE_HOST } : {}),
      ...(env.GHE_PROTOCOL ? { GHE_PROTOCOL: env.GHE_PROTOCOL } : {}),
    },
    ...(env.EVOKERNEL_BOT_LOGIN ? { botLogin: env.EVOKERNEL_BOT_LOGIN } : {}),
    ...(Number(env.APP_ID) > 0 ? { appId: Number(env.APP_ID) } : {}),
    ...(env.EVOKERNEL_MAX_JOBS_PER_INSTALLATION
      ? { maxJobsPerInstallation: positive(env.EVOKERNEL_MAX_JOBS_PER_INSTALLATION, 100) }
      : {}),
    ...(env.EVOKERNEL_RECOVER === "off"
      ? {}
      : { recover: Number(env.APP_ID) > 0 ? { appId: Number(env.APP_ID) } : {} }),
    ...(env.EVOKERNEL_NIGHTLY === "off"
      ? {}
      : {
          nightly: {
            tickMs: positive(env.EVOKERNEL_NIGHTLY_TICK_S, 60) * 1000,
            graceMs: positive(env.EVOKERNEL_NIGHTLY_GRACE_H, 6) * 3_600_000,
          },
        }),
    ...(repoDir
      ? {
          local: {
            repoDir,
            runnerCommand: runnerCommand(env.EVOKERNEL_RUNNER_CMD),
            gpus: positive(env.EVOKERNEL_GPUS, 1),
            gpusPerJob: positive(env.EVOKERNEL_GPUS_PER_JOB, 1),
            timeoutMs: jobTimeoutMs,
            ...(env.EVOKERNEL_RESULT_DIR ? { keepDir: env.EVOKERNEL_RESULT_DIR } : {}),
            stateDir: env.EVOKERNEL_LOCAL_STATE || defaultStateDir(repoDir),
          },
        }
      : {}),
  };
}

/** One folder per clone, for the records of its local jobs (the next process reads them). */
function defaultStateDir(repoDir: string): string {
  const key = createHash("sha256").update(resolve(repoDir)).digest("hex").slice(0, 12);
  return join(tmpdir(), `evokernel-local-${key}`);
}

/** EVOKERNEL_RUNNER_CMD as a JSON array or words; by default this checkout's runner. */
export function runnerCommand(text: string | undefined): string[] {
  if (text !== undefined && text.trim() !== "") {
    if (text.trim().startsWith("[")) {
      const parsed: unknown = JSON.parse(text);
      if (Array.isArray(parsed) && parsed.every((item) => typeof item === "string")) return parsed;
      throw new Error(
        "EVOKERNEL_RUNNER_CMD: a JSON array of strings, or words separated by spaces",
      );
    }
    return text.trim().split(/\s+/);
  }
  return [process.execPath, defaultRunner(), "job"];
}

/** The runner beside the app: dist/evokernel.mjs next to a bundle, else bin/evokernel.js. */
function defaultRunner(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 5; depth++) {
    for (const candidate of [join(dir, "evokernel.mjs"), join(dir, "bin", "evokernel.js")]) {
      if (existsSync(candidate)) return candidate;
    }
    dir = dirname(dir);
  }
  return "bin/evokernel.js";
}

function positive(text: string | undefined, fallback: number): number {
  const value = Number(text);
  return text !== undefined && Number.isFinite(value) && value > 0 ? value : fallback;
}
