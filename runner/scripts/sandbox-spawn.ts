// What starting one harness process costs, with and without the sandbox (bundled to
// dist/sandbox-spawn.mjs; lab/gpu-batch.sh's step spawn-cost): `python -I -c pass` started
// as the harness starts its children (harness/exec.ts), N times each; then a static check of
// kernels/softmax in a sandbox of its own against one in the CPU fork server (`serve --cpu`:
// one sandbox, a forked child per request), as the search runs them. Prints the median and
// range of each in seconds, and writes them as JSON with --json FILE.
//   node dist/sandbox-spawn.mjs [--runs 10] [--json FILE]
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ForkServer, staticCheck } from "../src/harness/client.js";
import { pythonInvocation, runProcess } from "../src/harness/exec.js";
import { startCpuServer } from "../src/harness/fork-server.js";
import { repoRoot } from "../src/paths.js";

type Summary = { median: number; min: number; max: number; runs: number };

function option(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? undefined : process.argv[at + 1];
}

function summary(times: number[]): Summary {
  const sorted = [...times].sort((a, b) => a - b);
  return {
    median: sorted[Math.floor(sorted.length / 2)] ?? 0,
    min: sorted[0] ?? 0,
    max: sorted.at(-1) ?? 0,
    runs: sorted.length,
  };
}

const runs = Number(option("runs") ?? "10");
const jsonOut = option("json");
if (process.argv.includes("--help") || !Number.isInteger(runs) || runs < 1) {
  process.stdout.write("usage: node dist/sandbox-spawn.mjs [--runs 10] [--json FILE]\n");
  process.exit(process.argv.includes("--help") ? 0 : 2);
}

const results: Record<string, Summary> = {};
for (const mode of ["off", "on"]) {
  process.env["EVOKERNEL_SANDBOX"] = mode;
  const run = await pythonInvocation(["-I", "-c", "pass"]);
  const times: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const ran = await runProcess(run.file, run.args, {
      env: run.env,
      cwd: run.cwd,
      timeoutMs: 120_000,
    });
    if (ran.exitCode !== 0) {
      throw new Error(`python -c pass (sandbox ${mode}) failed: ${ran.output.slice(-400)}`);
    }
    times.push(ran.seconds);
  }
  results[`a process, sandbox ${mode}`] = summary(times);
}

process.env["EVOKERNEL_SANDBOX"] = "on";
const kernel = join(repoRoot(), "kernels", "softmax", "kernel.cu");
const cpu = new ForkServer({ concurrent: true, start: startCpuServer });
for (const [name, runner] of [
  ["a static check, a sandbox each", undefined],
  ["a static check, the CPU fork server", cpu.run],
] as const) {
  const times: number[] = [];
  for (let i = 0; i <= runs; i += 1) {
    const started = performance.now();
    const record = await staticCheck(kernel, runner === undefined ? {} : { runner });
    if (!record.ok) throw new Error(`${name}: the static check failed`);
    if (i > 0) times.push((performance.now() - started) / 1000); // the first starts the server
  }
  results[name] = summary(times);
}
await cpu.close();

for (const [name, s] of Object.entries(results)) {
  process.stdout.write(
    `${name.padEnd(38)} ${s.median.toFixed(3)} s median (${s.min.toFixed(3)}-${s.max.toFixed(3)}), ${s.runs} runs\n`,
  );
}
if (jsonOut !== undefined) writeFileSync(jsonOut, `${JSON.stringify(results, null, 2)}\n`);
