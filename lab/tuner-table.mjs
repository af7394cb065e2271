#!/usr/bin/env node
// The tuned-vs-eager-vs-torch.compile table from optimize's result files: per task, the kernel
// a maintainer keeps (the winner when there is a win, else the baseline) against eager and
// torch.compile, geometric means over the visible configurations of the final re-timing, and
// the geometric mean over the tasks.
//   node lab/tuner-table.mjs RESULT.json...   (a task is named by its result's "task")
import { readFileSync } from "node:fs";

const geomean = (values) =>
  values.length === 0
    ? NaN
    : Math.exp(values.reduce((sum, v) => sum + Math.log(v), 0) / values.length);
const x = (value) => (Number.isFinite(value) ? `${value.toFixed(2)}×` : "-");

function row(path) {
  const result = JSON.parse(readFileSync(path, "utf8"));
  const kept = result.win ? "best" : "baseline";
  const configs = (result.configs ?? []).filter((config) => config[kept] && !config.launchBound);
  const ratio = (other) =>
    geomean(
      configs
        .filter((config) => config[other])
        .map((config) => config[other].medianMs / config[kept].medianMs),
    );
  const best = result.best ?? {};
  const knobs = [
    ...Object.entries(best.defines ?? {}).map(([name, value]) => `${name}=${value}`),
    ...(best.flags ?? []),
  ];
  const search = result.search ?? {};
  const perMinute = search.seconds > 0 ? (search.evaluated / search.seconds) * 60 : NaN;
  return {
    task: typeof result.task === "string" ? result.task : (result.task?.name ?? "?"),
    win: result.win === true,
    speedup: result.speedup ?? {},
    knobs: result.win ? knobs.join(" ") || "(source edit)" : "-",
    eager: ratio("eager"),
    compile: ratio("compile"),
    evaluated: search.evaluated ?? 0,
    seconds: search.seconds ?? NaN,
    perMinute,
    insight: result.win ? (best.insight ?? "").split("\n")[0].slice(0, 160) : "",
  };
}

const paths = process.argv.slice(2);
if (paths.length === 0) {
  console.error("usage: node lab/tuner-table.mjs RESULT.json...");
  process.exit(2);
}
const rows = paths.map(row);
console.log(
  "| task | verdict | kept kernel's knobs | vs baseline (lower bound) | kept vs eager | kept vs torch.compile | evaluated | search s | evaluated / min |",
);
console.log("|---|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  const verdict = r.win ? "**win**" : "no win";
  const vsBaseline = `${x(r.speedup.baseline)} (${x(r.speedup.lowerBound)})`;
  console.log(
    `| ${r.task} | ${verdict} | ${r.knobs} | ${vsBaseline} | ${x(r.eager)} | ${x(r.compile)} | ` +
      `${r.evaluated} | ${r.seconds.toFixed(0)} | ${r.perMinute.toFixed(1)} |`,
  );
}
console.log(
  `\ngeometric mean over ${rows.length} tasks: kept vs eager ${x(geomean(rows.map((r) => r.eager)))}, ` +
    `kept vs torch.compile ${x(geomean(rows.map((r) => r.compile)))}; wins ${rows.filter((r) => r.win).length} of ${rows.length}`,
);
for (const r of rows.filter((r) => r.win)) console.log(`- ${r.task}: ${r.insight}`);
