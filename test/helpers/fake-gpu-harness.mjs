#!/usr/bin/env node
// A stand-in for `python -m evokernel_harness` on a machine with a GPU, for CLI tests of
// commands that need one (EVOKERNEL_PYTHON points here). It writes well-formed records:
// every candidate passes; a candidate's time follows its BLOCK_SIZE (-D, or `speed=` in
// its source): 512 is the fastest; in a template (kernels/softmax) THREADS_PER_ROW plays
// BLOCK_SIZE's part, and VEC 4 and CACHE 1 make it faster still. It takes the runner's typed
// requests (src/shared/contract/harness-request.ts): one as `request JSON`, or one a line
// under `serve`, which speaks the fork server's line protocol.
// A source can ask for what the real harness would find in it, in a comment:
// `fake-harness: static=CODE` (a static finding), `fake-harness: compile-error`,
// `fake-harness: verify=REASON` (rejected, on the quick check too), `fake-harness:
// crash-in=STAGE` (the child dies by a signal in quick, verify or bench, whether that stage
// runs alone or in `evaluate`), `fake-harness: fail-in=STAGE` (the harness itself fails there
// as the real one does: a Python traceback on stderr, exit 4; `fake-harness: print=WORD`
// puts WORD in that output, for the tests of redaction). Bench records carry a profile naming the source's first
// __global__ function. `evaluate` writes the quick, verify and bench records to their own
// files and stops after the first that is not ok.
import { createHash } from "node:crypto";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { basename, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createInterface } from "node:readline";

const device = {
  name: "Fake GPU",
  backend: "cuda",
  driver: "999.1",
  torch: "2.11.0",
  cuda: "13.0",
  sms: 132,
  l2Bytes: 52428800,
  smClockMHz: 1980,
  python: "3.12.3",
};
const visible = [
  { name: "8192x8192", dims: { M: 8192, N: 8192 } },
  { name: "32768x1024", dims: { M: 32768, N: 1024 } },
  { name: "odd-4097x5003", dims: { M: 4097, N: 5003 } },
];
const heldout = [{ name: "tall-12289x999", dims: { M: 12289, N: 999 } }];
const SPEED = { 128: 1.25, 256: 1, 512: 0.7, 1024: 0.9 };

/** A candidate's time as a fraction of the baseline's, from what its build recorded. */
function speedOf(artifact, candidate) {
  const built = artifact && existsSync(artifact) ? JSON.parse(readFileSync(artifact, "utf8")) : {};
  const source = candidate && existsSync(candidate) ? readFileSync(candidate, "utf8") : "";
  const marked = /speed=([\d.]+)/.exec(source);
  if (marked) return Number(marked[1]);
  const knob = (name) =>
    built.defines?.[name] ?? new RegExp(`#define ${name} (\\d+)`).exec(source)?.[1];
  const block = knob("BLOCK_SIZE") ?? knob("THREADS_PER_ROW") ?? 256;
  const vec = Number(knob("VEC") ?? 1) === 4 ? 0.8 : 1;
  const cache = Number(knob("CACHE") ?? 0) === 1 ? 0.9 : 1;
  return (SPEED[block] ?? 1) * vec * cache;
}

/** What a candidate's source asks this harness to find (`fake-harness: KEY=VALUE`). */
function marked(candidate, key) {
  const source = candidate && existsSync(candidate) ? readFileSync(candidate, "utf8") : "";
  const found = new RegExp(`fake-harness: ${key}(?:=([\\w-]+))?`).exec(source);
  return found ? (found[1] ?? true) : null;
}

function profileOf(candidate, speed) {
  const source = candidate && existsSync(candidate) ? readFileSync(candidate, "utf8") : "";
  const name = /__global__[^(]*?(\w+)\s*\(/.exec(source)?.[1] ?? "kernel";
  return { config: visible[0].name, kernels: [{ name, us: 1000 * speed, calls: 1 }] };
}

const statOf = (ms) => ({
  medianMs: ms,
  p20Ms: ms * 0.98,
  p80Ms: ms * 1.02,
  minMs: ms * 0.97,
  meanMs: ms,
  n: 100,
});

/**
 * EVOKERNEL_FAKE_SLOW_GPU=ID:FACTOR: on that GPU (the first of CUDA_VISIBLE_DEVICES, as a
 * lane's fork server has it) every time is FACTOR times longer: GPUs of one model differ.
 */
function laneSlowdown() {
  const [gpu, factor] = (process.env.EVOKERNEL_FAKE_SLOW_GPU ?? "").split(":");
  return gpu !== "" && gpu === thisGpu() ? Number(factor) : 1;
}

function thisGpu() {
  return (process.env.CUDA_VISIBLE_DEVICES ?? "").split(",")[0] ?? "";
}

const COMMANDS = {
  // EVOKERNEL_FAKE_NO_GPU=1: a machine with torch but no CUDA GPU (commands that need one stop)
  // EVOKERNEL_FAKE_GPUS=N: a machine of N GPUs (0 … N−1): on any other, torch finds none
  device: () =>
    process.env.EVOKERNEL_FAKE_NO_GPU === "1" ||
    (process.env.EVOKERNEL_FAKE_GPUS !== undefined &&
      !(Number(thisGpu() || 0) < Number(process.env.EVOKERNEL_FAKE_GPUS)))
      ? {
          schema: 1,
          kind: "device",
          cuda: false,
          device: {
            ...device,
            name: "cpu",
            backend: "cpu",
            driver: null,
            cuda: null,
            sms: null,
            l2Bytes: null,
            smClockMHz: null,
          },
        }
      : { schema: 1, kind: "device", cuda: true, device },
  inspect: (request) => ({
    schema: 1,
    kind: "task",
    ok: true,
    error: null,
    name: basename(request.task ?? "softmax"),
    format: "native",
    path: request.task,
    backward: false,
    baseline: null,
    configs: [
      ...visible.map((c) => ({ ...c, heldout: false })),
      ...heldout.map((c) => ({ ...c, heldout: true })),
    ].map((c) => ({
      ...c,
      derived: false,
      init: "normal",
      inputs: [{ name: "x", shape: [c.dims.M, c.dims.N], dtype: "float32" }],
    })),
    notes: [],
    probe: null,
  }),
  "static-context": (request) => ({
    schema: 1,
    kind: "static-context",
    task: basename(request.task ?? "softmax"),
    referenceOps: [],
    libraries: "allow",
  }),
  static: (request) => {
    const code = marked(request.candidate, "static");
    const findings =
      typeof code === "string"
        ? [{ code, hack: 3, line: 1, text: "", message: `${code} (fake)`, severity: "reject" }]
        : [];
    return { schema: 1, kind: "static", ok: findings.length === 0, format: "evk", findings };
  },
  build: (request) => {
    const candidate = request.candidate;
    const defines = Object.fromEntries((request.defines ?? []).map((pair) => pair.split("=")));
    const hash = createHash("sha256")
      .update(readFileSync(candidate))
      .update(JSON.stringify(defines))
      .digest("hex");
    // where the harness puts a library (its build's own folder in the cache), so the runner
    // seals it as it seals a real one (runner/src/harness/sealed.ts)
    const folder = `${request.cache}/${hash.slice(0, 24)}`;
    const artifact = `${folder}/candidate.so`;
    const broken = marked(candidate, "compile-error") !== null;
    mkdirSync(folder, { recursive: true });
    writeFileSync(artifact, JSON.stringify({ defines }));
    return {
      schema: 1,
      kind: "build",
      ok: !broken,
      format: "evk",
      artifact: broken ? null : artifact,
      cached: false,
      seconds: 0.01,
      hash,
      log: broken ? `${candidate}(12): error: identifier "undefined_name" is undefined` : "",
    };
  },
  verify: (request) => {
    const configs = request.quick
      ? visible.slice(2)
      : [...visible, ...(request.heldout ? heldout : [])];
    const reason = marked(request.candidate, "verify");
    const failed = typeof reason === "string";
    return {
      schema: 1,
      kind: "verify",
      task: "softmax",
      candidate: request.candidate,
      format: "evk",
      ok: !failed,
      status: failed ? "rejected" : "passed",
      reason: failed ? reason : null,
      hack: null,
      message: failed ? `${reason} on ${configs[0].name}: got 0.5, expected 0.25 (fake)` : "passed",
      mismatch: null,
      configs: configs.map((c) => ({
        name: c.name,
        heldout: heldout.includes(c),
        derived: false,
        ok: !failed,
        trials: 2,
        maxAbs: 1e-7,
        normRel: 1e-8,
        reason: failed ? reason : null,
      })),
      checks: [],
      warnings: [],
      seconds: { load: 0.01, verify: 0.01 },
      device,
      seed: 1,
    };
  },
  bench: (request) => {
    const candidate = request.candidate;
    const slow = laneSlowdown();
    const stat = (ms) => statOf(ms * slow);
    const speed = speedOf(request.artifact, candidate);
    // race (the screen), after the first configuration as the real harness's _race decides:
    // the candidate's most favourable speedup there and, on every other configuration, the
    // most a kernel could gain (its ceiling over 0.85), under the leader's over them all
    const race = request.race ?? null;
    const ceilings = request.raceCeilings ?? {};
    const first = visible[0];
    const names = race === null ? [] : Object.keys(race);
    const rest = names.filter((name) => name !== first.name);
    const geomean = (xs) => Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
    const upper = geomean([
      stat(1).p80Ms / stat(speed).p20Ms,
      ...rest.map((name) => (ceilings[name] ?? Infinity) / 0.85),
    ]);
    const leader = race === null ? Infinity : geomean(names.map((name) => race[name]));
    const raced =
      candidate !== undefined && race !== null && first.name in race && upper < leader
        ? {
            config: first.name,
            timed: [first.name],
            speedupUpper: upper,
            leaderLower: leader,
            message: `at most ${upper.toFixed(3)}x, under the leader's ${leader.toFixed(3)}x: it cannot win`,
          }
        : null;
    return {
      race: raced,
      schema: 1,
      kind: "bench",
      task: "softmax",
      ok: true,
      reason: null,
      message: raced === null ? "" : `raced out after ${first.name}: ${raced.message}`,
      device,
      ceilings: {
        bandwidthGBs: 3000,
        fp32Tflops: 50,
        bf16Tflops: 700,
        measuredAt: "2026-11-21T00:00:00Z",
        device: device.name,
      },
      configs: (raced === null ? visible : [first]).map((c) => ({
        name: c.name,
        dims: c.dims,
        bytes: 8 * c.dims.M * c.dims.N,
        flops: 5 * c.dims.M * c.dims.N,
        floorMs: 0.25,
        eager: stat(2),
        compile: request.noCompile ? null : stat(1.5),
        baseline: stat(1),
        candidate: candidate === undefined ? null : stat(speed),
        reason: null,
      })),
      profile: candidate === undefined || raced !== null ? null : profileOf(candidate, speed),
      seconds: 0.1,
    };
  },
};

/**
 * EVOKERNEL_FAKE_LANE_BARRIER=N:FILE: a screen (`evaluate`) other than the run's first (the
 * kernel to beat, screened alone) holds its GPU until N GPUs have each begun one, or 60 s
 * have passed; FILE gets `met` or `alone` for each. Lanes that run at once meet; lanes run
 * one after another never do.
 */
async function laneBarrier() {
  const [count, file] = (process.env.EVOKERNEL_FAKE_LANE_BARRIER ?? "").split(":");
  if (file === undefined) return;
  const started = () =>
    existsSync(file)
      ? readFileSync(file, "utf8")
          .split("\n")
          .filter((line) => line.startsWith("start "))
      : [];
  const first = started().length === 0;
  appendFileSync(file, `start ${thisGpu()}\n`);
  if (first) return;
  const deadline = Date.now() + 60_000;
  const met = () =>
    new Set(
      started()
        .slice(1)
        .map((line) => line.slice(6)),
    ).size >= Number(count);
  while (!met() && Date.now() < deadline) await sleep(20);
  appendFileSync(file, `${met() ? "met" : "alone"} ${thisGpu()}\n`);
}

/** The stage a command runs, for `crash-in`. */
function stageOf(request) {
  if (request.command === "verify") return request.quick ? "quick" : "verify";
  return request.command;
}

/** The traceback the real harness prints when it fails (commands/__init__.py: exit 4). */
function failure(request) {
  const said = marked(request.candidate, "print");
  return [
    "Traceback (most recent call last):",
    '  File "/opt/evokernel/runner/harness/evokernel_harness/commands/__init__.py", line 50, in run',
    "    record = COMMANDS[args.command](args)",
    ...(typeof said === "string" ? [`  the job's value: ${said}`] : []),
    `PermissionError: [Errno 13] Permission denied: '${request.task ?? request.candidate}'`,
    "",
  ].join("\n");
}

/** Runs one typed request; says how it ended when not normally ({ signal } or { exit, log }). */
function run(request) {
  // EVOKERNEL_FAKE_CALLS=FILE: each request's command and where it ran ("serve --cpu": the
  // CPU fork server, "serve": the GPU one, "request": a process of its own), a line each
  const callLog = process.env.EVOKERNEL_FAKE_CALLS;
  if (callLog !== undefined) {
    const warm = request.warmCompile === true ? " --warm-compile" : "";
    appendFileSync(callLog, `${startedAs} ${request.command}${warm}\n`);
  }
  // EVOKERNEL_FAKE_TASK_LOG=FILE: each request naming a task, and whether it carried the
  // task.json (a real harness reads the file when it did not), one JSON line each
  const taskLog = process.env.EVOKERNEL_FAKE_TASK_LOG;
  if (taskLog !== undefined && request.task !== undefined) {
    const line = { command: request.command, task: request.task, spec: "taskSpec" in request };
    appendFileSync(taskLog, `${JSON.stringify(line)}\n`);
  }
  // EVOKERNEL_FAKE_LANE_LOG=FILE: each GPU request's command and the GPU it ran on
  // (CUDA_VISIBLE_DEVICES), a JSON line each
  const laneLog = process.env.EVOKERNEL_FAKE_LANE_LOG;
  if (laneLog !== undefined && ["evaluate", "verify", "bench"].includes(request.command)) {
    const line = { command: request.command, gpu: thisGpu(), startedAs };
    appendFileSync(laneLog, `${JSON.stringify({ ...line, heldout: request.heldout === true })}\n`);
  }
  const crashIn = marked(request.candidate, "crash-in");
  const failIn = marked(request.candidate, "fail-in");
  if (request.command === "evaluate") {
    const stages = [
      ["quick", () => COMMANDS.verify({ ...request, command: "verify", quick: true })],
      ["verify", () => COMMANDS.verify({ ...request, command: "verify" })],
      ["bench", () => COMMANDS.bench({ ...request, command: "bench" })],
    ];
    for (const [stage, make] of stages) {
      if (crashIn === stage) return { signal: "SIGSEGV" };
      if (failIn === stage) return { exit: 4, log: failure(request) };
      const record = make();
      writeFileSync(request[`${stage}Out`], JSON.stringify(record));
      if (!record.ok) break;
    }
    return {};
  }
  if (crashIn !== null && crashIn === stageOf(request)) return { signal: "SIGSEGV" };
  if (failIn !== null && failIn === stageOf(request)) return { exit: 4, log: failure(request) };
  const record = COMMANDS[request.command](request);
  writeFileSync(request.out, JSON.stringify(record));
  return {};
}

// A candidate runs in this process: it must never see an API key (runner/src/harness/exec.ts).
const leaked = Object.keys(process.env).filter((name) => name.startsWith("ANTHROPIC_"));
if (leaked.length > 0) {
  process.stderr.write(`fake harness: the harness child was given ${leaked.join(", ")}\n`);
  process.exit(4);
}

// The harness starts as `python -I -c "…import evokernel_harness.__main__" ARGS`; any other
// `-c …` is the runner asking whether this "Python" finds torch: it does.
const [isolated, code, source, ...argv] = process.argv.slice(2);
const launch = isolated === "-I" && code === "-c" && source?.includes("evokernel_harness.__main__");
if (!launch && process.argv.includes("-c")) process.exit(0);
if (!launch) process.exit(2);
const startedAs = argv[0] === "serve" ? argv.join(" ") : "request";
if (argv[0] === "serve") {
  // EVOKERNEL_FAKE_READY_AFTER_BUILD=S: the server is ready once a build has written its
  // artifact (or S seconds have passed), as torch's import outlasts a build; it writes which
  // in $EVOKERNEL_CACHE/fake-serve-ready.txt
  // (the CPU fork server, `serve --cpu`, is the one that builds: it is ready at once)
  const waitS = argv.includes("--cpu")
    ? 0
    : Number(process.env.EVOKERNEL_FAKE_READY_AFTER_BUILD ?? 0);
  const cache = process.env.EVOKERNEL_CACHE;
  if (waitS > 0 && cache !== undefined) {
    const built = () =>
      existsSync(cache) &&
      readdirSync(cache).some(
        (f) => /^[0-9a-f]{24}$/.test(f) && existsSync(join(cache, f, "candidate.so")),
      );
    const deadline = Date.now() + waitS * 1000;
    while (!built() && Date.now() < deadline) await sleep(20);
    const ready = built() ? "after a build" : "before any build";
    writeFileSync(join(cache, "fake-serve-ready.txt"), ready);
  }
  // EVOKERNEL_FAKE_HELPER_PIDS=FILE: the server leaves a helper running in its process group
  // (as a real fork server's workers run beside it) and appends the helper's pid to FILE;
  // a server whose stdin closes exits, the helper does not
  const helperLog = process.env.EVOKERNEL_FAKE_HELPER_PIDS;
  if (helperLog !== undefined) {
    const { spawn } = await import("node:child_process");
    const helper = spawn("sleep", ["1000"], { stdio: "ignore" });
    helper.unref();
    appendFileSync(helperLog, `${helper.pid}\n`);
    process.stdin.on("end", () => process.exit(0));
  }
  console.log(JSON.stringify({ ready: true, pid: process.pid }));
  createInterface({ input: process.stdin }).on("line", async (line) => {
    const request = JSON.parse(line);
    // EVOKERNEL_FAKE_GPU_DIES=ID:N: once GPU ID's servers have run N requests, its server
    // exits as it takes the next one, before it says `started` (a GPU gone from under a
    // search); counted in $EVOKERNEL_CACHE/fake-gpu-ID-runs
    const [diesOn, after] = (process.env.EVOKERNEL_FAKE_GPU_DIES ?? "").split(":");
    if (
      diesOn !== undefined &&
      after !== undefined &&
      diesOn === thisGpu() &&
      !argv.includes("--cpu")
    ) {
      const runs = join(process.env.EVOKERNEL_CACHE ?? ".", `fake-gpu-${diesOn}-runs`);
      const ran = existsSync(runs) ? readFileSync(runs, "utf8").length : 0;
      if (ran >= Number(after)) process.exit(9);
      appendFileSync(runs, "x");
    }
    console.log(JSON.stringify({ id: request.id, started: true, waitedS: 0 }));
    if (request.request.command === "evaluate") await laneBarrier();
    const { signal, exit, log } = run(request.request);
    const answer = {
      id: request.id,
      exit: signal === undefined ? (exit ?? 0) : null,
      signal: signal ?? null,
      seconds: 0.01,
      timedOut: false,
      memKilled: false,
      log: log ?? "",
    };
    console.log(JSON.stringify(answer));
  });
} else if (argv[0] !== "request" || argv.length !== 2) {
  // the runner sends one typed request (`request JSON`), never flags
  process.stderr.write(`fake harness: not a typed request: ${argv.join(" ")}\n`);
  process.exit(2);
} else {
  const ended = run(JSON.parse(argv[1]));
  if (ended.signal !== undefined) process.kill(process.pid, "SIGKILL");
  if (ended.exit !== undefined) {
    process.stderr.write(ended.log);
    process.exit(ended.exit);
  }
}
