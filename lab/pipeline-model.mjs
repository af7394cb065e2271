#!/usr/bin/env node
// How long a search would have taken with another number of proposals in flight, from its
// archive (optimize --archive): each candidate's recorded build seconds and GPU seconds
// (verify + time) replayed through the engine's rule (evolve/engine.ts: proposal n starts
// once proposals 1 … n−P have finished), builds side by side, GPU work one piece at a time in
// the order builds end (gpu/queue.ts). A model, not a measurement: a build's seconds were
// measured under the run's own load (more builds at once would each take longer), and what the
// archive does not time (a harness call's start, the static check) is left out, so the first
// line compares the model at the run's own P with what the run took.
//   node lab/pipeline-model.mjs [--parallel 8,12,16] [--cores 16] ARCHIVE.jsonl...
import { readFileSync } from "node:fs";
import { basename, dirname } from "node:path";

export function candidatesOf(text) {
  const entries = text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line));
  const baseline = entries.find((entry) => entry.generation === 0);
  const search = entries
    .filter((entry) => entry.generation > 0)
    .sort((a, b) => a.generation - b.generation || a.slot - b.slot);
  return {
    start: baseline?.elapsedS ?? 0,
    end: Math.max(...entries.map((entry) => entry.elapsedS)),
    candidates: search.map((entry) => {
      const seconds = entry.individual?.evaluation?.seconds ?? {};
      return {
        build: seconds.compile ?? 0,
        gpu: (seconds.verify ?? 0) + (seconds.time ?? 0),
      };
    }),
  };
}

/** When the last candidate finishes, from `start`, with `parallel` in flight. */
export function simulate(candidates, { parallel, cores = 16, start = 0 }) {
  const finish = [];
  const built = [];
  const slots = Array.from({ length: Math.max(1, cores) }, () => start);
  const pending = [];
  let gpuFree = start;
  let next = 0;
  /** The latest finish over proposals 0 … k, or undefined while one of them is unknown. */
  const doneUpTo = (k) => {
    let latest = start;
    for (let i = 0; i <= k; i += 1) {
      if (finish[i] === undefined) return undefined;
      latest = Math.max(latest, finish[i]);
    }
    return latest;
  };
  // proposal n (0-based here) starts once proposals 0 … n−parallel have finished; the GPU takes
  // finished builds in the order they end. Each round: every proposal whose start is known is
  // built, then the GPU takes the earliest build.
  for (let done = 0; done < candidates.length; done += 1) {
    while (next < candidates.length) {
      const gate = next < parallel ? start : doneUpTo(next - parallel);
      if (gate === undefined) break;
      slots.sort((a, b) => a - b);
      built[next] = Math.max(gate, slots[0]) + candidates[next].build;
      slots[0] = built[next];
      pending.push(next);
      next += 1;
    }
    pending.sort((a, b) => built[a] - built[b] || a - b);
    const n = pending.shift();
    if (n === undefined) throw new Error("no candidate can start: the model is stuck");
    gpuFree = Math.max(gpuFree, built[n]) + candidates[n].gpu;
    finish[n] = gpuFree;
  }
  return Math.max(start, ...finish);
}

function main(argv) {
  const value = (flag) => {
    const i = argv.indexOf(flag);
    return i === -1 ? undefined : argv[i + 1];
  };
  const flagged = new Set(["--parallel", "--cores", "--run-parallel"]);
  const files = argv.filter((arg, i) => !arg.startsWith("--") && !flagged.has(argv[i - 1] ?? ""));
  if (argv.includes("--help") || files.length === 0) {
    console.log(
      "usage: node lab/pipeline-model.mjs [--parallel 8,12,16] [--cores 16] [--run-parallel 8] ARCHIVE.jsonl...",
    );
    return files.length === 0 && !argv.includes("--help") ? 2 : 0;
  }
  const parallels = (value("--parallel") ?? "4,8,12,16").split(",").map(Number);
  const cores = Number(value("--cores") ?? "16");
  const own = Number(value("--run-parallel") ?? "8");
  for (const file of files) {
    const run = candidatesOf(readFileSync(file, "utf8"));
    const n = run.candidates.length;
    const took = run.end - run.start;
    const gpu = run.candidates.reduce((s, c) => s + c.gpu, 0);
    const model = simulate(run.candidates, { parallel: own, cores, start: 0 });
    const rate = (s) => ((60 * n) / s).toFixed(1);
    const cells = parallels.map((p) => {
      const s = simulate(run.candidates, { parallel: p, cores, start: 0 });
      return `P=${p} ${s.toFixed(1)} s (${rate(s)}/min)`;
    });
    console.log(
      `${basename(dirname(file))}: ${n} candidates; the run took ${took.toFixed(1)} s (${rate(took)}/min), ` +
        `the model at P=${own} ${model.toFixed(1)} s; GPU busy ${gpu.toFixed(1)} s (at most ${rate(gpu)}/min) | ` +
        cells.join(" | "),
    );
  }
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = main(process.argv.slice(2));
