// The nightly tuning pull request's body and the drift issue's body: the speedup table of
// the kernels on the branch, the drift watch, the history of earlier nights and the
// commands the app understands. Pure; each stays under GitHub's 65,536-character limit by
// showing fewer nights of history first.
import type { Drift, Night, Proposal } from "../shared/nightly.js";
import type { Spread } from "../shared/result.js";
import { cellText, codeSpan, link, mdText } from "./escape.js";
import { formatIn, formatRatio, unitFor } from "./format.js";

export const NIGHTLY_MARKER = "<!-- evokernel:nightly -->";
export const DRIFT_MARKER = "<!-- evokernel:drift -->";
const BODY_LIMIT = 65_536;

export interface NightlyView {
  readonly defaultBranch: string;
  /** The default branch's commit the branch is built on. */
  readonly base: string;
  readonly proposals: readonly Proposal[];
  readonly nights: readonly Night[];
  readonly drift: readonly Drift[];
  /** "driver 580 → 590", when the runner changed since the last night. */
  readonly runnerChanges: readonly string[];
  /** Percent beyond the noise an evolved kernel must gain to be proposed. */
  readonly threshold: number;
  /** Kernels turned down earlier (a closed PR), not proposed again. */
  readonly rejected: number;
  /** Where the tasks' history charts are (src/shared/history.ts). */
  readonly charts?: readonly ChartLink[];
  readonly runUrl?: string;
}

export interface ChartLink {
  readonly task: string;
  readonly url: string;
}

export function renderNightlyPull(view: NightlyView): string {
  for (const nights of [view.nights.length, 30, 10, 0]) {
    const body = composePull(view, Math.min(nights, view.nights.length));
    if (body.length <= BODY_LIMIT) return body;
  }
  return composePull(view, 0).slice(0, BODY_LIMIT);
}

function composePull(view: NightlyView, nights: number): string {
  const count = view.proposals.length;
  const parts = [
    NIGHTLY_MARKER,
    `evokernel's nightly tuning found ${count === 1 ? "a faster kernel" : `${count} faster kernels`} that still verif${count === 1 ? "ies" : "y"} on every shape, held-out ones included, on ${codeSpan(view.defaultBranch)} at ${mdText(view.base.slice(0, 7))}.`,
    proposalTable(view.proposals),
    `Only kernels faster than the current one beyond the measured noise and by at least ${view.threshold}% are proposed: the lower bound is the speedup the noise cannot explain away (base p20 over evolved p80).`,
  ];
  if (view.drift.length > 0) parts.push(driftSection(view.drift, view.runnerChanges));
  parts.push(historySection(view.nights, nights));
  if (view.charts !== undefined && view.charts.length > 0) parts.push(chartsLine(view.charts));
  parts.push(commandsSection(view.rejected));
  if (view.runUrl !== undefined) parts.push(`<sub>${link("last night's run", view.runUrl)}</sub>`);
  return `${parts.join("\n\n")}\n`;
}

function proposalTable(proposals: readonly Proposal[]): string {
  // One unit for the table's times, named in the headers (never ms beside µs in a column).
  const unit = unitFor(proposals.flatMap((proposal) => [proposal.beforeMs, proposal.afterMs]));
  const header = `| task | kernel | before\u00A0${unit} | after\u00A0${unit} | speedup (lower bound) | vs eager | vs torch.compile | found |`;
  const rows = proposals.map(
    (proposal) =>
      `| ${codeSpan(proposal.task, "cell")} | ${codeSpan(proposal.path, "cell")} | ${formatIn(proposal.beforeMs, unit)} | ${formatIn(proposal.afterMs, unit)} | **${formatRatio(proposal.speedup)}** (≥ ${formatRatio(proposal.lowerBound)}) | ${ratioOrDash(proposal.eager)} | ${ratioOrDash(proposal.compile)} | ${cellText(proposal.night.slice(0, 10))} |`,
  );
  return [
    header,
    "|---|---|---:|---:|---:|---:|---:|---|",
    ...rows,
    "",
    "Times are geometric means over the task's configurations (launch-bound ones left out).",
  ].join("\n");
}

function driftSection(drift: readonly Drift[], changes: readonly string[]): string {
  const why =
    changes.length === 0 ? "" : ` after the runner changed (${mdText(changes.join(", "))})`;
  const unit = unitFor(
    drift.flatMap((entry) =>
      [entry.before.kernel, entry.now.kernel, entry.before.compile, entry.now.compile].map(
        (spread) => spread?.medianMs ?? null,
      ),
    ),
  );
  const time = (spread: Spread | null) => formatIn(spread?.medianMs ?? null, unit);
  const rows = drift.map(
    (entry) =>
      `| ${codeSpan(entry.task, "cell")} | ${cellText(entry.config)} | ${time(entry.before.kernel)} | ${time(entry.now.kernel)} | ${time(entry.before.compile)} | ${time(entry.now.compile)} | ${describeDrift(entry)} |`,
  );
  return [
    `### ⚠️ Drift watch: ${drift.length} configuration${drift.length === 1 ? "" : "s"} moved${why}`,
    "",
    `| task | configuration | kernel before\u00A0${unit} | kernel now\u00A0${unit} | torch.compile before\u00A0${unit} | torch.compile now\u00A0${unit} | what changed |`,
    "|---|---|---:|---:|---:|---:|---|",
    ...rows,
    "",
    "Times are medians. Beyond the noise means the p20–p80 ranges do not overlap (and differ by more than the threshold). Re-tune with `/optimize` on a pull request, or let the next night try.",
  ].join("\n");
}

function describeDrift(entry: Drift): string {
  if (entry.kind === "kernel-slower") {
    return `kernel ${formatRatio(entry.now.kernel.medianMs / entry.before.kernel.medianMs)} slower`;
  }
  const compile = entry.now.compile as Spread;
  return `torch.compile now ${formatRatio(entry.now.kernel.medianMs / compile.medianMs)} faster than the kernel`;
}

function historySection(nights: readonly Night[], shown: number): string {
  if (shown === 0) return "";
  const rows = nights
    .slice(-shown)
    .reverse()
    .map((night) => {
      const proposed =
        night.proposed.length === 0
          ? "—"
          : night.proposed
              .map((entry) => `${codeSpan(entry.task, "cell")} ${formatRatio(entry.speedup)}`)
              .join(", ");
      const runner = [night.runner.gpu, night.runner.driver, night.runner.torch]
        .filter((part) => part !== null && part !== "")
        .join(", ");
      return `| ${cellText(night.at.slice(0, 16).replace("T", " "))} | ${cellText(night.sha.slice(0, 7))} | ${proposed} | ${night.drifted === 0 ? "—" : `${night.drifted} of ${night.timed} tasks`} | ${cellText(String(night.pull))} | ${cellText(runner)} |`;
    });
  const more =
    nights.length > shown
      ? `\n\n${nights.length - shown} earlier nights left out (kept in the ledger).`
      : "";
  return [
    "<details><summary>Nights so far</summary>",
    "",
    "| night (UTC) | commit | proposed | drift | pull request | runner |",
    "|---|---|---|---|---|---|",
    ...rows,
    `${more}`,
    "</details>",
  ].join("\n");
}

function commandsSection(rejected: number): string {
  const lines = [
    "**What you can do**",
    "",
    "- Merge this pull request to take the kernels; the next night starts from them.",
    "- Close it without merging: these kernels are remembered and never proposed again.",
    "- Comment `/bench` to time this branch again, `/optimize [task …]` to search further, `/help` for every command.",
    "- The app rebuilds this branch on the default branch when that moves: commits pushed here by hand are replaced.",
  ];
  if (rejected > 0)
    lines.push(
      "",
      `${rejected} kernel${rejected === 1 ? "" : "s"} turned down earlier ${rejected === 1 ? "is" : "are"} not proposed again.`,
    );
  return lines.join("\n");
}

export interface DriftIssueView {
  readonly defaultBranch: string;
  readonly sha: string;
  readonly at: string;
  readonly drift: readonly Drift[];
  readonly runnerChanges: readonly string[];
  readonly charts?: readonly ChartLink[];
  readonly runUrl?: string;
}

/** The tasks' history charts (kernel time over merged PRs and nights), one link each. */
export function chartsLine(charts: readonly ChartLink[]): string {
  const shown = charts.slice(0, 20).map((chart) => link(mdText(chart.task), chart.url));
  const more = charts.length > shown.length ? ` and ${charts.length - shown.length} more` : "";
  return `📈 History (kernel time against torch.compile, eager and the floor): ${shown.join(" · ")}${more}`;
}

/** The issue the app keeps updated when the runner changed a kernel's standing, and there is no PR. */
export function renderDriftIssue(view: DriftIssueView): string {
  const parts = [
    DRIFT_MARKER,
    `evokernel re-timed every configured kernel on ${codeSpan(view.defaultBranch)} at ${mdText(view.sha.slice(0, 7))} (${view.at.slice(0, 16).replace("T", " ")} UTC) and found a change beyond the noise, with no faster kernel to propose.`,
    driftSection(view.drift, view.runnerChanges),
  ];
  if (view.charts !== undefined && view.charts.length > 0) parts.push(chartsLine(view.charts));
  if (view.runUrl !== undefined) parts.push(`<sub>${link("the night's run", view.runUrl)}</sub>`);
  parts.push(
    "<sub>evokernel updates this issue each night it sees drift; close it when you have dealt with it.</sub>",
  );
  const body = `${parts.join("\n\n")}\n`;
  return body.length <= BODY_LIMIT ? body : body.slice(0, BODY_LIMIT);
}

function ratioOrDash(ratio: number | null): string {
  return ratio === null ? "—" : formatRatio(ratio);
}
