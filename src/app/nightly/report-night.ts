// After a nightly job's check run is reported (jobs/report.ts, the path `/optimize` takes
// too): the one long-lived pull request from `evokernel/nightly`, created or updated in
// place, the drift issue when there is nothing to propose, the issue that lists the
// verdicts maintainers marked wrong (when that list changed), and the ledger written back with
// the night's timings in each task's history (the pull request and the issue link the charts).
// Every write goes through the GitHub interface; what to write is decided in night.ts and
// rendered in src/report/nightly.ts.
import type { WrongMark } from "../../shared/answers.js";
import { parseConfig } from "../../shared/config.js";
import { type Night, type Proposal, STATE_BRANCH } from "../../shared/nightly.js";
import type { ReviewResult } from "../../shared/review.js";
import { DRIFT_MARKER, renderDriftIssue, renderNightlyPull } from "../../report/nightly.js";
import type { GitHub, PullSummary } from "../github.js";
import {
  type BranchPlan,
  findDrift,
  planBranch,
  proposalsAfter,
  runnerChanges,
  runnerOf,
  selectWins,
  settlePull,
  timingsOf,
} from "./night.js";
import { readLedger, type StoredLedger, writeLedger } from "../state-branch.js";
import { createHash } from "node:crypto";
import { renderWrongIssue, WRONG_ISSUE_MARKER, WRONG_ISSUE_TITLE } from "../../report/answers.js";
import { readAnswers } from "../answers/store.js";
import { chartUrl } from "../../shared/history.js";
import { historyFiles, nightRuns } from "../history.js";

export const NIGHTLY_BRANCH = "evokernel/nightly";
export const NIGHTLY_LABEL = "evokernel";
export const PULL_TITLE = "evokernel: nightly kernel tuning";
export const DRIFT_TITLE = "evokernel: kernel drift on the GPU runner";

export interface NightReport {
  readonly pull: Night["pull"];
  readonly pr?: number;
  readonly proposed: number;
  readonly drifted: number;
  readonly issue?: number;
  /** The issue listing the verdicts marked wrong, when the night wrote it. */
  readonly wrongIssue?: number;
}

export async function reportNight(
  github: GitHub,
  review: ReviewResult,
  options: { now: Date; runUrl?: string },
): Promise<NightReport> {
  const at = options.now.toISOString();
  const sha = review.job.sha;
  const parsedConfig = parseConfig(await github.readConfig());
  const config = parsedConfig.ok ? parsedConfig.config : undefined;
  const threshold = config?.nightly?.threshold ?? 3;
  const regression = config?.regressionThreshold ?? review.threshold;
  const defaultBranch = await github.defaultBranch();

  const stored = await readLedger(github);
  const pulls = await github.listPullsByHead(NIGHTLY_BRANCH);
  const open = pulls.find((pull) => pull.state === "open");
  let ledger = settlePull(stored.ledger, pulls[0]);

  // the config's rules per task and configuration refine both thresholds
  const rules = config?.thresholds ?? [];
  const wins = selectWins(review, ledger.rejected, { regression, win: threshold, rules }, at);
  const runner = runnerOf(review);
  const timings = timingsOf(review);
  const drift = findDrift(ledger.timings, runner, timings, { regression, win: threshold, rules });
  const changes = ledger.timings === null ? [] : runnerChanges(ledger.timings.runner, runner);

  // The branch's head is read only when a new kernel may go on top of it.
  const onBranch = new Set(ledger.proposals.map((proposal) => proposal.hash));
  const canAppend =
    open !== undefined &&
    ledger.branch?.base === sha &&
    wins.some((win) => !onBranch.has(win.hash));
  const head = canAppend ? await github.branchHead(NIGHTLY_BRANCH) : undefined;
  const plan = planBranch(ledger, wins, sha, head);
  const proposals = proposalsAfter(ledger, plan);

  if (plan.kind !== "keep") {
    await github.commitFiles(
      NIGHTLY_BRANCH,
      plan.parent,
      plan.proposals.flatMap((proposal) =>
        proposal.source === undefined ? [] : [{ path: proposal.path, content: proposal.source }],
      ),
      commitMessage(plan.proposals, at),
    );
  }
  const pullAction = pullActionOf(plan, open);
  // A rebuild moves the branch onto the night's commit; otherwise it stays where it was built.
  const base = plan.kind === "rebuild" ? sha : (ledger.branch?.base ?? sha);
  const night: Night = {
    at,
    sha,
    runner,
    proposed:
      plan.kind === "keep" ? [] : plan.proposals.map((p) => ({ task: p.task, speedup: p.speedup })),
    timed: timings.length,
    drifted: new Set(drift.map((entry) => entry.task)).size,
    pull: pullAction,
  };
  const nights = [...ledger.nights, night];
  // Every task timed tonight has a chart once the ledger's commit (below) lands.
  const runs = nightRuns(review, at);
  const charted = new Set(runs.map((run) => run.task));
  const chartsOf = (tasks: readonly string[]) =>
    [...new Set(tasks)]
      .filter((task) => charted.has(task))
      .map((task) => ({ task, url: chartUrl(github.repo, task, github.web) }));
  const body = (): string =>
    renderNightlyPull({
      defaultBranch,
      base,
      proposals,
      nights,
      drift,
      runnerChanges: changes,
      threshold,
      rejected: ledger.rejected.length,
      charts: chartsOf([...proposals.map((p) => p.task), ...drift.map((entry) => entry.task)]),
      ...(options.runUrl === undefined ? {} : { runUrl: options.runUrl }),
    });

  let pr: PullSummary | undefined = open;
  let issue: number | undefined;
  if (plan.kind !== "keep") {
    if (open) await github.updatePull(open.number, PULL_TITLE, body());
    else pr = await github.openPull(NIGHTLY_BRANCH, defaultBranch, PULL_TITLE, body());
  } else if (drift.length > 0 && open !== undefined && proposals.length > 0) {
    // Nothing new to commit: the PR stays as it is, but its body says what drifted.
    await github.updatePull(open.number, PULL_TITLE, body());
  } else if (drift.length > 0) {
    issue = await github.upsertIssue(
      DRIFT_MARKER,
      NIGHTLY_LABEL,
      DRIFT_TITLE,
      renderDriftIssue({
        defaultBranch,
        sha,
        at,
        drift,
        runnerChanges: changes,
        charts: chartsOf(drift.map((entry) => entry.task)),
        ...(options.runUrl === undefined ? {} : { runUrl: options.runUrl }),
      }),
    );
  }

  // The team's false positives: listed again only when the marks changed since the last list.
  const wrong = await wrongMarksOf(github, stored);
  let wrongIssue: number | undefined;
  if (wrong !== undefined && wrong.digest !== (ledger.wrongListed ?? null)) {
    wrongIssue = await github.upsertIssue(
      WRONG_ISSUE_MARKER,
      NIGHTLY_LABEL,
      WRONG_ISSUE_TITLE,
      renderWrongIssue(wrong.marks),
    );
  }

  ledger = {
    ...ledger,
    ...(wrongIssue === undefined || wrong === undefined ? {} : { wrongListed: wrong.digest }),
    nights,
    branch: plan.kind === "keep" ? ledger.branch : { base, pr: pr?.number ?? null },
    proposals,
    timings: { at, runner, tasks: timings },
  };
  const written = await writeLedger(
    github,
    ledger,
    stored,
    `evokernel nightly ${at}: ${pullAction}, ${night.proposed.length} proposed, ${night.drifted} drifted`,
    // the night's timings join each task's history, in the same commit
    (tree, index) => historyFiles(github, tree, index, runs),
  );
  // Another instance wrote in between (a claim): the PR is right, the ledger misses a night.
  if (!written)
    throw new Error(
      `${STATE_BRANCH} moved while the night was reported; its ledger was not written`,
    );
  return {
    pull: pullAction,
    ...(pr === undefined ? {} : { pr: pr.number }),
    proposed: night.proposed.length,
    drifted: night.drifted,
    ...(issue === undefined ? {} : { issue }),
    ...(wrongIssue === undefined ? {} : { wrongIssue }),
  };
}

/** The verdicts marked wrong and a digest of them; undefined when there are none (or unreadable). */
async function wrongMarksOf(
  github: GitHub,
  stored: StoredLedger,
): Promise<{ marks: WrongMark[]; digest: string } | undefined> {
  if (stored.ledger.answersBlob === undefined) return undefined;
  const { answers, error } = await readAnswers(github, stored);
  if (error !== undefined || answers.wrong.length === 0) return undefined;
  const digest = createHash("sha256")
    .update(JSON.stringify(answers.wrong))
    .digest("hex")
    .slice(0, 16);
  return { marks: answers.wrong, digest };
}

function commitMessage(proposals: readonly Proposal[], at: string): string {
  const lines = proposals.map(
    (proposal) =>
      `- ${proposal.task}: ${proposal.speedup.toPrecision(3)}× (≥ ${proposal.lowerBound.toPrecision(3)}× beyond the noise)`,
  );
  return `evokernel: nightly tuning ${at.slice(0, 10)}\n\n${lines.join("\n")}`;
}

/** What the night did to the pull request, for the history. */
function pullActionOf(plan: BranchPlan, open: PullSummary | undefined): Night["pull"] {
  if (plan.kind === "keep") return open === undefined ? "none" : "unchanged";
  if (open === undefined) return "opened";
  return plan.kind === "append" ? "updated" : "rebuilt";
}
