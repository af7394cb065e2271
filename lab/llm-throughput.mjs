#!/usr/bin/env node
// The LLM path's throughput on a GPU (issue 20.1): `optimize --proposer llm` against the
// scripted stand-in for Anthropic's Messages API (test/fixtures/llm-standin/server.mjs),
// answering at once with N whole kernels, P proposals in flight. Each reply is the task's
// template kernel (kernels/<task>/kernel.cu) with one combination of its tunables written as
// #defines above it, every combination its task.json's constraints allow and each one
// different: real kernels, all correct on every configuration (the template sweep checked
// each), of different speeds. What it measures is the evaluation pipeline behind the LLM
// proposer (the same evaluator, final checks and archive as the tuner's), with the API's
// latency taken out. Needs dist/ (npm run build; the bundle too where it is carried), nvcc
// and python3 with torch.
//
//   node lab/llm-throughput.mjs [--task softmax] [--replies 40] [--parallel 4] [--out DIR]
//
// Writes DIR/{script.json, requests.jsonl, archive.jsonl, optimize.log, result.json, best.cu,
// phases.txt} and prints `lab/search-phases.mjs`'s table for the run. Exit 0 when the run
// ended (a win or not) and every reply became a candidate that passed its verification (one
// the screen raced out passed it too), 1 otherwise, 2 on bad arguments.
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : process.argv[at + 1];
}

function fail(message, code = 2) {
  process.stderr.write(`llm-throughput: ${message}\n`);
  process.exit(code);
}

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  process.stdout.write(
    "usage: node lab/llm-throughput.mjs [--task softmax] [--replies 40] [--parallel 4] [--out DIR]\n",
  );
  process.exit(0);
}
const taskName = option("task", "softmax");
const replies = Number(option("replies", "40"));
const parallel = Number(option("parallel", "4"));
const out = resolve(option("out", join(process.env.OUT ?? "/tmp", `llm-throughput-${taskName}`)));
if (!/^[a-z0-9_]+$/.test(taskName)) fail(`--task ${taskName}: name a folder of kernels/`);
if (!Number.isInteger(replies) || replies < 1) fail("--replies takes a whole number of 1 or more");
if (!Number.isInteger(parallel) || parallel < 1)
  fail("--parallel takes a whole number of 1 or more");
const taskDir = join(root, "kernels", taskName);
const spec = JSON.parse(readFileSync(join(taskDir, "task.json"), "utf8"));
const template = readFileSync(join(taskDir, spec.kernel ?? "kernel.cu"), "utf8");
const constraintsModule = join(root, "dist", "runner", "src", "tasks", "constraints.js");
if (!existsSync(constraintsModule))
  fail("dist/ is missing: run npm run build (and npm run bundle) first");
const { parseConstraints, satisfies } = await import(constraintsModule);

/** Every combination of the tunables the constraints allow, in a fixed order. */
function combinations(tunables, constraints) {
  let all = [{}];
  for (const [name, values] of Object.entries(tunables)) {
    all = all.flatMap((partial) => values.map((value) => ({ ...partial, [name]: value })));
  }
  return all.filter((values) => satisfies(constraints, values));
}

const allowed = combinations(spec.tunables ?? {}, parseConstraints(spec.constraints ?? []));
if (allowed.length < replies) {
  fail(
    `kernels/${taskName} allows ${allowed.length} combinations of its tunables: ask for that many replies or fewer`,
  );
}
// spread over the whole table, not its first corner: every k-th combination
const step = allowed.length / replies;
const chosen = Array.from({ length: replies }, (_, i) => allowed[Math.floor(i * step)]);

function reply(values, i) {
  const defines = Object.entries(values)
    .map(([name, value]) => `#define ${name} ${value}`)
    .join("\n");
  const label = Object.entries(values)
    .map(([name, value]) => `${name}=${value}`)
    .join(" ");
  return [
    `Name: template-${i + 1}`,
    `Thought: the template with ${label}: another work split, vector width and pass structure.`,
    "",
    "```cuda",
    defines,
    template.trimEnd(),
    "```",
    "",
  ].join("\n");
}

mkdirSync(out, { recursive: true });
const scriptPath = join(out, "script.json");
writeFileSync(
  scriptPath,
  `${JSON.stringify(
    {
      task: `kernels/${taskName}`,
      config: "free",
      replies: chosen.map((values, i) => ({
        text: reply(values, i),
        usage: { input_tokens: 2000, output_tokens: 2500 },
        expect: { passes: true },
      })),
    },
    null,
    1,
  )}\n`,
);

const requests = join(out, "requests.jsonl");
writeFileSync(requests, "");
const standin = spawn(
  process.execPath,
  [
    join(root, "test/fixtures/llm-standin/server.mjs"),
    "--script",
    scriptPath,
    "--requests",
    requests,
  ],
  { stdio: ["ignore", "pipe", "inherit"] },
);
const url = await new Promise((resolveUrl, reject) => {
  const lines = createInterface({ input: standin.stdout });
  lines.once("line", (line) => resolveUrl(JSON.parse(line).url));
  standin.once("exit", (code) =>
    reject(new Error(`the stand-in exited (${code}) before it was ready`)),
  );
});

const archive = join(out, "archive.jsonl");
const started = new Date();
process.stdout.write(
  `# ${started.toISOString()} llm throughput: kernels/${taskName}, ${replies} replies, ${parallel} in flight\n`,
);
// the bundle where it was built (the GPU machine gets it carried along), else the compiled CLI
const bundle = join(root, "dist", "evokernel.mjs");
const cli = existsSync(bundle) ? bundle : join(root, "bin", "evokernel.js");
const run = spawnSync(
  process.execPath,
  [
    cli,
    "optimize",
    join("kernels", taskName),
    "--proposer",
    "llm",
    "--config",
    "free",
    "--candidates",
    String(replies),
    "--parallel",
    String(parallel),
    "--seed",
    "1",
    "--archive",
    archive,
    "--out",
    out, // result.json beside the archive: search-phases.mjs reads the whole run from it
  ],
  {
    cwd: root,
    env: { ...process.env, ANTHROPIC_API_KEY: "sk-ant-standin-not-a-key", ANTHROPIC_BASE_URL: url },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  },
);
standin.kill("SIGTERM");
writeFileSync(join(out, "optimize.log"), `${run.stdout ?? ""}${run.stderr ?? ""}`);
process.stdout.write(`optimize exit ${run.status}\n`);

const lines = existsSync(archive)
  ? readFileSync(archive, "utf8")
      .split("\n")
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line))
  : [];
const proposals = lines.filter((line) => line.individual?.id !== "c0");
const passed = proposals.filter((line) => line.individual?.evaluation?.ok === true);
const failed = proposals.filter((line) => line.individual?.evaluation?.ok !== true);
const reasons = failed.map(
  (line) =>
    `${line.individual?.id ?? "-"}: ${line.individual?.evaluation?.reason ?? line.failure?.reason ?? "no candidate"}`,
);
const phases = spawnSync(process.execPath, [join(root, "lab/search-phases.mjs"), archive], {
  encoding: "utf8",
});
writeFileSync(join(out, "phases.txt"), phases.stdout ?? "");
process.stdout.write(phases.stdout ?? "");
process.stdout.write(
  `replies ${replies}, candidates ${proposals.length}, passed ${passed.length}` +
    (reasons.length > 0 ? `; not passed: ${reasons.join("; ")}` : "") +
    "\n",
);
// optimize's exit: 0 a win, 1 no win; anything else is an error
process.exit((run.status === 0 || run.status === 1) && passed.length === replies ? 0 : 1);
