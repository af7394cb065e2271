#!/usr/bin/env node
// What starting one harness process costs, with and without the sandbox: `python -I -c pass`
// started as the harness starts its children (runner/src/harness/exec.ts), N times each, and
// the same through the CPU fork server (`serve --cpu`: one sandbox, a forked child per
// request), as a static check of the task's kernel. Prints the median and range of each, in
// seconds, and writes them as JSON with --json FILE. Needs dist/ (npm run build).
//   node scripts/sandbox-spawn.mjs [--runs 10] [--json FILE]
import { writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const at = (name) => process.argv.indexOf(`--${name}`);
const runs = at("runs") === -1 ? 10 : Number(process.argv[at("runs") + 1]);
const jsonOut = at("json") === -1 ? null : process.argv[at("json") + 1];
if (process.argv.includes("--help") || !Number.isInteger(runs) || runs < 1) {
  process.stdout.write("usage: node scripts/sandbox-spawn.mjs [--runs 10] [--json FILE]\n");
  process.exit(process.argv.includes("--help") ? 0 : 2);
}
const dist = join(root, "dist", "runner", "src");
const exec = await import(join(dist, "harness", "exec.js"));
const client = await import(join(dist, "harness", "client.js"));
const { startCpuServer } = await import(join(dist, "harness", "fork-server.js"));

const summary = (times) => {
  const sorted = [...times].sort((a, b) => a - b);
  return {
    median: sorted[Math.floor(sorted.length / 2)],
    min: sorted[0],
    max: sorted.at(-1),
    runs: sorted.length,
  };
};
const results = {};
for (const mode of ["off", "on"]) {
  process.env.EVOKERNEL_SANDBOX = mode;
  const run = await exec.pythonInvocation(["-I", "-c", "pass"]);
  const times = [];
  for (let i = 0; i < runs; i += 1) {
    const ran = await exec.runProcess(run.file, run.args, {
      env: run.env,
      cwd: run.cwd,
      timeoutMs: 120_000,
    });
    if (ran.exitCode !== 0)
      throw new Error(`python -c pass (sandbox ${mode}) failed: ${ran.output.slice(-400)}`);
    times.push(ran.seconds);
  }
  results[`process, sandbox ${mode}`] = summary(times);
}
process.env.EVOKERNEL_SANDBOX = "on";
const kernel = join(root, "kernels", "softmax", "kernel.cu");
const cpu = new client.ForkServer({ concurrent: true, start: startCpuServer });
for (const [name, options] of [
  ["static check, a sandbox each", {}],
  ["static check, the CPU fork server", { runner: cpu.run }],
]) {
  const times = [];
  for (let i = 0; i < runs + 1; i += 1) {
    const started = performance.now();
    const record = await client.staticCheck(kernel, options);
    if (!record.ok)
      throw new Error(`${name}: the static check failed: ${JSON.stringify(record).slice(0, 400)}`);
    if (i > 0) times.push((performance.now() - started) / 1000); // the first starts the server
  }
  results[name] = summary(times);
}
await cpu.close();
for (const [name, s] of Object.entries(results)) {
  process.stdout.write(
    `${name.padEnd(36)} ${s.median.toFixed(3)} s median (${s.min.toFixed(3)}-${s.max.toFixed(3)}), ${s.runs} runs\n`,
  );
}
if (jsonOut !== null) writeFileSync(jsonOut, `${JSON.stringify(results, null, 2)}\n`);
