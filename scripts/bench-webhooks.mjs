#!/usr/bin/env node
// Webhook benchmark: the real app process (bundled, as shipped) against the local GitHub
// stand-in, driven with signed webhooks over loopback. Measures how fast a webhook is
// answered, how long from webhook to the workflow_dispatch request, and whether a minute at
// 100 webhooks a second loses or duplicates anything (redeliveries included). Bounded in
// count and time. Usage: node scripts/bench-webhooks.mjs [--seconds 60] [--rate 100] [--out FILE]
import { performance } from "node:perf_hooks";
import { setTimeout } from "node:timers";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { bundleApp } from "./bundle.mjs";
import {
  generateAppKey,
  pullRequestEvent,
  sendWebhook,
  startApp,
  startStandin,
} from "./github-standin.mjs";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "60" },
    rate: { type: "string", default: "100" },
    latency: { type: "string", default: "200" },
    out: { type: "string" },
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

const standin = await startStandin({ config: "pullRequests: bench\ndispatch: actions\n" });
let app;
try {
  const entry = await bundleApp(join(dir, "app.mjs"));
  app = await startApp({
    entry,
    standin,
    port: 30_000 + Math.floor(Math.random() * 20_000),
    secret: SECRET,
    privateKey: generateAppKey(),
    env: { EVOKERNEL_THROTTLE: "off", LOG_LEVEL: "error", NODE_ENV: "production" },
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
    "GitHub: the loopback stand-in (scripts/github-standin.mjs); EVOKERNEL_THROTTLE=off (no 1 s write pacing: nothing to protect here)",
  );
  say(
    "each webhook: pull_request.opened touching kernels/softmax -> config, files, workflow_dispatch, check run (4 API calls)",
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

  // 2. Load: `rate` webhooks a second for `seconds`, 2% of them redelivered (same delivery id).
  const before = standin.dispatches.length;
  const loadNumbers = [];
  const loadAnswers = [];
  const failures = [];
  const inFlight = [];
  let redeliveries = 0;
  const total = rate * seconds;
  const started = performance.now();
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const event = newEvent();
    loadNumbers.push(event.number);
    const id = `load-${i}`;
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
  await standin
    .waitFor(() => standin.dispatches.length >= before + total, 300_000, "every load dispatch")
    .catch((error) => say(`  ${error.message}`));
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const drainedSeconds = (performance.now() - started) / 1000;
  const dispatched = standin.dispatches.slice(before).map((d) => JSON.parse(d.inputs.spec).pr);
  const unique = new Set(dispatched);
  const lost = loadNumbers.filter((n) => !unique.has(n)).length;
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
    `  dispatches: ${dispatched.length} for ${total} PRs: ${lost} lost, ${duplicated} duplicated (redeliveries must not dispatch again)`,
  );
  say(
    `  API requests the stand-in served: ${standin.requests.length}; without a route: ${standin.unknown().length}`,
  );
  const ok =
    failures.length === 0 &&
    lost === 0 &&
    duplicated === 0 &&
    pct(answers, 50) <= 50 &&
    pct(toDispatch, 50) <= 200;
  say("");
  say(
    `load average at the end: ${loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}`,
  );
  say(ok ? "PASS: every target met" : "FAIL: a target was missed (see above)");
  if (values.out) await writeFile(values.out, `${lines.join("\n")}\n`);
  process.exitCode = ok ? 0 : 1;
} finally {
  await app?.stop();
  await standin.close();
  await rm(dir, { recursive: true, force: true });
}

function pct(values, p) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function fmt(ms) {
  return ms.toFixed(1);
}
