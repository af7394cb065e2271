#!/usr/bin/env node
// Where a search's seconds went, from its archives (optimize --archive): per task, the median
// (min-max) of each candidate's compile, verify and time seconds and of bench's phases, over
// the candidates that were timed (raced-out ones included), the search's rate in evaluated
// candidates a minute, and how many the screen raced out. With the run's result.json beside
// the archive (optimize --out to the same folder): the rate over the whole run, from
// run.startedAt (the harness up) to run.finishedAt (the final checks done), and where those
// seconds went: up to the baseline's line, the search after it, the final checks.
//   node lab/search-phases.mjs ARCHIVE.jsonl...   (a task is named by its archive's folder)
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

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
  const whole = wholeRun(join(dirname(path), "result.json"), entries);
  return {
    task: basename(dirname(path)),
    n: timed.length,
    perMinute: whole === null ? "-" : whole.perMinute.toFixed(1),
    whole: whole?.text ?? "no result.json beside the archive",
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

/**
 * The whole run of a result.json (its run.startedAt to run.finishedAt): the candidates
 * evaluated in it (a resumed run's earlier lines left out) a minute, and its parts.
 */
function wholeRun(resultPath, entries) {
  if (!existsSync(resultPath)) return null;
  const { run } = JSON.parse(readFileSync(resultPath, "utf8"));
  const started = Date.parse(run?.startedAt ?? "");
  const finished = Date.parse(run?.finishedAt ?? "");
  if (!Number.isFinite(started) || !Number.isFinite(finished) || finished <= started) return null;
  const ours = entries.filter((entry) => Date.parse(entry.at) >= started);
  const evaluated = ours.filter((e) => e.generation > 0 && e.individual !== null).length;
  const seconds = (finished - started) / 1000;
  const at = (entry) => (entry === undefined ? started : Date.parse(entry.at));
  const baselineAt = at(ours.find((entry) => entry.generation === 0));
  const lastAt = Math.max(baselineAt, ...ours.map(at));
  const s = (ms) => `${(ms / 1000).toFixed(1)} s`;
  const perMinute = (evaluated / seconds) * 60;
  return {
    perMinute,
    text:
      `whole run ${seconds.toFixed(1)} s (to the baseline's line ${s(baselineAt - started)}, ` +
      `search after it ${s(lastAt - baselineAt)}, final checks ${s(finished - lastAt)}): ` +
      `${evaluated} evaluated, ${perMinute.toFixed(1)} evaluated candidates a minute over the whole run`,
  };
}

const paths = process.argv.slice(2);
if (paths.length === 0) {
  console.error("usage: node lab/search-phases.mjs ARCHIVE.jsonl...");
  process.exit(2);
}
const pad = (text, width) => String(text).padStart(width);
console.log("# per candidate that was timed; seconds; median (min-max), the baseline c0 included");
console.log(
  `${"task".padEnd(14)}${pad("n", 3)}${pad("/min whole", 11)}${pad("compile", 20)}${pad("verify", 20)}${pad("time", 20)} | bench phases:` +
    PHASES.map((name) => pad(name, 20)).join(""),
);
for (const path of paths) {
  const row = summarise(path);
  console.log(
    `${row.task.padEnd(14)}${pad(row.n, 3)}${pad(row.perMinute, 11)}${pad(row.compile, 20)}${pad(row.verify, 20)}${pad(row.time, 20)} |              ` +
      row.phases.map((text) => pad(text, 20)).join(""),
  );
  console.log(`${"".padEnd(17)}wall: ${row.wall}`);
  console.log(`${"".padEnd(17)}${row.whole}`);
}
