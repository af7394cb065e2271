// The one pull-request comment evokernel keeps (found by its hidden marker and edited in
// place), written to be read in five seconds: one headline sentence with counts (wrong,
// regressions, improvements, unchanged), then per task its verdict, a table with one unit
// per column and one signed change column, the evolved kernel and its diff, details
// collapsed. Pure; trimmed to GitHub's comment limit with a link to the full result.
import { FILE_HEADERS_ONLY, formatPatch, parsePatch } from "diff";
import type { Result } from "../shared/result.js";
import {
  reproductionOf,
  reviewThresholds,
  type ReviewResult,
  type TaskReview,
} from "../shared/review.js";
import { thresholdFor, type Thresholds } from "../shared/thresholds.js";
import {
  codeBlock,
  codeSpan,
  htmlText,
  link,
  MARKDOWN,
  mdText,
  mermaidLabel,
  PLAIN,
} from "./escape.js";
import { formatError, formatSpeedup, significant } from "./format.js";
import { compareSpreads } from "../shared/speedup.js";
import { byOutcome, countsSentence, describeReason, headline, type Outcome } from "./outcome.js";
import { type ChartLink, chartsLine } from "./nightly.js";
import { unifiedDiff } from "./patch.js";
import { renderTaskTable } from "./table.js";

export const COMMENT_MARKER = "<!-- evokernel:comment -->";

/** GitHub's limit on a comment body. */
export const COMMENT_LIMIT = 65_536;

export type CommentLinks = {
  runUrl?: string;
  fullResultUrl?: string;
  /** The tasks' history charts on the state branch (those that have one). */
  charts?: readonly ChartLink[];
};

type Ranked = { task: TaskReview; outcome: Outcome }[];

export function renderComment(review: ReviewResult, links: CommentLinks = {}): string {
  const full = compose(review, links, { details: true });
  if (full.length <= COMMENT_LIMIT) return full;
  const compact = compose(review, links, { details: false });
  if (compact.length <= COMMENT_LIMIT) return compact;
  const note = `\n\n… cut at GitHub's ${COMMENT_LIMIT}-character limit: ${fullResultLink(links)}.`;
  return compact.slice(0, COMMENT_LIMIT - note.length) + note;
}

function compose(review: ReviewResult, links: CommentLinks, options: { details: boolean }): string {
  const ranked = byOutcome(review.tasks, reviewThresholds(review));
  const parts = [COMMENT_MARKER, `### ${OUTCOME_ICON[worst(ranked)]} ${summaryLine(ranked)}`];
  // One task: the headline already says its sentence; a heading would repeat it.
  const headings = ranked.length > 1;
  for (const { task, outcome } of ranked) {
    parts.push(renderTask(task, outcome, review, { ...options, headings }));
  }
  if (!options.details) {
    parts.push(`Details were left out to fit GitHub's comment limit: ${fullResultLink(links)}.`);
  }
  if (links.charts !== undefined && links.charts.length > 0) parts.push(chartsLine(links.charts));
  parts.push(footer(review, links));
  return `${parts.join("\n\n")}\n`;
}

const OUTCOME_ICON: Record<Outcome, string> = {
  wrong: "❌",
  error: "❌",
  // the check run fails on a slower kernel: the heading says so with the same icon
  slower: "❌",
  faster: "⚡",
  same: "✅",
  quiet: "ℹ️",
};

function worst(ranked: Ranked): Outcome {
  return ranked.find(({ outcome }) => outcome !== "quiet")?.outcome ?? "quiet";
}

/**
 * The headline: the counts, and for a single speaking task its own sentence. The same
 * sentence, without markdown, is the check run's title.
 */
export function summaryLine(ranked: Ranked, style: "markdown" | "plain" = "markdown"): string {
  const speaking = ranked.filter(({ outcome }) => outcome !== "quiet");
  if (ranked.length === 0) return "No kernel task changed in this pull request";
  if (speaking.length === 0) {
    const count = ranked.length;
    return `${count} kernel task${count === 1 ? "" : "s"} touched, none to check`;
  }
  const newTasks = speaking.filter(
    ({ task, outcome }) => outcome === "same" && !task.inBase,
  ).length;
  const counts = countsSentence(
    speaking.map(({ outcome }) => outcome),
    newTasks,
  );
  const only = speaking.length === 1 ? speaking[0] : undefined;
  if (only !== undefined) {
    const sentence = headline(only.task, only.outcome, style === "plain" ? PLAIN : MARKDOWN);
    return `${counts}: ${sentence}`;
  }
  return `${speaking.length} kernels: ${counts}`;
}

function renderTask(
  task: TaskReview,
  outcome: Outcome,
  review: ReviewResult,
  options: { details: boolean; headings: boolean },
): string {
  const threshold = reviewThresholds(review);
  const lines: string[] = [];
  if (options.headings) lines.push(`#### ${OUTCOME_ICON[outcome]} ${headline(task, outcome)}`);
  lines.push(`${codeSpan(task.task.path)} · ${verificationLine(task)}`);
  if (task.timings.length > 0) lines.push(renderTaskTable(task, threshold));
  const noise = noiseLine(task, outcome);
  if (noise !== "") lines.push(noise);
  const reproduce = reproduceSection(task, review);
  if (reproduce !== "") lines.push(reproduce);
  if (task.optimize !== null) lines.push(optimizeSection(task.optimize, task, threshold, options));
  if (options.details) {
    const details = detailsSection(task);
    if (details !== "") lines.push(details);
  }
  return lines.join("\n\n");
}

function verificationLine(task: TaskReview): string {
  const verification = task.verification;
  if (verification === null) return `**Verification:** not run (${mdText(task.summary)}).`;
  const visible = verification.configs.filter((config) => !config.heldout).length;
  const heldout = verification.configs.length - visible;
  const shapes = `${visible} shape${visible === 1 ? "" : "s"}${heldout > 0 ? ` + ${heldout} held out` : ""}`;
  if (verification.ok) return `**Verification:** passed on ${shapes}.`;
  const reason = describeReason(verification.reason ?? verification.status);
  const failed = verification.failed;
  if (failed === null) {
    const message = oneLine(verification.message);
    return `**Verification:** ${reason}${message === "" ? "" : ` — ${mdText(message)}`}`;
  }
  // The harness names an output by name ("out") or by place ("output 0"): say "output" once.
  const output =
    failed.output === null
      ? ""
      : /^output\b/.test(failed.output)
        ? `, ${mdText(failed.output)}`
        : `, output ${codeSpan(failed.output)}`;
  const element =
    failed.index.length === 0
      ? ""
      : ` at [${failed.index.join(", ")}]: got ${formatError(failed.got)}, expected ${formatError(failed.expected)}`;
  const tolerance =
    failed.atol === null
      ? ""
      : ` (atol ${formatError(failed.atol)}, rtol ${formatError(failed.rtol)})`;
  const error =
    failed.maxAbs === null ? "" : `; max abs error ${formatError(failed.maxAbs)}${tolerance}`;
  return `**Verification:** ${reason} on ${mdText(failed.config)}${output}${element}${error}.`;
}

function noiseLine(task: TaskReview, outcome: Outcome): string {
  if (task.speedup === null) return "";
  const { lowerBound, upperBound, median, configs } = task.speedup;
  const counted = `${configs} configuration${configs === 1 ? "" : "s"}`;
  const range = `${formatSpeedup(lowerBound)} to ${formatSpeedup(upperBound)}`;
  const mean = formatSpeedup(median);
  if (outcome === "same") return `Within the noise: ${mean} over ${counted} (${range}).`;
  return `Geometric mean over ${counted}: ${mean}, noise included ${range}.`;
}

/**
 * The lines that reproduce the task's verdicts on a GPU machine (src/shared/reproduce.ts),
 * collapsed: built here from the seeds and paths, never taken as text from the artifact.
 */
function reproduceSection(task: TaskReview, review: ReviewResult): string {
  const { verify, bench } = reproductionOf(task, review.device.evokernel, review.job);
  const lines = [verify, bench].filter((line) => line !== null);
  if (lines.length === 0) return "";
  const what =
    verify !== null && bench !== null
      ? "verification and timing"
      : verify !== null
        ? "verification"
        : "timing";
  return collapsed(
    `Reproduce the ${what} (same seed, configurations and inputs)`,
    codeBlock(lines.join("\n"), "sh"),
  );
}

function optimizeSection(
  result: Result,
  task: TaskReview,
  threshold: Thresholds,
  options: { details: boolean },
): string {
  const lines: string[] = [];
  const gain = result.speedup.baseline;
  if (result.win && gain !== null) {
    const flags = result.best?.flags ?? [];
    const suggested =
      task.suggestion !== null
        ? " — suggested below as a change to the PR"
        : flags.length > 0
          ? `, built with nvcc ${flags.map((flag) => codeSpan(flag)).join(" ")}: not suggested, since a change to the kernel file cannot carry nvcc flags (build the kernel with them to get this speed)`
          : "";
    const floor =
      result.speedup.lowerBound === null
        ? ""
        : ` (at least ${formatSpeedup(result.speedup.lowerBound)} beyond the noise)`;
    lines.push(
      `**Evolved:** a kernel ${formatSpeedup(gain)} than this PR's${floor}, verified on every configuration${suggested}.`,
    );
  } else {
    lines.push(`**Evolved:** ${mdText(oneLine(result.verdict))}`);
  }
  const applied = appliedLine(task, threshold, result.win);
  if (applied !== "") lines.push(applied);
  const search = result.search;
  lines.push(
    `${search.candidates} candidates (${search.passed} passed) in ${significant(search.seconds / 60, 2)} min by ${mdText(result.run.proposer)}` +
      `${result.usage.usd > 0 ? `, $${result.usage.usd.toFixed(2)}` : ""}; stopped by ${mdText(search.stoppedBy)}.`,
  );
  const chart = progressChart(result);
  if (options.details && chart !== null) lines.push(chart);
  const diff = evolvedDiff(result, task);
  if (options.details && diff !== "" && result.win) {
    lines.push(collapsed("The evolved kernel's diff", codeBlock(diff.trimEnd(), "diff")));
  }
  return lines.join("\n\n");
}

/**
 * What applying the evolved kernel would do to the check: base against the evolved kernel
 * per configuration, by the rule the check applies to the PR's (launch-bound ones aside).
 * Empty where base or the evolved kernel was not timed.
 */
function appliedLine(task: TaskReview, thresholds: Thresholds, win: boolean): string {
  const threshold = (config: string) => thresholdFor(thresholds, task.task.path, config).regression;
  const compared = task.timings.filter(
    (config) => !config.launchBound && config.base !== null && config.evolved !== null,
  );
  if (compared.length === 0) return "";
  const slower = compared.filter(
    (config) =>
      config.base !== null &&
      config.evolved !== null &&
      compareSpreads(config.base, config.evolved, threshold(config.name)) === "slower",
  );
  const kernel = win && task.suggestion !== null ? "the suggestion" : "the evolved kernel";
  if (slower.length === 0) {
    const counted =
      compared.length === 1
        ? "the one configuration that counts"
        : `any of the ${compared.length} configurations that count`;
    return `**If applied:** the check would pass on timing: ${kernel} is not slower than base on ${counted}.`;
  }
  const names = slower.map((config) => mdText(config.name)).join(", ");
  return `**If applied:** the check would still fail: ${kernel} is slower than base on ${slower.length} of ${compared.length} configuration${compared.length === 1 ? "" : "s"} (${names}).`;
}

/**
 * The best kernel's speedup over the PR's after every candidate, as GitHub renders mermaid
 * charts; only where it shows a trend (three candidates or more, the best improving at
 * least once), the y axis fitted to the values, not from 0.
 */
export function progressChart(result: Result): string | null {
  const count = result.search.candidates;
  const points = [...result.history].sort((a, b) => a.candidate - b.candidate);
  if (count < 3 || points.length < 2) return null;
  const first = points[0]?.candidate ?? 0;
  const ys: number[] = [];
  for (let candidate = first; candidate < first + count; candidate++) {
    const best = Math.max(
      ...points.filter((point) => point.candidate <= candidate).map((point) => point.fitness),
    );
    ys.push(Math.round(best * 100) / 100);
  }
  const low = Math.min(...ys);
  const high = Math.max(...ys);
  const pad = Math.max(0.01, (high - low) * 0.1);
  const chart = [
    "```mermaid",
    "xychart-beta",
    `  title "${mermaidLabel(result.task.name)}: best kernel's speedup over the PR's, ×"`,
    `  x-axis "candidate" 1 --> ${count}`,
    `  y-axis "speedup vs PR, ×" ${Math.floor((low - pad) * 100) / 100} --> ${Math.ceil((high + pad) * 100) / 100}`,
    `  line [${ys.join(", ")}]`,
    "```",
  ].join("\n");
  return collapsed(`Search progress: ${count} candidates`, chart);
}

/** The evolved kernel's diff with the file's path in the repository, as git would name it. */
function evolvedDiff(result: Result, task: TaskReview): string {
  if (task.suggestion !== null) {
    const { path, before, after } = task.suggestion;
    return unifiedDiff(path, before, after);
  }
  const best = result.best;
  if (best === null || best.diff === "") return "";
  // a kernel that differs only in how it is built (nvcc flags) has no change to show
  if (parsePatch(best.diff).every((patch) => patch.hunks.length === 0)) return "";
  const path = task.kernel ?? best.file;
  const patches = parsePatch(best.diff).map((patch) => ({
    ...patch,
    oldFileName: `a/${path}`,
    newFileName: `b/${path}`,
    oldHeader: undefined,
    newHeader: undefined,
  }));
  return formatPatch(patches, FILE_HEADERS_ONLY);
}

function detailsSection(task: TaskReview): string {
  const verification = task.verification;
  if (verification === null) return "";
  if (verification.configs.length === 0) {
    // nothing ran to a verdict (a build, the static check, the harness itself failed): what failed
    const message = verification.message.trim();
    return verification.ok || message === ""
      ? ""
      : collapsed("What failed (the run's output)", codeBlock(message, ""));
  }
  const rows = verification.configs.map(
    (config) =>
      `| ${mdText(config.name)}${config.heldout ? " (held out)" : ""} | ${config.ok ? "✅ passed" : `❌ ${describeReason(config.reason ?? "rejected")}`} | ${config.maxAbs === null ? "—" : formatError(config.maxAbs)} |`,
  );
  const table = ["| configuration | verdict | max abs error |", "|---|---|---:|", ...rows];
  const message =
    verification.ok || verification.message.trim() === ""
      ? ""
      : `\n\n${codeBlock(verification.message.trim(), "")}`;
  return collapsed("Verification by configuration", `${table.join("\n")}${message}`);
}

function footer(review: ReviewResult, links: CommentLinks): string {
  const device = review.device;
  const parts = [
    mdText(device.gpu),
    device.driver === null ? null : `driver ${mdText(device.driver)}`,
    device.cuda === null ? null : `CUDA ${mdText(device.cuda)}`,
    device.torch === "" ? null : `torch ${mdText(device.torch)}`,
    `evokernel ${mdText(device.evokernel)}`,
  ].filter((part) => part !== null);
  const { sha, baseSha } = review.job;
  const against = baseSha === undefined ? "" : ` against base ${mdText(baseSha.slice(0, 7))}`;
  const run = links.runUrl === undefined ? "" : ` · ${link("run", links.runUrl)}`;
  const full =
    links.fullResultUrl === undefined ? "" : ` · ${link("full result", links.fullResultUrl)}`;
  // An operator's opt-out is said where every reader sees it, not only in the artifact.
  const unsandboxed =
    device.sandbox === "off"
      ? "⚠️ The pull request's code ran **without evokernel's sandbox** (`EVOKERNEL_SANDBOX=off` on the runner).\n\n"
      : "";
  return `${unsandboxed}<sub>head ${mdText(sha.slice(0, 7))}${against} · ${parts.join(" · ")}${run}${full}</sub>`;
}

function fullResultLink(links: CommentLinks): string {
  if (links.fullResultUrl !== undefined) return link("the full result", links.fullResultUrl);
  if (links.runUrl !== undefined)
    return `the full result is in ${link("the run", links.runUrl)}'s artifact`;
  return "the full result is in the job's artifact";
}

function collapsed(summary: string, body: string): string {
  return `<details><summary>${htmlText(summary)}</summary>\n\n${body}\n\n</details>`;
}

function oneLine(text: string): string {
  return text.trim().split(/\r?\n/)[0] ?? "";
}
