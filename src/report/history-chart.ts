// A task's history drawn as a chart a reader takes in at a glance: per configuration, the
// kernel's time at each merged pull request and nightly run against eager PyTorch,
// torch.compile and the floor, in µs over the date. Drawn server-side by Vega-Lite (compiled
// to Vega, rendered to SVG text without a browser or a canvas), and the one static page that
// links every task's chart: no script, no font, nothing fetched, so it opens offline. Pure
// apart from Vega's own work.
import * as vega from "vega";
import * as vl from "vega-lite";
import {
  HISTORY_FOLDER,
  type HistoryEntry,
  type HistoryIndex,
  historyPaths,
  MAX_FILE_BYTES,
  type TaskHistory,
} from "../shared/history.js";

/** The lines, in the legend's order and colours (the same on every chart). */
export const SERIES = ["kernel", "torch.compile", "eager", "floor"] as const;
const COLORS = ["#1f6feb", "#d1242f", "#8c959f", "#1a7f37"];
const RUN_KINDS = { pr: "merged PR", nightly: "nightly run" } as const;
export const X_TITLE = "date (UTC)";
/** Runs up to which each of the kernel's runs gets a marker. */
export const MAX_MARKED_RUNS = 120;
export const Y_TITLE = "time (µs)";

interface Row {
  readonly at: string;
  readonly config: string;
  readonly series: (typeof SERIES)[number];
  readonly us: number;
  readonly run: string;
  readonly label: string;
}

function rowsOf(entries: readonly HistoryEntry[]): Row[] {
  return entries.flatMap((entry) =>
    entry.configs.flatMap((config) => {
      const times: [Row["series"], number | null][] = [
        ["kernel", config.kernelMs],
        ["torch.compile", config.compileMs],
        ["eager", config.eagerMs],
        ["floor", config.floorMs],
      ];
      const label = entry.pr === null ? entry.sha.slice(0, 7) : `#${entry.pr}`;
      return times.flatMap(([series, time]): Row[] =>
        time === null
          ? []
          : [
              {
                at: entry.at,
                config: config.name,
                series,
                us: time * 1000,
                run: RUN_KINDS[entry.kind],
                label,
              },
            ],
      );
    }),
  );
}

function chartSpec(history: TaskHistory, entries: readonly HistoryEntry[], points: boolean) {
  const gpus = [...new Set(entries.map((entry) => entry.gpu))];
  const merged = entries.filter((entry) => entry.kind === "pr").length;
  const subtitle = `${merged} merged PR${merged === 1 ? "" : "s"}, ${entries.length - merged} nightly run${entries.length - merged === 1 ? "" : "s"} · ${gpus.join(", ")}`;
  // dates in UTC, whatever the server's zone; whole days between ticks, about eight of them
  const x = {
    field: "at",
    type: "temporal",
    title: X_TITLE,
    scale: { type: "utc" },
    axis: {
      format: "%Y-%m-%d",
      tickCount: { interval: "day", step: dayStep(entries) },
      labelOverlap: true,
    },
  } as const;
  const y = { field: "us", type: "quantitative", title: Y_TITLE, scale: { zero: false } } as const;
  const line = {
    mark: { type: "line", interpolate: "linear", strokeWidth: 2 },
    encoding: {
      x,
      y,
      color: {
        field: "series",
        type: "nominal",
        title: "series",
        scale: { domain: [...SERIES], range: COLORS },
      },
      // the floor dashed: a bound, not a run (one legend with the colours)
      strokeDash: {
        field: "series",
        type: "nominal",
        title: "series",
        scale: {
          domain: [...SERIES],
          range: [
            [1, 0],
            [1, 0],
            [1, 0],
            [4, 3],
          ],
        },
      },
    },
  };
  // The kernel's own runs marked by what timed them: a merged PR, or a night.
  const marks = {
    transform: [{ filter: "datum.series === 'kernel'" }],
    mark: { type: "point", filled: true, size: 50, color: COLORS[0] },
    encoding: {
      x,
      y,
      shape: {
        field: "run",
        type: "nominal",
        title: "run",
        sort: Object.values(RUN_KINDS),
        scale: { domain: Object.values(RUN_KINDS), range: ["diamond", "circle"] },
      },
      // a merged PR's marker larger: the runs that changed the kernel
      size: {
        field: "run",
        type: "nominal",
        title: "run",
        sort: Object.values(RUN_KINDS),
        scale: { domain: Object.values(RUN_KINDS), range: [160, 30] },
      },
    },
  };
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: history.task, subtitle, anchor: "start" },
    background: "white",
    padding: 12,
    data: { values: rowsOf(entries) },
    facet: {
      row: {
        field: "config",
        type: "nominal",
        title: "configuration",
        // as the task lists them (the latest run's order first)
        sort: [
          ...new Set(
            [...entries].reverse().flatMap((entry) => entry.configs.map((config) => config.name)),
          ),
        ],
      },
    },
    resolve: { scale: { y: "independent" } },
    spec: { width: 640, height: 180, layer: points ? [line, marks] : [line] },
    config: {
      font: "sans-serif",
      axis: { labelFontSize: 11, titleFontSize: 12 },
      header: { labelFontSize: 12, labelFontWeight: "bold", titleFontSize: 12 },
      legend: { labelFontSize: 12, titleFontSize: 12 },
    },
  };
}

/** Days between the x axis's ticks: about eight ticks over the runs' span, one day at least. */
function dayStep(entries: readonly HistoryEntry[]): number {
  const times = entries.map((entry) => Date.parse(entry.at)).filter(Number.isFinite);
  if (times.length < 2) return 1;
  const days = (Math.max(...times) - Math.min(...times)) / 86_400_000;
  return Math.max(1, Math.ceil(days / 8));
}

async function toSvg(spec: ReturnType<typeof chartSpec>): Promise<string> {
  const compiled = vl.compile(spec as vl.TopLevelSpec).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: "none", logLevel: vega.Error });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/**
 * The task's chart as SVG text, within MAX_FILE_BYTES: without the run markers (as beyond
 * MAX_MARKED_RUNS runs), then with
 * the older half of its runs left out, as long as it would not fit.
 */
export async function renderHistoryChart(history: TaskHistory): Promise<string> {
  let entries = history.entries;
  // a marker per run while they can be told apart; beyond, the lines alone read better
  let points = entries.length <= MAX_MARKED_RUNS;
  for (;;) {
    const svg = await toSvg(chartSpec(history, entries, points));
    if (Buffer.byteLength(svg) <= MAX_FILE_BYTES || entries.length <= 1) return svg;
    if (points) points = false;
    else entries = entries.slice(Math.floor(entries.length / 2));
  }
}

export interface IndexTask {
  readonly task: string;
  /** The chart and the data, relative to the page. */
  readonly svg: string;
  readonly json: string;
  readonly runs: number;
  readonly latest: string | null;
}

/** `history/index.html` for the index: every task's chart and data, by relative links. */
export function renderHistoryPage(repo: string, index: HistoryIndex): string {
  const prefix = `${HISTORY_FOLDER}/`;
  return renderHistoryIndex(
    repo,
    index.tasks.map((task) => {
      const paths = historyPaths(task.task);
      return {
        task: task.task,
        svg: paths.svg.slice(prefix.length),
        json: paths.json.slice(prefix.length),
        runs: task.runs,
        latest: task.latest,
      };
    }),
  );
}

/** The page that links every task's chart: static, self-contained, offline. */
export function renderHistoryIndex(repo: string, tasks: readonly IndexTask[]): string {
  const sorted = [...tasks].sort((a, b) => (a.task < b.task ? -1 : a.task > b.task ? 1 : 0));
  const items = sorted.map(
    (task) =>
      `<section>\n<h2 id="${html(task.svg)}">${html(task.task)}</h2>\n` +
      `<p>${task.runs} run${task.runs === 1 ? "" : "s"}${task.latest === null ? "" : `, the latest ${html(task.latest.slice(0, 16).replace("T", " "))} UTC`} · <a href="${html(task.svg)}">chart (SVG)</a> · <a href="${html(task.json)}">data (JSON)</a></p>\n` +
      `<a href="${html(task.svg)}"><img src="${html(task.svg)}" alt="${html(`${task.task}: kernel time per configuration over merged pull requests and nightly runs`)}"></a>\n</section>`,
  );
  const empty =
    sorted.length === 0
      ? "<p>No task has a history yet: one is kept from the first merged pull request or nightly run that timed it.</p>"
      : "";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>evokernel history: ${html(repo)}</title>
<style>
body { margin: 24px; font: 14px/1.5 system-ui, sans-serif; color: #1f2328; }
section { margin: 0 0 32px; }
h2 { font-size: 16px; margin: 0 0 4px; }
img { max-width: 100%; height: auto; border: 1px solid #d1d9e0; }
p { margin: 0 0 8px; color: #59636e; }
</style>
</head>
<body>
<h1>evokernel history: ${html(repo)}</h1>
<p>Each task's kernel time per configuration at every merged pull request and nightly run, against torch.compile, eager PyTorch and the floor (the fastest the GPU's bandwidth and compute allow).</p>
${empty}${items.join("\n")}
</body>
</html>
`;
}

function html(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}
