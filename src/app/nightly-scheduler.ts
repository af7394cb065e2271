// The nightly clock, with no database: every app instance ticks (once a minute), computes
// for each installed repository the latest due window of its `nightly.schedule` (cron, UTC)
// within a grace period, and claims the window on GitHub itself: a commit on the state
// branch `evokernel-state` that records it, moved only as a fast-forward from the commit
// read (state-branch.ts), so exactly one instance wins a window however many tick (the others get
// GitHub's 422, or read that it is claimed); an instance that was down when a window came
// catches it up on its next tick if the grace period has not passed, and a window already
// claimed before a restart is not run again. The winner starts the night's optimize job.
import { parseConfig, type EvokernelConfig } from "../shared/config.js";
import type { AppState } from "./app-state.js";
import type { GitHub, InstalledRepo } from "./github.js";
import { startJob } from "./jobs/start.js";
import { latestRun, parseCron } from "../shared/cron.js";
import { nightlySpec } from "./nightly/spec.js";
import { claimWindow } from "./state-branch.js";

/** How late a window may still run: a restart within this catches up, a longer outage skips. */
export const DEFAULT_GRACE_MS = 6 * 3_600_000;

/**
 * How long the installed repositories and each one's nightly config are reused between
 * ticks: reading them every minute would cost an organisation with hundreds of
 * repositories more than its 5,000 requests an hour; an edited schedule counts within this.
 */
export const DEFAULT_CACHE_MS = 10 * 60_000;

export interface NightStart {
  readonly github: GitHub;
  readonly config: EvokernelConfig;
  readonly installationId: number;
  readonly defaultBranch: string;
  readonly sha: string;
  readonly window: Date;
}

export interface SchedulerDeps {
  listRepos(): Promise<InstalledRepo[]>;
  githubFor(installationId: number, repo: InstalledRepo["repo"]): Promise<GitHub>;
  /** Starts the night's job; by default through startJob, as `/optimize` does. */
  start(night: NightStart): Promise<void>;
  now(): Date;
  readonly graceMs: number;
  /** What this instance has already tried (a window is tried once per instance). */
  first(key: string): boolean;
  onError(label: string, error: unknown): void;
  /** Default DEFAULT_CACHE_MS; 0 reads everything afresh each tick. */
  readonly cacheMs?: number;
}

/** A window's name in logs and this instance's memory: `evokernel/nightly/2026-11-23T03-00Z`. */
export function windowRef(window: Date): string {
  return `evokernel/nightly/${window.toISOString().slice(0, 16).replace(":", "-")}Z`;
}

export interface NightlyScheduler {
  /** One pass over every repository; resolves to the windows this instance claimed. */
  tick(): Promise<string[]>;
  start(intervalMs: number): void;
  stop(): void;
}

export function createNightlyScheduler(deps: SchedulerDeps): NightlyScheduler {
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  const cacheMs = deps.cacheMs ?? DEFAULT_CACHE_MS;
  let repos: { until: number; list: InstalledRepo[] } | undefined;
  const configs = new Map<string, { until: number; config: EvokernelConfig | undefined }>();

  async function installed(): Promise<InstalledRepo[]> {
    const now = deps.now().getTime();
    if (repos === undefined || repos.until <= now) {
      repos = { until: now + cacheMs, list: await deps.listRepos() };
    }
    return repos.list;
  }

  /** The repository's config when it opts in to nightly runs, else undefined. */
  async function nightlyConfig(
    entry: InstalledRepo,
    github: GitHub,
  ): Promise<EvokernelConfig | undefined> {
    const key = `${entry.repo.owner}/${entry.repo.repo}`;
    const now = deps.now().getTime();
    const cached = configs.get(key);
    if (cached !== undefined && cached.until > now) return cached.config;
    const parsed = parseConfig(await github.readConfig());
    // An invalid config says so on its pull requests; the night just does not run.
    const config = parsed.ok && parsed.config.nightly !== undefined ? parsed.config : undefined;
    configs.set(key, { until: now + cacheMs, config });
    return config;
  }

  async function tickRepo(entry: InstalledRepo): Promise<string | undefined> {
    const github = await deps.githubFor(entry.installationId, entry.repo);
    const config = await nightlyConfig(entry, github);
    if (config?.nightly === undefined) return undefined;
    const cron = parseCron(config.nightly.schedule);
    if (!cron.ok) return undefined;
    const window = latestRun(cron.cron, deps.now(), deps.graceMs);
    if (window === undefined) return undefined;
    const ref = windowRef(window);
    if (!deps.first(`nightly:${entry.repo.owner}/${entry.repo.repo}:${ref}`)) return undefined;
    const sha = await github.branchHead(entry.defaultBranch);
    if (sha === undefined) return undefined;
    if (!(await claimWindow(github, window.toISOString()))) return undefined;
    await deps.start({
      github,
      config,
      installationId: entry.installationId,
      defaultBranch: entry.defaultBranch,
      sha,
      window,
    });
    return `${entry.repo.owner}/${entry.repo.repo}@${ref}`;
  }

  async function tick(): Promise<string[]> {
    const claimed: string[] = [];
    for (const entry of await installed()) {
      try {
        const won = await tickRepo(entry);
        if (won !== undefined) claimed.push(won);
      } catch (error) {
        // One repository's failure (a 5xx, a revoked installation) must not stop the others.
        deps.onError(`nightly tick of ${entry.repo.owner}/${entry.repo.repo}`, error);
      }
    }
    return claimed;
  }

  return {
    tick,
    start(intervalMs) {
      timer = setInterval(() => {
        if (running) return;
        running = true;
        tick()
          .catch((error: unknown) => deps.onError("nightly tick", error))
          .finally(() => {
            running = false;
          });
      }, intervalMs);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}

/** The night's job through the same startJob as `/optimize`: check run, dispatch, report. */
export function startNightThroughJobs(state: AppState): SchedulerDeps["start"] {
  return async (night) => {
    await startJob(state, {
      github: night.github,
      spec: nightlySpec(night.github.repo, night.config, night.sha),
      config: night.config,
      installationId: night.installationId,
      defaultBranch: night.defaultBranch,
      recheckHead: false,
    });
  };
}
