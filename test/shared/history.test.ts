// The task histories' pure core and their charts: a run merged in (the same run again
// replaces itself, time order kept), the caps (entries, pending pull requests) and the
// 1 MB bound of GitHub's contents API per file, the chart's links, and the SVG Vega-Lite
// draws: its title, its series and its axes, read back from the SVG text.
import { describe, expect, it } from "vitest";
import { webOf } from "../../src/app/github.js";
import { renderComment } from "../../src/report/comment.js";
import { chartsLine } from "../../src/report/nightly.js";
import {
  renderHistoryChart,
  renderHistoryIndex,
  SERIES,
  X_TITLE,
  Y_TITLE,
} from "../../src/report/history-chart.js";
import {
  addEntry,
  addPending,
  chartUrl,
  EMPTY_INDEX,
  type HistoryEntry,
  historyPaths,
  historySlug,
  indexTask,
  MAX_ENTRIES,
  MAX_FILE_BYTES,
  MAX_PENDING,
  parseHistoryIndex,
  parseTaskHistory,
  serializeHistory,
  takePending,
  type TaskHistory,
} from "../../src/shared/history.js";
import { passedTask, review, timing } from "../helpers/review-fixtures.js";

const TASK = "kernels/softmax";
const empty = (): TaskHistory => ({ schema: 1, task: TASK, entries: [] });

function entry(day: number, options: Partial<HistoryEntry> = {}): HistoryEntry {
  return {
    kind: "nightly",
    at: `2026-11-${String(day).padStart(2, "0")}T03:40:00.000Z`,
    sha: `${day}`.padStart(40, "a"),
    pr: null,
    gpu: "NVIDIA H100 80GB HBM3",
    configs: [
      { name: "8192x8192", kernelMs: 0.5 + day / 1000, eagerMs: 2, compileMs: 1.5, floorMs: 0.2 },
      { name: "4096x1024", kernelMs: 0.1, eagerMs: 0.4, compileMs: null, floorMs: 0.05 },
    ],
    ...options,
  };
}

describe("a task's history", () => {
  it("takes a run in time order, and the same run again replaces itself", () => {
    let history = addEntry(empty(), entry(3));
    history = addEntry(history, entry(1, { kind: "pr", pr: 12 }));
    history = addEntry(history, entry(2));
    expect(history.entries.map((run) => run.at.slice(8, 10))).toEqual(["01", "02", "03"]);
    // A redelivered merge or a retried night: recorded once, the later numbers kept.
    const again = entry(2, { gpu: "again" });
    history = addEntry(history, again);
    expect(history.entries).toHaveLength(3);
    expect(history.entries[1]?.gpu).toBe("again");
    // A PR merged on the commit a night also timed is a run of its own.
    history = addEntry(history, entry(2, { kind: "pr", pr: 13 }));
    expect(history.entries).toHaveLength(4);
  });

  it(`keeps the latest ${MAX_ENTRIES} runs`, () => {
    let history = empty();
    for (let i = 0; i < MAX_ENTRIES + 20; i++)
      history = addEntry(
        history,
        entry(1, { at: new Date(Date.UTC(2026, 0, 1) + i * 3_600_000).toISOString(), sha: `${i}` }),
      );
    expect(history.entries).toHaveLength(MAX_ENTRIES);
    expect(history.entries[0]?.sha).toBe("20");
    expect(history.entries.at(-1)?.sha).toBe(`${MAX_ENTRIES + 19}`);
  });

  it("stays under the contents API's 1 MB, dropping the oldest runs first", () => {
    // 60 configurations a run: a few hundred runs would be megabytes.
    const wide = (i: number): HistoryEntry => ({
      ...entry(1),
      at: new Date(Date.UTC(2026, 0, 1) + i * 3_600_000).toISOString(),
      sha: `${i}`,
      configs: Array.from({ length: 60 }, (_, c) => ({
        name: `config-${c}-with-a-long-descriptive-name`,
        kernelMs: 0.123456789 + c,
        eagerMs: 1.23456789,
        compileMs: 0.98765432,
        floorMs: 0.0123456,
      })),
    });
    // A stored file at the cap (as an older version might have left it), then one more run.
    const stored: TaskHistory = {
      ...empty(),
      entries: Array.from({ length: MAX_ENTRIES - 1 }, (_, i) => wide(i)),
    };
    expect(Buffer.byteLength(serializeHistory(stored))).toBeGreaterThan(1_000_000);
    const history = addEntry(stored, wide(MAX_ENTRIES - 1));
    const bytes = Buffer.byteLength(serializeHistory(history));
    expect(bytes).toBeLessThanOrEqual(MAX_FILE_BYTES);
    expect(MAX_FILE_BYTES).toBeLessThan(1_000_000);
    expect(history.entries.length).toBeLessThan(MAX_ENTRIES);
    // the newest kept, the oldest dropped
    expect(history.entries.at(-1)?.sha).toBe(`${MAX_ENTRIES - 1}`);
    expect(history.entries[0]?.sha).not.toBe("0");
    // and one more run still fits
    expect(
      Buffer.byteLength(serializeHistory(addEntry(history, wide(MAX_ENTRIES)))),
    ).toBeLessThanOrEqual(MAX_FILE_BYTES);
  });

  it("is one file per task, named readably and uniquely", () => {
    expect(historyPaths("kernels/softmax")).toEqual({
      json: `history/${historySlug("kernels/softmax")}.json`,
      svg: `history/${historySlug("kernels/softmax")}.svg`,
    });
    expect(historySlug("kernels/softmax")).toMatch(/^kernels-softmax-[0-9a-f]{8}$/);
    // Two paths that read alike are two files.
    expect(historySlug("kernels/a b")).not.toBe(historySlug("kernels/a-b"));
    expect(historySlug("../..")).toMatch(/^task-[0-9a-f]{8}$/);
  });

  it("starts afresh from unreadable or foreign text, saying why", () => {
    expect(parseTaskHistory(TASK, "{").error).toMatch(/not JSON/);
    expect(parseTaskHistory(TASK, JSON.stringify({ schema: 2 })).history.entries).toEqual([]);
    const other = serializeHistory({ ...addEntry(empty(), entry(1)), task: "kernels/other" });
    expect(parseTaskHistory(TASK, other).history).toEqual(empty());
    const mine = serializeHistory(addEntry(empty(), entry(1)));
    expect(parseTaskHistory(TASK, mine).history.entries).toHaveLength(1);
    expect(parseHistoryIndex(undefined).index).toEqual(EMPTY_INDEX);
  });
});

describe("a pull request's timings waiting for the merge", () => {
  const pull = (pr: number, sha = "h".repeat(40)) => ({
    pr,
    sha,
    at: "2026-11-20T10:00:00.000Z",
    gpu: "NVIDIA H100 80GB HBM3",
    tasks: [{ task: TASK, configs: entry(1).configs }],
  });

  it("keep the latest review per PR, and are taken out once", () => {
    let index = addPending(EMPTY_INDEX, pull(7, "a".repeat(40)));
    index = addPending(index, pull(8));
    index = addPending(index, pull(7, "b".repeat(40)));
    expect(index.pulls.map((p) => [p.pr, p.sha[0]])).toEqual([
      [8, "h"],
      [7, "b"],
    ]);
    const taken = takePending(index, 7);
    expect(taken.pull?.sha).toBe("b".repeat(40));
    expect(takePending(taken.index, 7).pull).toBeUndefined();
  });

  it(`are capped at ${MAX_PENDING} PRs and 1 MB, the least recently reviewed forgotten`, () => {
    let index = EMPTY_INDEX;
    for (let pr = 1; pr <= MAX_PENDING + 5; pr++) index = addPending(index, pull(pr));
    expect(index.pulls).toHaveLength(MAX_PENDING);
    expect(index.pulls[0]?.pr).toBe(6);
    const huge = {
      ...pull(1),
      tasks: Array.from({ length: 400 }, (_, t) => ({
        task: `kernels/task-${t}`,
        configs: entry(1).configs,
      })),
    };
    let big = EMPTY_INDEX;
    for (let pr = 1; pr <= 40; pr++) big = addPending(big, { ...huge, pr });
    expect(Buffer.byteLength(serializeHistory(big))).toBeLessThanOrEqual(MAX_FILE_BYTES);
    expect(big.pulls.at(-1)?.pr).toBe(40);
  });

  it("the index lists each task once, sorted, with its runs and latest time", () => {
    let index = indexTask(EMPTY_INDEX, addEntry(empty(), entry(1)));
    index = indexTask(index, { ...addEntry(empty(), entry(2)), task: "kernels/a" });
    index = indexTask(index, addEntry(addEntry(empty(), entry(1)), entry(4)));
    expect(index.tasks).toEqual([
      { task: "kernels/a", runs: 1, latest: entry(2).at },
      { task: TASK, runs: 2, latest: entry(4).at },
    ]);
  });
});

describe("the chart's address", () => {
  it("is the SVG on the state branch, as github.com or an Enterprise Server shows it", () => {
    const repo = { owner: "octo", repo: "kernels" };
    expect(chartUrl(repo, TASK)).toBe(
      `https://github.com/octo/kernels/blob/evokernel-state/history/${historySlug(TASK)}.svg`,
    );
    expect(chartUrl(repo, TASK, webOf("https://ghe.example.com/api/v3"))).toBe(
      `https://ghe.example.com/octo/kernels/blob/evokernel-state/history/${historySlug(TASK)}.svg`,
    );
    expect(webOf("https://api.github.com")).toBe("https://github.com");
    expect(webOf("http://ghe.local:8080/api/v3/")).toBe("http://ghe.local:8080");
  });
});

/** The texts of the SVG's <text> elements, in order. */
function texts(svg: string): string[] {
  return [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((match) =>
    (match[1] ?? "").replaceAll("&amp;", "&").replaceAll("&lt;", "<").replaceAll("&gt;", ">"),
  );
}

describe("the chart", () => {
  it("draws per configuration a line for the kernel, torch.compile, eager and the floor, in µs over the date", async () => {
    let history = empty();
    history = addEntry(history, entry(1, { kind: "pr", pr: 12 }));
    history = addEntry(history, entry(2));
    history = addEntry(history, entry(3));
    const svg = await renderHistoryChart(history);
    expect(svg.startsWith("<svg")).toBe(true);
    const words = texts(svg);
    expect(words).toContain(TASK);
    expect(words).toContain("1 merged PR, 2 nightly runs · NVIDIA H100 80GB HBM3");
    // the axes, once per configuration
    expect(words.filter((word) => word === Y_TITLE)).toHaveLength(2);
    expect(words).toContain(X_TITLE);
    // a facet per configuration, in the data's order
    const facets = words.filter((word) => word === "8192x8192" || word === "4096x1024");
    expect(facets).toEqual(["8192x8192", "4096x1024"]);
    // the legend names every series and what timed the kernel's runs
    for (const series of SERIES) expect(words).toContain(series);
    expect(words).toEqual(expect.arrayContaining(["merged PR", "nightly run"]));
    // One line per series per configuration: torch.compile was not timed on 4096x1024.
    expect(svg.match(/aria-roledescription="line mark"/g)).toHaveLength(7);
    // a marker per kernel run, per configuration
    expect(svg.match(/aria-roledescription="point"/g)).toHaveLength(6);
    // dates, in UTC, one label a day
    const dates = words.filter((word) => /^\d{4}-\d{2}-\d{2}$/.test(word));
    expect(dates).toEqual(["2026-11-02", "2026-11-03"]);
    // the y axis reads in µs: 0.501 ms is about 501 µs
    const ticks = words
      .filter((word) => /^[\d,.]+$/.test(word))
      .map((word) => Number(word.replaceAll(",", "")));
    expect(Math.max(...ticks)).toBeGreaterThan(100);
  });

  it("stays under 1 MB for a full history of many configurations", async () => {
    let history = empty();
    for (let i = 0; i < MAX_ENTRIES; i++)
      history = addEntry(history, {
        ...entry(1),
        at: new Date(Date.UTC(2025, 0, 1) + i * 86_400_000).toISOString(),
        sha: `${i}`,
        configs: Array.from({ length: 12 }, (_, c) => ({
          name: `c${c}`,
          kernelMs: 0.1 + c + (i % 7) / 100,
          eagerMs: 1 + c,
          compileMs: 0.8 + c,
          floorMs: 0.05 + c,
        })),
      });
    const svg = await renderHistoryChart(history);
    expect(Buffer.byteLength(svg)).toBeLessThanOrEqual(MAX_FILE_BYTES);
    expect(texts(svg)).toContain(TASK);
  });
});

describe("the history page", () => {
  it("links every task's chart and data, relatively, with nothing to fetch", () => {
    const html = renderHistoryIndex("octo/kernels", [
      {
        task: "kernels/<b>",
        svg: "b.svg",
        json: "b.json",
        runs: 1,
        latest: "2026-11-20T03:40:00Z",
      },
      { task: TASK, svg: "s.svg", json: "s.json", runs: 3, latest: null },
    ]);
    expect(html).toContain("<title>evokernel history: octo/kernels</title>");
    expect(html).toContain('<img src="s.svg"');
    expect(html).toContain('<a href="b.json">');
    expect(html).toContain("kernels/&lt;b&gt;");
    expect(html).not.toContain("<script");
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html.indexOf("kernels/&lt;b&gt;")).toBeLessThan(html.indexOf(TASK));
  });
});

describe("the links to the charts", () => {
  it("are in the PR comment when its tasks have a chart, and absent when none has", () => {
    const result = review([passedTask("softmax", [timing("8192x8192", 0.6, 0.5)])]);
    const url = chartUrl({ owner: "octo", repo: "kernels" }, TASK);
    const body = renderComment(result, { charts: [{ task: TASK, url }] });
    expect(body).toContain(
      `📈 History (kernel time against torch.compile, eager and the floor): [kernels/softmax](${url})`,
    );
    expect(renderComment(result)).not.toContain("📈");
    expect(renderComment(result, { charts: [] })).toBe(renderComment(result));
  });

  it("name a task's path as text, never as markdown", () => {
    expect(
      chartsLine([{ task: "kernels/[x](y)", url: "https://github.com/o/r/blob/b/h.svg" }]),
    ).toContain("[kernels/\\[x\\](y)](https://github.com/o/r/blob/b/h.svg)");
  });
});
