// One task's timings as a markdown table a PR author reads at a glance: per configuration
// base's and the PR's median, one speedup column (the PR's against base's, "faster" or
// "slower", bold where it is beyond the noise and the threshold), then eager PyTorch,
// torch.compile where it was measured and the best evolved kernel, and how close the PR
// comes to the roofline floor (% of floor). Each time
// column has one unit, named in its header; every cell is short enough not to wrap at
// GitHub's width. Launch-bound configurations are marked and kept out of the headline.
import type { TaskReview, TimingConfig } from "../shared/review.js";
import type { Spread } from "../shared/result.js";
import { compareSpreads } from "../shared/speedup.js";
import { thresholdFor, type ThresholdInput } from "../shared/thresholds.js";
import { cellText } from "./escape.js";
import { formatIn, formatPercent, formatSpeedup, unitFor } from "./format.js";

export const LAUNCH_BOUND_MARK = "†";

type Column = {
  header: string;
  align: "left" | "right";
  cell: (config: TimingConfig) => string;
};

export function renderTaskTable(task: TaskReview, thresholds: ThresholdInput): string {
  const configs = task.timings;
  const threshold = thresholdFor(thresholds, task.task.path, null).regression;
  const regressionAt = (config: string) =>
    thresholdFor(thresholds, task.task.path, config).regression;
  const varies = configs.some((config) => regressionAt(config.name) !== threshold);
  // One unit for every time column of the table, so base and PR read side by side.
  const unit = unitFor(
    configs.flatMap((config) =>
      [config.base, config.head, config.eager, config.compile, config.evolved].map(
        (spread) => spread?.medianMs ?? null,
      ),
    ),
  );
  const timeColumn = (header: string, pick: (config: TimingConfig) => Spread | null): Column => {
    return {
      // A no-break space: a header never wraps between its name and its unit.
      header: `${header}\u00A0${unit}`,
      align: "right",
      cell: (config) => formatIn(pick(config)?.medianMs ?? null, unit),
    };
  };
  const columns: Column[] = [
    {
      header: "configuration",
      align: "left",
      cell: (config) => cellText(config.name) + (config.launchBound ? ` ${LAUNCH_BOUND_MARK}` : ""),
    },
    timeColumn("base", (config) => config.base),
    timeColumn("PR", (config) => config.head),
    {
      header: "vs base",
      align: "right",
      cell: (config) => describeChange(config, regressionAt(config.name)),
    },
    timeColumn("eager", (config) => config.eager),
  ];
  // torch.compile where it was measured (a run may skip it)
  const compiled = configs.some((config) => config.compile !== null);
  if (compiled) columns.push(timeColumn("compile", (config) => config.compile));
  if (configs.some((config) => config.evolved !== null)) {
    columns.push(timeColumn("evolved", (config) => config.evolved));
  }
  columns.push({
    header: "%\u00A0of\u00A0floor",
    align: "right",
    cell: (config) => formatPercent(config.percentOfFloor.head).replace("%", "\u00A0%"),
  });
  const lines = [
    `| ${columns.map((column) => column.header).join(" | ")} |`,
    `|${columns.map((column) => (column.align === "left" ? "---" : "---:")).join("|")}|`,
    ...configs.map((config) => `| ${columns.map((column) => column.cell(config)).join(" | ")} |`),
  ];
  const notes = [
    `Medians of interleaved runs${compiled ? "; compile is torch.compile" : ""}. **vs base**: the PR's speedup over base (1.35× faster: base takes 1.35× the PR's time), bold where beyond the noise and ${varies ? "the config's threshold for the configuration" : `${threshold}\u00A0%`}. **% of floor**: the roofline floor over the PR's time.`,
  ];
  if (configs.some((config) => config.launchBound)) {
    notes.push(
      `${LAUNCH_BOUND_MARK} launch-bound: the launch, not the kernel, sets this time; not counted in the verdict.`,
    );
  }
  return [...lines, "", `<sub>${notes.join(" ")}</sub>`].join("\n");
}

function describeChange(config: TimingConfig, threshold: number): string {
  if (config.base === null || config.head === null || config.speedup === null) return "—";
  const change = formatSpeedup(config.speedup);
  if (config.launchBound) return change;
  const verdict = compareSpreads(config.base, config.head, threshold);
  return verdict === "same" ? change : `**${change}**`;
}
