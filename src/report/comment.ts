// The one pull-request comment evokernel keeps (found by its hidden marker and edited in
// place): a first line with the outcome, a table per task, verification, the evolution's
// progress as a chart, details collapsed. Pure; trimmed to GitHub's comment limit with a
// link to the full result.
import type { Result } from "../shared/result.js";
import type { ReviewResult, TaskReview } from "../shared/review.js";
import { codeBlock, codeSpan, htmlText, link, mdText, mermaidLabel } from "./escape.js";
import { formatError, formatRatio, significant } from "./format.js";
import { byOutcome, headline, type Outcome } from "./outcome.js";
import { renderTaskTable } from "./table.js";

export const COMMENT_MARKER = "<!-- evokernel:comment -->";

/** GitHub's limit on a comment body. */
export const COMMENT_LIMIT = 65_536;

export type CommentLinks = { runUrl?: string; fullResultUrl?: string };

export function renderComment(review: ReviewResult, links: CommentLinks = {}): string {
  const full = compose(review, links, { details: true });
  if (full.length <= COMMENT_LIMIT) return full;
  const compact = compose(review, links, { details: false });
  if (compact.length <= COMMENT_LIMIT) return compact;
  const note = `\n\n… cut at GitHub's ${COMMENT_LIMIT}-character limit: ${fullResultLink(links)}.`;
  return compact.slice(0, COMMENT_LIMIT - note.length) + note;
}

function compose(review: ReviewResult, links: CommentLinks, options: { details: boolean }): string {
  const ranked = byOutcome(review.tasks, review.threshold);
  const parts = [COMMENT_MARKER, `### ${icon(ranked)} ${firstLine(ranked)}`];
  const overview = overviewLine(review, ranked.length);
  if (overview !== "") parts.push(overview);
  for (const { task, outcome } of ranked) {
    parts.push(renderTask(task, outcome, review.threshold, options));
  }
  if (!options.details) {
    parts.push(`Details were left out to fit GitHub's comment limit: ${fullResultLink(links)}.`);
  }
  parts.push(footer(review, links));
  return `${parts.join("\n\n")}\n`;
}

function icon(ranked: { outcome: Outcome }[]): string {
  const outcomes = new Set(ranked.map(({ outcome }) => outcome));
  if (outcomes.has("wrong") || outcomes.has("error")) return "❌";
  if (outcomes.has("slower")) return "⚠️";
  if (outcomes.has("faster") || outcomes.has("same")) return "✅";
  return "ℹ️";
}

function firstLine(ranked: { task: TaskReview; outcome: Outcome }[]): string {
  const speaking = ranked.filter(({ outcome }) => outcome !== "quiet");
  if (ranked.length === 0) return "No kernel task changed in this pull request";
  const shown = (speaking.length > 0 ? speaking : ranked).slice(0, 3);
  const rest = (speaking.length > 0 ? speaking : ranked).length - shown.length;
  const text = shown.map(({ task, outcome }) => headline(task, outcome)).join("; ");
  return rest > 0 ? `${text}; and ${rest} more` : text;
}

function overviewLine(review: ReviewResult, count: number): string {
  if (count <= 1) return "";
  const { sha, baseSha } = review.job;
  const against = baseSha === undefined ? "" : ` against base ${baseSha.slice(0, 7)}`;
  return `${count} kernel tasks changed at ${sha.slice(0, 7)}${against}.`;
}

function renderTask(
  task: TaskReview,
  outcome: Outcome,
  threshold: number,
  options: { details: boolean },
): string {
  const lines = [`#### ${codeSpan(task.task.name)} · ${codeSpan(task.task.path)}`];
  lines.push(verificationLine(task));
  if (task.timings.length > 0) lines.push(renderTaskTable(task, threshold));
  const noise = noiseLine(task, outcome);
  if (noise !== "") lines.push(noise);
  if (task.optimize !== null) lines.push(optimizeSection(task.optimize, task, options));
  if (options.details) {
    const details = detailsSection(task);
    if (details !== "") lines.push(details);
  }
  return lines.join("\n\n");
}

function verificationLine(task: TaskReview): string {
  const verification = task.verification;
  if (verification === null) return `Verification: not run (${mdText(task.summary)}).`;
  const visible = verification.configs.filter((config) => !config.heldout).length;
  const heldout = verification.configs.length - visible;
  const shapes = `${visible} shape${visible === 1 ? "" : "s"}${heldout > 0 ? ` + ${heldout} held out` : ""}`;
  if (verification.ok) return `**Verification:** passed on ${shapes}.`;
  const failed = verification.failed;
  const reason = verification.reason ?? verification.status;
  if (failed === null)
    return `**Verification:** ${mdText(reason)} — ${mdText(oneLine(verification.message))}`;
  const where =
    failed.output === null
      ? mdText(failed.config)
      : `${mdText(failed.config)}, ${mdText(/^output\b/.test(failed.output) ? failed.output : `output ${failed.output}`)}`;
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
  return `**Verification:** ${mdText(reason)} on ${where}${element}${error}.`;
}

function noiseLine(task: TaskReview, outcome: Outcome): string {
  if (task.speedup === null) return "";
  const { lowerBound, upperBound, configs } = task.speedup;
  const range = `${formatRatio(lowerBound)} – ${formatRatio(upperBound)}`;
  const counted = `${configs} configuration${configs === 1 ? "" : "s"}`;
  if (outcome === "same") return `Within the noise: PR vs base ${range} over ${counted}.`;
  return `PR vs base, noise included: ${range} over ${counted}.`;
}

function optimizeSection(result: Result, task: TaskReview, options: { details: boolean }): string {
  const lines: string[] = [];
  if (result.win && result.speedup.baseline !== null) {
    const suggested = task.suggestion === null ? "" : " — suggested below as a change to the PR";
    lines.push(
      `**Evolved:** ${formatRatio(result.speedup.baseline)} faster than this PR's kernel ` +
        `(at least ${formatRatio(result.speedup.lowerBound ?? 1)} beyond the noise), verified on every configuration${suggested}.`,
    );
  } else {
    lines.push(`**Evolved:** ${mdText(oneLine(result.verdict))}`);
  }
  const search = result.search;
  lines.push(
    `${search.candidates} candidates (${search.passed} passed) in ${significant(search.seconds / 60, 2)} min by ${mdText(result.run.proposer)}` +
      `${result.usage.usd > 0 ? `, $${result.usage.usd.toFixed(2)}` : ""}; stopped by ${mdText(search.stoppedBy)}.`,
  );
  if (options.details && result.history.length > 1) lines.push(progressChart(result));
  if (options.details && result.best !== null && result.best.diff !== "" && result.win) {
    lines.push(collapsed("The evolved kernel's diff", codeBlock(result.best.diff, "diff")));
  }
  return lines.join("\n\n");
}

/** The search's best fitness over candidates, as GitHub renders mermaid charts. */
function progressChart(result: Result): string {
  const points = result.history;
  const xs = points.map((point) => String(point.candidate)).join(", ");
  const ys = points.map((point) => significant(point.fitness, 3)).join(", ");
  const top = Math.max(...points.map((point) => point.fitness));
  const chart = [
    "```mermaid",
    "xychart-beta",
    `  title "${mermaidLabel(result.task.name)}: best speedup over the PR kernel"`,
    `  x-axis "candidate" [${xs}]`,
    `  y-axis "speedup" 0 --> ${significant(Math.max(1, top) * 1.1, 2)}`,
    `  line [${ys}]`,
    "```",
  ].join("\n");
  return collapsed("Evolution progress", chart);
}

function detailsSection(task: TaskReview): string {
  const verification = task.verification;
  if (verification === null || verification.configs.length === 0) return "";
  const rows = verification.configs.map(
    (config) =>
      `| ${mdText(config.name)}${config.heldout ? " (held out)" : ""} | ${config.ok ? "✅" : "❌"} | ${config.maxAbs === null ? "—" : formatError(config.maxAbs)} | ${mdText(config.reason ?? "")} |`,
  );
  const table = ["| configuration | ok | max abs error | reason |", "|---|---|---:|---|", ...rows];
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
  const run = links.runUrl === undefined ? "" : ` · ${link("run", links.runUrl)}`;
  const full =
    links.fullResultUrl === undefined ? "" : ` · ${link("full result", links.fullResultUrl)}`;
  return `<sub>${parts.join(" · ")} · head ${mdText(review.job.sha.slice(0, 7))}${run}${full} · times are median ± half the p20–p80 range; slower means beyond the noise and ${review.threshold}%</sub>`;
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
