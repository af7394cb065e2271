#!/usr/bin/env node
// Webhook benchmark: the real app process (bundled, as shipped) against the local GitHub
// stand-in, driven with signed webhooks over loopback. Measures how fast a webhook is
// answered, how long from webhook to the workflow_dispatch request, and whether a minute at
// 100 webhooks a second loses or duplicates anything (redeliveries included). Bounded in
// count and time. With --mix (issue 17.8) the load carries large payloads (1 MB every 50th,
// 24 MB every 500th, 26 MB every 1000th, which must be refused), and every 200th PR's run
// completes with a zip-bomb artifact whose check run must be concluded; the app's resident
// memory is sampled throughout and its high-water mark (VmHWM) reported, split by a probe
// loaded into the app (bench-memory-probe.mjs) into V8's heap, its live part and buffers.
// Usage: node lab/bench-webhooks.mjs [--seconds 60] [--rate 100] [--mix] [--out FILE]
//        [--node-option=--some-v8-flag ...] (Node options for the app process)
import { Buffer } from "node:buffer";
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { createDeflateRaw } from "node:zlib";
import { clearInterval, setInterval, setTimeout } from "node:timers";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { bundleApp } from "../scripts/bundle.mjs";
import {
  generateAppKey,
  pullRequestEvent,
  sendWebhook,
  startApp,
  startStandin,
  workflowRunEvent,
} from "../test/helpers/github-standin.mjs";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "60" },
    rate: { type: "string", default: "100" },
    latency: { type: "string", default: "200" },
    mix: { type: "boolean", default: false },
    out: { type: "string" },
    // Node's options for the app's process, e.g. --node-option=--max-semi-space-size=4
    "node-option": { type: "string", multiple: true, default: [] },
  },
});
const seconds = Math.min(Number(values.seconds), 120);
const rate = Math.min(Number(values.rate), 500);
const latencyCount = Math.min(Number(values.latency), 1000);
const SECRET = "bench-secret";
const KERNEL_FILE = {
  filename: "kernels/softmax/kernel.cu",
  status: "modified",
  patch: "@@ -1 +1 @@\n-a\n+b",
};

const dir = await mkdtemp(join(tmpdir(), "evokernel-bench-"));
const lines = [];
function say(line) {
  lines.push(line);
  console.log(line);
}

const probeFile = join(dir, "memory.json");
const standin = await startStandin({ config: "pullRequests: bench\ndispatch: actions\n" });
let app;
try {
  const entry = await bundleApp(join(dir, "app.mjs"));
  app = await startApp({
    entry,
    standin,
    secret: SECRET,
    privateKey: generateAppKey(),
    // The probe splits the app's memory into V8's heap and what lies outside it.
    nodeArgs: [
      ...values["node-option"],
      "--import",
      new URL("./bench-memory-probe.mjs", import.meta.url).href,
    ],
    // Every PR here is one installation's and no run ever ends: lift the cap on its jobs.
    env: {
      EVOKERNEL_THROTTLE: "off",
      EVOKERNEL_MAX_JOBS_PER_INSTALLATION: "1000000",
      LOG_LEVEL: "error",
      NODE_ENV: "production",
      EVOKERNEL_MEMORY_PROBE: probeFile,
    },
  });

  let nextPr = 1;
  const sentAt = new Map();
  function newEvent() {
    const number = nextPr++;
    const head = number.toString(16).padStart(40, "a");
    standin.state.pulls[number] = { head, base: "b".repeat(40), files: [KERNEL_FILE] };
    return { number, head, payload: pullRequestEvent({ number, head, base: "b".repeat(40) }) };
  }
  async function send(event, id) {
    const started = performance.now();
    if (!sentAt.has(event.number)) sentAt.set(event.number, started);
    return sendWebhook(app.url, SECRET, "pull_request", event.payload, id);
  }
  function dispatchLatencies(numbers) {
    const byPr = new Map(standin.dispatches.map((d) => [JSON.parse(d.inputs.spec).pr, d.at]));
    return numbers.map((n) => byPr.get(n) - sentAt.get(n)).filter((ms) => Number.isFinite(ms));
  }

  say(`evokernel webhook benchmark, ${new Date().toISOString()}`);
  say(
    `machine: ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), Node ${process.version}; app bundled (dist/app.mjs as shipped), one process; load average at start ${loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")} (other work shares these cores)`,
  );
  say(
    "GitHub: the loopback stand-in (test/helpers/github-standin.mjs); EVOKERNEL_THROTTLE=off (no 1 s write pacing: nothing to protect here)",
  );
  if (values["node-option"].length)
    say(`the app's Node options: ${values["node-option"].join(" ")}`);
  say(
    "each webhook: pull_request.opened touching kernels/softmax -> config, files, the job's claim (list, check run, list), the PR's head, workflow_dispatch, the check run linked (8 API calls)",
  );
  say("");

  // Warm-up: the first requests pay for JIT and the first installation token.
  for (let i = 0; i < 20; i++) await send(newEvent(), `warm-${i}`);
  await standin.waitFor(() => standin.dispatches.length >= 20, 30_000, "warm-up dispatches");

  // 1. Latency, one webhook at a time at 20 a second.
  const latencyNumbers = [];
  const answers = [];
  for (let i = 0; i < latencyCount; i++) {
    const event = newEvent();
    latencyNumbers.push(event.number);
    const { status, ms } = await send(event, `lat-${i}`);
    if (status !== 200) throw new Error(`webhook answered ${status}`);
    answers.push(ms);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await standin.waitFor(
    () => standin.dispatches.length >= 20 + latencyCount,
    60_000,
    "latency dispatches",
  );
  const toDispatch = dispatchLatencies(latencyNumbers);
  say(`latency (${latencyCount} webhooks, 20/s):`);
  say(
    `  webhook answered:        p50 ${fmt(pct(answers, 50))} ms  p95 ${fmt(pct(answers, 95))} ms  max ${fmt(Math.max(...answers))} ms   (target p50 <= 50 ms)`,
  );
  say(
    `  webhook -> dispatch req: p50 ${fmt(pct(toDispatch, 50))} ms  p95 ${fmt(pct(toDispatch, 95))} ms  max ${fmt(Math.max(...toDispatch))} ms   (target p50 <= 200 ms)`,
  );
  say("");

  // The mix: padding for large payloads, one zip bomb, the app's memory sampled.
  const pad1 = "x".repeat(1024 * 1024);
  const pad24 = "x".repeat(24 * 1024 * 1024);
  const pad26 = "x".repeat(26 * 1024 * 1024);
  const large = { mb1: 0, mb24: 0 };
  const oversize = [];
  const bombPrs = [];
  const bombRuns = [];
  const bomb = values.mix ? await zipBomb(256) : Buffer.alloc(0);
  let rssPeak = 0;
  function rssFromProc(field) {
    try {
      const status = readFileSync(`/proc/${app.child.pid}/status`, "utf8");
      const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
      return match ? Number(match[1]) : undefined;
    } catch {
      return undefined;
    }
  }
  function sampleRss() {
    rssPeak = Math.max(rssPeak, rssFromProc("VmRSS") ?? 0);
  }
  const sampler = setInterval(sampleRss, 200);
  // Each dispatch is read once: this runs every 250 ms during the load, on the app's cores.
  const runByPr = new Map();
  let indexed = 0;
  function runOf(pr) {
    for (; indexed < standin.dispatches.length; indexed++) {
      const dispatch = standin.dispatches[indexed];
      const number = JSON.parse(dispatch.inputs.spec).pr;
      if (!runByPr.has(number)) runByPr.set(number, dispatch.runId);
    }
    return runByPr.get(pr);
  }
  // A bomb PR's run completes (with a zip bomb as its result artifact) as soon as it was
  // dispatched, while the load and its large payloads are still arriving.
  const bombSends = [];
  const bombSentAt = [];
  function completeBombRuns() {
    for (const n of bombPrs) {
      const runId = runOf(n);
      if (runId === undefined || bombRuns.includes(runId)) continue;
      standin.state.artifacts[runId] = bomb;
      bombRuns.push(runId);
      bombSentAt.push((performance.now() - started) / 1000);
      bombSends.push(
        sendWebhook(app.url, SECRET, "workflow_run", workflowRunEvent({ runId }), `bomb-${runId}`)
          .then(({ status }) => (status === 200 ? undefined : failures.push(status)))
          .catch((error) => failures.push(String(error))),
      );
    }
  }
  function concluded(runId) {
    const run = standin.checkRuns.find((r) => (r.external_id ?? "").includes(`@${runId}~`));
    return run?.status === "completed" && run.conclusion === "failure";
  }

  // 2. Load: `rate` webhooks a second for `seconds`, 2% of them redelivered (same delivery id).
  const before = standin.dispatches.length;
  const loadNumbers = [];
  const loadAnswers = [];
  const failures = [];
  const inFlight = [];
  let redeliveries = 0;
  const total = rate * seconds;
  const started = performance.now();
  const bombTimer = values.mix ? setInterval(completeBombRuns, 250) : undefined;
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const event = newEvent();
    const id = `load-${i}`;
    if (values.mix && i % 1000 === 500) {
      // Over GitHub's 25 MB: refused before it is read, so not a PR that should dispatch.
      event.payload.pull_request.body = pad26;
      inFlight.push(
        send(event, id).then(
          ({ status }) => oversize.push(status),
          () => oversize.push("reset"),
        ),
      );
      continue;
    }
    if (values.mix && i % 500 === 250) {
      event.payload.pull_request.body = pad24;
      large.mb24++;
    } else if (values.mix && i % 50 === 10) {
      event.payload.pull_request.body = pad1;
      large.mb1++;
    }
    if (values.mix && i % 200 === 100) bombPrs.push(event.number);
    loadNumbers.push(event.number);
    const redeliver = i % 50 === 25;
    if (redeliver) redeliveries++;
    inFlight.push(
      send(event, id).then(
        ({ status, ms }) => {
          loadAnswers.push(ms);
          if (status !== 200) failures.push(status);
          if (redeliver)
            return send(event, id).then((again) =>
              again.status === 200 ? undefined : failures.push(again.status),
            );
          return undefined;
        },
        (error) => failures.push(String(error)),
      ),
    );
  }
  await Promise.all(inFlight);
  const sentSeconds = (performance.now() - started) / 1000;
  if (values.mix) {
    await standin
      .waitFor(
        () => bombPrs.every((n) => runOf(n) !== undefined),
        300_000,
        "the bomb PRs' dispatches",
      )
      .catch((error) => say(`  ${error.message}`));
    completeBombRuns();
    clearInterval(bombTimer);
    await Promise.all(bombSends);
  }
  await standin
    .waitFor(
      () => standin.dispatches.length >= before + loadNumbers.length,
      300_000,
      "every load dispatch",
    )
    .catch((error) => say(`  ${error.message}`));
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const drainedSeconds = (performance.now() - started) / 1000;
  const dispatched = standin.dispatches.slice(before).map((d) => JSON.parse(d.inputs.spec).pr);
  const unique = new Set(dispatched);
  const lost = loadNumbers.filter((n) => !unique.has(n)).length;
  // An oversized payload (refused with 413) must dispatch nothing either.
  const duplicated = dispatched.length - unique.size;
  const loadToDispatch = dispatchLatencies(loadNumbers);
  say(
    `load (${total} webhooks at ${rate}/s + ${redeliveries} redeliveries, sent in ${sentSeconds.toFixed(1)} s, all dispatched by ${drainedSeconds.toFixed(1)} s):`,
  );
  say(
    `  answered: ${loadAnswers.length - failures.length} with 200, ${failures.length} failed${failures.length ? ` (${[...new Set(failures)].join(", ")})` : ""}`,
  );
  say(
    `  webhook answered:        p50 ${fmt(pct(loadAnswers, 50))} ms  p95 ${fmt(pct(loadAnswers, 95))} ms  p99 ${fmt(pct(loadAnswers, 99))} ms`,
  );
  say(
    `  webhook -> dispatch req: p50 ${fmt(pct(loadToDispatch, 50))} ms  p95 ${fmt(pct(loadToDispatch, 95))} ms  p99 ${fmt(pct(loadToDispatch, 99))} ms`,
  );
  say(
    `  sustained processing: ${(total / drainedSeconds).toFixed(1)} webhooks/s (${(standin.requests.length / drainedSeconds).toFixed(0)} API requests/s); the queue holds the rest, each webhook answered at once`,
  );
  say(
    `  dispatches: ${dispatched.length} for ${loadNumbers.length} PRs: ${lost} lost, ${duplicated} duplicated (redeliveries must not dispatch again)${total > loadNumbers.length ? `; ${total - loadNumbers.length} oversized, refused, dispatch nothing` : ""}`,
  );
  say(
    `  API requests the stand-in served: ${standin.requests.length}; without a route: ${standin.unknown().length}`,
  );
  say("");
  let mixOk = true;
  let refusedOk = 0;
  let bombsConcluded = 0;
  if (values.mix) {
    await standin
      .waitFor(
        () => bombRuns.every((runId) => concluded(runId)),
        120_000,
        "every bomb's check run concluded",
      )
      .catch((error) => say(`  ${error.message}`));
    refusedOk = oversize.filter((status) => status === 413 || status === "reset").length;
    bombsConcluded = bombRuns.filter((runId) => concluded(runId)).length;
    say(
      `  large payloads: ${large.mb1} of 1 MB and ${large.mb24} of 24 MB accepted and dispatched; ${oversize.length} of 26 MB refused before reading (${refusedOk} answered 413 or had the socket closed)`,
    );
    say(
      `  zip-bomb artifacts (256 MiB of zeros in ${(bomb.length / 1024).toFixed(0)} KB): ${bombRuns.length} of ${bombPrs.length} PRs' runs completed with one (each once dispatched: ${bombSentAt.length ? `${bombSentAt[0].toFixed(0)}-${bombSentAt[bombSentAt.length - 1].toFixed(0)} s` : "none"} after the load began), ${bombsConcluded} check runs concluded as failures`,
    );
  }
  clearInterval(sampler);
  sampleRss();
  const hwm = rssFromProc("VmHWM");
  // The probe writes its samples as the app exits.
  await app.stop();
  const probe = readProbe();
  say(
    `  app resident memory: high-water mark (VmHWM) ${hwm === undefined ? "?" : `${(hwm / 1024).toFixed(0)} MB`}, highest sampled every 200 ms ${(rssPeak / 1024).toFixed(0)} MB${values.mix ? " (target < 300 MB)" : ""}`,
  );
  if (probe) {
    const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
    const { atPeak, highest, liveAfterFullGc, fullGcs } = probe;
    say(
      `  inside the app (process.memoryUsage every 50 ms): at the resident peak ${mb(atPeak.rss)}: V8 heap ${mb(atPeak.heapUsed)} used of ${mb(atPeak.heapTotal)}, buffers ${mb(atPeak.arrayBuffers)} (external ${mb(atPeak.external)}); highest: heap used ${mb(highest.heapUsed)}, heap total ${mb(highest.heapTotal)}, buffers ${mb(highest.arrayBuffers)}; live after a full GC at most ${mb(liveAfterFullGc)} (${fullGcs} full GCs)`,
    );
  }
  if (values.mix)
    mixOk =
      refusedOk === oversize.length &&
      bombRuns.length === bombPrs.length &&
      bombsConcluded === bombRuns.length &&
      hwm !== undefined &&
      hwm < 300 * 1024;
  const ok =
    mixOk &&
    failures.length === 0 &&
    lost === 0 &&
    duplicated === 0 &&
    pct(answers, 50) <= 50 &&
    pct(toDispatch, 50) <= 200;
  say(
    `load average at the end: ${loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}`,
  );
  say(ok ? "PASS: every target met" : "FAIL: a target was missed (see above)");
  clearInterval(sampler);
  if (values.out) await writeFile(values.out, `${lines.join("\n")}\n`);
  process.exitCode = ok ? 0 : 1;
} finally {
  await app?.stop();
  await standin.close();
  await rm(dir, { recursive: true, force: true });
}

function readProbe() {
  try {
    return JSON.parse(readFileSync(probeFile, "utf8"));
  } catch {
    return undefined;
  }
}

/** `mib` MiB of zeros deflated as one zip entry whose header claims 100 bytes. */
async function zipBomb(mib) {
  const deflate = createDeflateRaw({ level: 9 });
  const parts = [];
  deflate.on("data", (chunk) => parts.push(chunk));
  const done = new Promise((resolve) => deflate.on("end", resolve));
  const zeros = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < mib; i++) {
    if (!deflate.write(zeros)) await new Promise((resolve) => deflate.once("drain", resolve));
  }
  deflate.end();
  await done;
  const data = Buffer.concat(parts);
  const name = Buffer.from("evokernel-result.json");
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(8, 8);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(100, 22);
  local.writeUInt16LE(name.length, 26);
  return Buffer.concat([local, name, data]);
}

function pct(values, p) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function fmt(ms) {
  return ms.toFixed(1);
}
