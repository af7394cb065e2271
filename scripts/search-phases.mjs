#!/usr/bin/env node
// Where a search's seconds went, from its archives (optimize --archive): per task, the median
// (min-max) of each candidate's compile, verify and time seconds and of bench's phases, over
// the candidates that were timed (raced-out ones included), the search's rate in evaluated
// candidates a minute, and how many the screen raced out.
//   node scripts/search-phases.mjs ARCHIVE.jsonl...   (a task is named by its archive's folder)
import { readFileSync } from "node:fs";
import { basename, dirname } from "node:path";

const PHASES = [
  "load",
  "start",
  "probe",
  "inputs",
  "cost",
  "compile",
  "timing",
  "checks",
  "profiler",
];

function spread(values) {
  if (values.length === 0) return "-";
  const s = [...values].sort((a, b) => a - b);
  const median = s[Math.floor((s.length - 1) / 2)];
  return `${median.toFixed(2)} (${s[0].toFixed(2)}-${s[s.length - 1].toFixed(2)})`;
}

function summarise(path) {
  const entries = readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line));
  // timed: every candidate the screen timed, raced-out ones (stopped after a configuration,
  // slower than the leader beyond the noise) included
  const timed = entries
    .map((entry) => entry.individual?.evaluation)
    .filter(
      (evaluation) =>
        evaluation !== undefined && (evaluation.stage === "done" || evaluation.raced !== undefined),
    );
  const raced = timed.filter((evaluation) => evaluation.raced !== undefined).length;
  const baseline = entries.find((entry) => entry.generation === 0);
  const last = Math.max(...entries.map((entry) => entry.elapsedS));
  const evaluated = entries.filter(
    (entry) => entry.generation > 0 && entry.individual !== null,
  ).length;
  const proposals = entries.filter((entry) => entry.generation > 0).length;
  const after = baseline === undefined ? last : last - baseline.elapsedS;
  return {
    task: basename(dirname(path)),
    n: timed.length,
    compile: spread(timed.map((e) => e.seconds.compile)),
    verify: spread(timed.map((e) => e.seconds.verify)),
    time: spread(timed.map((e) => e.seconds.time)),
    phases: PHASES.map((name) => spread(timed.map((e) => e.timePhases?.[name] ?? 0))),
    wall:
      `${entries.length} archive lines in ${last.toFixed(0)} s; after the baseline ` +
      `${evaluated} evaluated (${proposals} proposals) in ${after.toFixed(0)} s: ` +
      `${((evaluated / Math.max(after, 1e-9)) * 60).toFixed(1)} evaluated candidates a minute; ` +
      `${raced} of the ${timed.length} timed raced out after a configuration`,
  };
}

const paths = process.argv.slice(2);
if (paths.length === 0) {
  console.error("usage: node scripts/search-phases.mjs ARCHIVE.jsonl...");
  process.exit(2);
}
const pad = (text, width) => String(text).padStart(width);
console.log("# per candidate that was timed; seconds; median (min-max), the baseline c0 included");
console.log(
  `${"task".padEnd(12)}${pad("n", 3)}${pad("compile", 20)}${pad("verify", 20)}${pad("time", 20)} | bench phases:` +
    PHASES.map((name) => pad(name, 20)).join(""),
);
for (const path of paths) {
  const row = summarise(path);
  console.log(
    `${row.task.padEnd(12)}${pad(row.n, 3)}${pad(row.compile, 20)}${pad(row.verify, 20)}${pad(row.time, 20)} |              ` +
      row.phases.map((text) => pad(text, 20)).join(""),
  );
  console.log(`${"".padEnd(15)}wall: ${row.wall}`);
}
