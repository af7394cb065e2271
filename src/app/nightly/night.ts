// The pure core of a night: which evolved kernels count (verified wins beyond the noise and
// the configured threshold, never one a maintainer turned down), which kernels drifted
// since the last night because the runner changed, and what to do with the branch and the
// pull request. No I/O: report-night.ts fetches, this decides, it writes.
import { createHash } from "node:crypto";
import type { Drift, Ledger, Proposal, Runner, TimedConfig } from "../../shared/nightly.js";
import type { ReviewResult, TaskReview } from "../../shared/review.js";
import type { Spread } from "../../shared/result.js";
import { thresholdFor, type Thresholds } from "../../shared/thresholds.js";

/** The first 16 hex digits of the source's sha256: a proposal's identity. */
export function sourceHash(source: string): string {
  return createHash("sha256").update(source).digest("hex").slice(0, 16);
}

/**
 * The night's proposals: a task whose optimize run is a win (every configuration verified,
 * held-out ones too, and faster beyond the noise), whose noise-aware lower bound clears
 * `thresholdPercent`, with a change to commit, and not rejected before.
 */
export function selectWins(
  review: ReviewResult,
  rejected: readonly string[],
  thresholdPercent: number | Thresholds,
  night: string,
): Proposal[] {
  const turnedDown = new Set(rejected);
  // a number: every task's minimum; else `win` per task, the rules of `thresholds` applied
  const winAt = (task: string) =>
    typeof thresholdPercent === "number"
      ? thresholdPercent
      : thresholdFor(thresholdPercent, task, null).win;
  return review.tasks.flatMap((task) => {
    const result = task.optimize;
    if (task.status !== "passed" || result === null || task.suggestion === null) return [];
    if (!result.win || !result.verification.ok) return [];
    const { baseline, lowerBound } = result.speedup;
    if (baseline === null || lowerBound === null) return [];
    if (lowerBound < 1 + winAt(task.task.path) / 100) return [];
    const hash = sourceHash(task.suggestion.after);
    if (turnedDown.has(hash)) return [];
    const counted = result.configs.filter((config) => !config.launchBound && config.best);
    return [
      {
        task: task.task.path,
        path: task.suggestion.path,
        hash,
        beforeMs: geomean(counted.map((config) => config.baseline.medianMs)),
        afterMs: geomean(counted.map((config) => config.best?.medianMs ?? 0)),
        speedup: baseline,
        lowerBound,
        eager: result.speedup.eager,
        compile: result.speedup.compile,
        night,
        source: task.suggestion.after,
      },
    ];
  });
}

/** The runner a review ran on, as the drift watch compares it. */
export function runnerOf(review: ReviewResult): Runner {
  const { gpu, driver, cuda, torch } = review.device;
  return { gpu, driver, cuda, torch };
}

/** Every task's current kernel timed this night (launch-bound configurations left out). */
export function timingsOf(review: ReviewResult): { task: string; configs: TimedConfig[] }[] {
  return review.tasks.flatMap((task: TaskReview) => {
    if (task.status !== "passed") return [];
    const configs = task.timings.flatMap((config) =>
      config.head === null || config.launchBound
        ? []
        : [
            {
              name: config.name,
              kernel: config.head,
              eager: config.eager,
              compile: config.compile,
            },
          ],
    );
    return configs.length === 0 ? [] : [{ task: task.task.path, configs }];
  });
}

/** What changed on the runner between two nights, for a reader: "driver 580 → 590". */
export function runnerChanges(before: Runner, now: Runner): string[] {
  const changes: string[] = [];
  for (const key of ["driver", "cuda", "torch"] as const) {
    if (before[key] !== now[key]) changes.push(`${key} ${before[key] ?? "?"} → ${now[key] ?? "?"}`);
  }
  return changes;
}

/**
 * Drift: only where the same GPU now runs another driver, CUDA or PyTorch (otherwise a
 * change of time is the kernel's own or another machine's), and only beyond the noise and
 * `thresholdPercent`: the kernel slower than last night, or torch.compile now faster than
 * the kernel where it was not.
 */
export function findDrift(
  previous: Ledger["timings"],
  runner: Runner,
  tonight: readonly { task: string; configs: readonly TimedConfig[] }[],
  thresholdPercent: number | Thresholds,
): Drift[] {
  if (previous === null || previous.runner.gpu !== runner.gpu) return [];
  if (runnerChanges(previous.runner, runner).length === 0) return [];
  // a number: every configuration's; else the regression threshold per task and configuration
  const factorAt = (task: string, config: string) =>
    1 +
    (typeof thresholdPercent === "number"
      ? thresholdPercent
      : thresholdFor(thresholdPercent, task, config).regression) /
      100;
  const drift: Drift[] = [];
  for (const task of tonight) {
    const before = previous.tasks.find((entry) => entry.task === task.task);
    for (const config of task.configs) {
      const old = before?.configs.find((entry) => entry.name === config.name);
      if (!old) continue;
      const factor = factorAt(task.task, config.name);
      const pair = {
        before: { kernel: old.kernel, compile: old.compile },
        now: { kernel: config.kernel, compile: config.compile },
      };
      if (config.kernel.p20Ms > old.kernel.p80Ms * factor) {
        drift.push({ task: task.task, config: config.name, kind: "kernel-slower", ...pair });
      } else if (
        beats(config.compile, config.kernel, factor) &&
        !beats(old.compile, old.kernel, factor)
      ) {
        drift.push({ task: task.task, config: config.name, kind: "compile-faster", ...pair });
      }
    }
  }
  return drift;
}

/** `fast` is faster than `slow` beyond the noise and the factor. */
function beats(fast: Spread | null, slow: Spread, factor: number): boolean {
  return fast !== null && fast.p80Ms * factor < slow.p20Ms;
}

/**
 * The pull request the app keeps, as found by its head branch (newest first): the open one,
 * or the latest closed one (merged or turned down).
 */
export interface NightlyPull {
  readonly number: number;
  readonly state: "open" | "closed";
  readonly merged: boolean;
  readonly url: string;
}

/**
 * The ledger after reading what a maintainer did with the last PR: merged, its kernels are
 * in; closed unmerged, they are remembered as rejected and never proposed again.
 */
export function settlePull(ledger: Ledger, latest: NightlyPull | undefined): Ledger {
  const pr = ledger.branch?.pr ?? null;
  if (pr === null || latest === undefined || latest.number !== pr || latest.state === "open")
    return ledger;
  const rejected = latest.merged ? [] : ledger.proposals.map((proposal) => proposal.hash);
  return {
    ...ledger,
    branch: null,
    proposals: [],
    rejected: [...ledger.rejected, ...rejected.filter((hash) => !ledger.rejected.includes(hash))],
  };
}

/**
 * What the branch gets: nothing (no new kernel, or the same ones again); a commit on top of
 * it (the default branch has not moved since it was built); or a rebuild on the night's
 * commit, carrying the night's kernels (the older ones were proposed against kernels the
 * default branch may have changed since; the night re-searched every task from its head).
 */
export type BranchPlan =
  | { readonly kind: "keep" }
  | { readonly kind: "append"; readonly parent: string; readonly proposals: readonly Proposal[] }
  | { readonly kind: "rebuild"; readonly parent: string; readonly proposals: readonly Proposal[] };

export function planBranch(
  ledger: Ledger,
  wins: readonly Proposal[],
  nightSha: string,
  branchHead: string | undefined,
): BranchPlan {
  const onBranch = new Set(ledger.proposals.map((proposal) => proposal.hash));
  const fresh = wins.filter((win) => !onBranch.has(win.hash));
  if (fresh.length === 0) return { kind: "keep" };
  if (branchHead !== undefined && ledger.branch !== null && ledger.branch.base === nightSha) {
    return { kind: "append", parent: branchHead, proposals: fresh };
  }
  return { kind: "rebuild", parent: nightSha, proposals: wins };
}

/** The kernels the branch holds after the plan: a task's newer kernel replaces its older. */
export function proposalsAfter(ledger: Ledger, plan: BranchPlan): Proposal[] {
  if (plan.kind === "keep") return ledger.proposals;
  if (plan.kind === "rebuild") return [...plan.proposals];
  const replaced = new Set(plan.proposals.map((proposal) => proposal.task));
  return [
    ...ledger.proposals.filter((proposal) => !replaced.has(proposal.task)),
    ...plan.proposals,
  ];
}

function geomean(values: readonly number[]): number {
  const positive = values.filter((value) => value > 0);
  if (positive.length === 0) return 0;
  return Math.exp(positive.reduce((sum, value) => sum + Math.log(value), 0) / positive.length);
}
