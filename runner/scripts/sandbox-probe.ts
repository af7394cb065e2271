// The sandbox on a GPU machine (lab/gpu-sandbox.sh; bundled to dist/sandbox-probe.mjs):
// the hostile probe of test/security started through the harness's own start path with the
// same canaries the test plants (the runner's keys in its environment, another process's
// environment, a key file, a loopback service), and CUDA inside against outside: a 4096²
// matmul timed by CUDA events, 5 runs of 50 each way. Prints one JSON document.
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pythonInvocation, runProcess } from "../src/harness/exec.js";
import { allowRead } from "../src/sandbox/sandbox.js";
import { spawnProcess } from "#process/spawn.js";

const CANARY = "EVK-CANARY";
const probeDir = resolve(process.argv[2] ?? "test/security/fixtures");

const MATMUL = `
import json, torch
x = torch.randn(4096, 4096, device="cuda"); y = torch.randn(4096, 4096, device="cuda")
for _ in range(10): x @ y
torch.cuda.synchronize()
times = []
for _ in range(50):
    a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
    a.record(); x @ y; b.record(); torch.cuda.synchronize(); times.append(a.elapsed_time(b))
times.sort()
print(json.dumps({"median_ms": times[25], "p20_ms": times[10], "p80_ms": times[40],
                  "device": torch.cuda.get_device_name(), "pids": len([p for p in __import__("os").listdir("/proc") if p.isdigit()])}))
`;

async function python(args: string[], sandbox: boolean): Promise<unknown> {
  process.env["EVOKERNEL_SANDBOX"] = sandbox ? "on" : "off";
  const run = await pythonInvocation(args);
  const ran = await runProcess(run.file, run.args, {
    env: run.env,
    cwd: run.cwd,
    timeoutMs: 300_000,
  });
  const line = ran.output.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return { exitCode: ran.exitCode, output: ran.output.slice(-2000) };
  }
}

process.env["ANTHROPIC_API_KEY"] = `${CANARY}-anthropic`;
process.env["GITHUB_TOKEN"] = `${CANARY}-token`;
process.env["ACTIONS_RUNTIME_TOKEN"] = `${CANARY}-actions`;
const app = spawnProcess("sleep", ["900"], {
  env: { PRIVATE_KEY: `${CANARY}-app-key` },
  extendEnv: false,
});
const secrets = await mkdtemp(join(tmpdir(), "evk-app-"));
await writeFile(join(secrets, "app.private-key.pem"), `${CANARY}-pem\n`);
const listener = createServer((socket) => socket.end());
await new Promise<void>((done) => listener.listen(0, "127.0.0.1", done));
allowRead(probeDir);

const report: Record<string, unknown> = { at: new Date().toISOString() };
const diagnose = process.argv[3];
if (diagnose !== undefined) {
  // lab/gpu-sandbox.sh --diagnose CODE: run CODE inside, print what it printed
  process.env["EVOKERNEL_SANDBOX"] = "on";
  const run = await pythonInvocation(["-I", "-c", diagnose]);
  const ran = await runProcess(run.file, run.args, {
    env: run.env,
    cwd: run.cwd,
    timeoutMs: 300_000,
  });
  console.log(ran.output);
  process.exit(ran.exitCode ?? 1);
}
report["probeInside"] = await python(["-I", join(probeDir, "hostile_probe.py"), probeDir], true);
report["probeOutside"] = await python(["-I", join(probeDir, "hostile_probe.py"), probeDir], false);
const matmul: { inside: unknown[]; outside: unknown[] } = { inside: [], outside: [] };
for (let round = 0; round < 5; round++) {
  matmul.inside.push(await python(["-I", "-c", MATMUL], true));
  matmul.outside.push(await python(["-I", "-c", MATMUL], false));
}
report["matmul"] = matmul;
console.log(JSON.stringify(report, null, 2));
app.kill("SIGKILL");
listener.close();
process.exit(0);
