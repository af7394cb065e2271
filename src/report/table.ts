// One task's timings as a markdown table: base against the PR's kernel beside eager
// PyTorch, torch.compile and the best evolved kernel, each `median ± spread`, with % of the
// roofline floor. Launch-bound configurations are marked (and kept out of the headline).
import type { TaskReview, TimingConfig } from "../shared/review.js";
import { compareSpreads } from "../shared/speedup.js";
import { cellText } from "./escape.js";
import { formatPercent, formatRatio, formatSpread } from "./format.js";

export const LAUNCH_BOUND_MARK = "†";

export function renderTaskTable(task: TaskReview, threshold: number): string {
  const evolved = task.timings.some((config) => config.evolved !== null);
  const header = [
    "configuration",
    "base",
    "PR",
    "eager",
    "torch.compile",
    ...(evolved ? ["best evolved"] : []),
    "PR % of floor",
    "PR vs base",
  ];
  const rows = task.timings.map((config) => [
    cellText(config.name) + (config.launchBound ? ` ${LAUNCH_BOUND_MARK}` : ""),
    formatSpread(config.base),
    formatSpread(config.head),
    formatSpread(config.eager),
    formatSpread(config.compile),
    ...(evolved ? [formatSpread(config.evolved)] : []),
    formatPercent(config.percentOfFloor.head),
    describeChange(config, threshold),
  ]);
  const lines = [
    `| ${header.join(" | ")} |`,
    `|${header.map((_, index) => (index === 0 ? "---" : "---:")).join("|")}|`,
    ...rows.map((row) => `| ${row.join(" | ")} |`),
  ];
  if (task.timings.some((config) => config.launchBound)) {
    lines.push(
      "",
      `${LAUNCH_BOUND_MARK} launch-bound: the launch, not the kernel, sets this time; not counted in the verdict.`,
    );
  }
  return lines.join("\n");
}

function describeChange(config: TimingConfig, threshold: number): string {
  if (config.base === null || config.head === null || config.speedup === null) return "—";
  const ratio = formatRatio(config.speedup);
  if (config.launchBound) return ratio;
  const change = compareSpreads(config.base, config.head, threshold);
  if (change === "faster") return `**${ratio}** faster`;
  if (change === "slower") return `**${ratio}** slower`;
  return `${ratio} (noise)`;
}
