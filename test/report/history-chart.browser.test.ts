// The history page in a real browser (headless Chromium through playwright-core), as a
// reader opens the state branch's `history/` folder: from file://, with every request off
// the disk refused, it loads, links each task's chart, and each chart shows the title, the
// series and the axes its data says. The page's screenshot is docs/examples/history.png.
// Needs Chromium (Debian: apt-get install -y chromium; else CHROMIUM=/path/to/chrome);
// skipped without it, except in CI, where a missing Chromium is a failure.
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  renderHistoryChart,
  renderHistoryPage,
  SERIES,
  X_TITLE,
  Y_TITLE,
} from "../../src/report/history-chart.js";
import {
  addEntry,
  EMPTY_INDEX,
  type HistoryEntry,
  type HistoryIndex,
  historyPaths,
  indexTask,
  serializeHistory,
  type TaskHistory,
} from "../../src/shared/history.js";
import { repo } from "../helpers/cli.js";
import { inCi } from "../helpers/python.js";

const executable = process.env["CHROMIUM"] ?? "/usr/bin/chromium";
const hasChromium = existsSync(executable);
if (!hasChromium && !inCi)
  console.warn(
    `skipping the history page in a browser: no Chromium at ${executable} (set CHROMIUM)`,
  );

const GPU = "NVIDIA H100 80GB HBM3";
const DAY = 86_400_000;
const START = Date.UTC(2026, 9, 1, 3, 40);

/**
 * Two months of a softmax kernel: nights, with merged PRs that made it faster (#41) and a
 * driver update that made it slower for a while; torch.compile and eager barely move.
 */
function softmax(): TaskHistory {
  let history: TaskHistory = { schema: 1, task: "kernels/softmax", entries: [] };
  for (let day = 0; day < 60; day++) {
    const wobble = 1 + 0.015 * Math.sin(day * 1.7);
    const faster = day >= 18 ? 0.72 : 1;
    const drift = day >= 40 && day < 46 ? 1.12 : 1;
    const at = (hours: number) => new Date(START + day * DAY + hours * 3_600_000).toISOString();
    const configs = (scale: number) => [
      {
        name: "8192x8192",
        kernelMs: 0.61 * faster * drift * wobble * scale,
        eagerMs: 1.34 * wobble,
        compileMs: 0.7 * wobble,
        floorMs: 0.27,
      },
      {
        name: "32768x1024",
        kernelMs: 0.33 * faster * drift * wobble * scale,
        eagerMs: 0.62 * wobble,
        compileMs: 0.36 * wobble,
        floorMs: 0.135,
      },
    ];
    history = addEntry(history, {
      kind: "nightly",
      at: at(0),
      sha: `n${String(day).padStart(3, "0")}`.padEnd(40, "0"),
      pr: null,
      gpu: GPU,
      configs: configs(1),
    });
    if (day === 17 || day === 33 || day === 51) {
      const pr = day === 17 ? 41 : day === 33 ? 57 : 63;
      history = addEntry(history, {
        kind: "pr",
        at: at(9),
        sha: `pr${pr}`.padEnd(40, "0"),
        pr,
        gpu: GPU,
        configs: configs(day === 17 ? 0.72 : 0.99),
      });
    }
  }
  return history;
}

/** A newer task: a week of nights, one configuration where torch.compile was not timed. */
function layernorm(): TaskHistory {
  let history: TaskHistory = { schema: 1, task: "kernels/layernorm", entries: [] };
  for (let day = 53; day < 60; day++) {
    const entry: HistoryEntry = {
      kind: "nightly",
      at: new Date(START + day * DAY).toISOString(),
      sha: `n${String(day).padStart(3, "0")}`.padEnd(40, "0"),
      pr: null,
      gpu: GPU,
      configs: [
        { name: "4096x4096", kernelMs: 0.21, eagerMs: 0.48, compileMs: 0.25, floorMs: 0.09 },
        { name: "odd-4097x5003", kernelMs: 0.27, eagerMs: 0.55, compileMs: null, floorMs: 0.11 },
      ],
    };
    history = addEntry(history, entry);
  }
  return history;
}

let folder: string;
let browser: Browser | undefined;
const histories = [softmax(), layernorm()];

beforeAll(async () => {
  // The state branch's history folder, as the app writes it.
  folder = join(await mkdtemp(join(tmpdir(), "evokernel-history-")), "history");
  await mkdir(folder);
  let index: HistoryIndex = EMPTY_INDEX;
  for (const history of histories) {
    const paths = historyPaths(history.task);
    await writeFile(join(folder, "..", paths.json), serializeHistory(history));
    await writeFile(join(folder, "..", paths.svg), await renderHistoryChart(history));
    index = indexTask(index, history);
  }
  await writeFile(join(folder, "index.html"), renderHistoryPage("octo/kernels", index));
  if (hasChromium)
    browser = await chromium.launch({
      executablePath: executable,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
    });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (folder !== undefined) await rm(join(folder, ".."), { recursive: true, force: true });
});

describe.skipIf(!hasChromium && !inCi)("the history page in Chromium", () => {
  it("has Chromium (CI installs the Debian package)", () => {
    expect(hasChromium, `no Chromium at ${executable}: apt-get install -y chromium`).toBe(true);
  });

  it("loads offline, links every task's chart, and each shows its series and axes", async () => {
    const context = await browser!.newContext({
      offline: true,
      viewport: { width: 900, height: 700 },
    });
    const refused: string[] = [];
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith("file://")) return route.continue();
      refused.push(url);
      return route.abort();
    });
    try {
      const page = await context.newPage();
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.goto(pathToFileURL(join(folder, "index.html")).href, { waitUntil: "load" });
      expect(await page.title()).toBe("evokernel history: octo/kernels");
      expect(await page.locator("h2").allTextContents()).toEqual([
        "kernels/layernorm",
        "kernels/softmax",
      ]);
      // every chart loaded (an image that failed has no natural width)
      const images = page.locator("img");
      expect(await images.count()).toBe(2);
      for (const width of await images.evaluateAll((all) =>
        all.map((image) => (image as unknown as { naturalWidth: number }).naturalWidth),
      ))
        expect(width).toBeGreaterThan(600);
      expect(await page.locator("section p").allTextContents()).toEqual([
        expect.stringMatching(/^7 runs, the latest 2026-11-29 03:40 UTC/),
        expect.stringMatching(/^63 runs, the latest 2026-11-29 03:40 UTC/),
      ]);

      const shot = await page.screenshot({ fullPage: true });
      await writeFile(join(repo, "docs", "examples", "history.png"), shot);

      // Each chart on its own, as the links open it: what the data says, drawn.
      for (const history of histories) {
        await page.goto(pathToFileURL(join(folder, "..", historyPaths(history.task).svg)).href);
        const words = (await page.locator("text").allTextContents()).map((word) => word.trim());
        expect(words).toContain(history.task);
        const merged = history.entries.filter((entry) => entry.kind === "pr").length;
        const nights = history.entries.length - merged;
        expect(words).toContain(
          `${merged} merged PR${merged === 1 ? "" : "s"}, ${nights} nightly run${nights === 1 ? "" : "s"} · ${GPU}`,
        );
        const configs = history.entries[0]?.configs.map((config) => config.name) ?? [];
        for (const config of configs) expect(words).toContain(config);
        expect(words.filter((word) => word === Y_TITLE)).toHaveLength(configs.length);
        expect(words).toContain(X_TITLE);
        for (const series of SERIES) expect(words).toContain(series);
        // the x axis spans the runs' dates
        const dates = words.filter((word) => /^\d{4}-\d{2}-\d{2}$/.test(word)).sort();
        const first = history.entries[0]!.at.slice(0, 10);
        const last = history.entries.at(-1)!.at.slice(0, 10);
        expect(dates.length).toBeGreaterThan(1);
        expect(dates[0]! >= first && dates.at(-1)! <= last).toBe(true);
        // a line per series timed, per configuration; it is drawn, not empty
        const timed = configs.map(
          (name) =>
            SERIES.filter((series) =>
              history.entries.some((entry) => {
                const config = entry.configs.find((c) => c.name === name);
                if (config === undefined) return false;
                const value = {
                  kernel: config.kernelMs,
                  "torch.compile": config.compileMs,
                  eager: config.eagerMs,
                  floor: config.floorMs,
                }[series];
                return value !== null;
              }),
            ).length,
        );
        const lines = page.locator('[aria-roledescription="line mark"]');
        expect(await lines.count()).toBe(timed.reduce((sum, count) => sum + count, 0));
        for (const box of await lines.evaluateAll((all) =>
          all.map((line) => (line as unknown as { getBBox(): { width: number } }).getBBox().width),
        ))
          expect(box).toBeGreaterThan(100);
      }
      expect(errors).toEqual([]);
      expect(refused).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
