// The sandbox, attacked from inside: a pull request's code (test/security/fixtures/
// hostile_probe.py) started exactly as the harness starts, looking for the runner's secrets
// in its environment, in other processes and on disk, for the network, and for somewhere
// outside its scratch to write. Inside the sandbox it finds nothing; the same probe without
// the sandbox (EVOKERNEL_SANDBOX=off) finds every canary, so these tests fail if the sandbox
// is taken away.
import { execa, type ResultPromise } from "execa";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pythonInvocation, runProcess } from "../../runner/src/harness/exec.js";
import { allowRead } from "../../runner/src/sandbox/sandbox.js";

const PROBE_DIR = resolve("test/security/fixtures");
const PROBE = join(PROBE_DIR, "hostile_probe.py");
const CANARY = "EVK-CANARY";

const COMPILE = [
  "import py_compile, sys",
  "py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)",
  "src, pyc = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()",
  "print('found' if any(b'EVK-CANARY' in b for b in (src, pyc)) else 'clean')",
].join("\n");

type Probe = { leaks: string[]; seen: { pids: number; uid: number; cap_eff: string | null } };

let secretDir: string;
let app: ResultPromise | undefined;
let listener: Server;
const saved = { ...process.env };

beforeAll(async () => {
  // The runner's own secrets (it holds the LLM key; an Actions runner holds a token) ...
  process.env["ANTHROPIC_API_KEY"] = `${CANARY}-anthropic`;
  process.env["GITHUB_TOKEN"] = `${CANARY}-token`;
  process.env["EVOKERNEL_PRIVATE_KEY"] = `${CANARY}-evk`;
  process.env["DATABASE_URL"] = `postgres://u:${CANARY}@db/x`;
  // ... another process of the machine with secrets in its environment (the app) ...
  app = execa("sleep", ["600"], { env: { PRIVATE_KEY: `${CANARY}-app-key` }, extendEnv: false });
  // ... a key on disk, outside anything the sandbox is given ...
  secretDir = await mkdtemp(join(tmpdir(), "evk-app-"));
  await writeFile(join(secretDir, "app.private-key.pem"), `${CANARY}-pem\n`);
  // ... and a service on the machine's loopback.
  listener = createServer((socket) => socket.end());
  await new Promise<void>((done) => listener.listen(0, "127.0.0.1", done));
  allowRead(PROBE_DIR);
});

afterAll(async () => {
  process.env = saved;
  app?.kill("SIGKILL");
  await app?.catch(() => undefined);
  listener.close();
  await rm(secretDir, { recursive: true, force: true });
});

async function runProbe(): Promise<Probe> {
  const run = await pythonInvocation(["-I", PROBE, PROBE_DIR]);
  const ran = await runProcess(run.file, run.args, {
    env: run.env,
    cwd: run.cwd,
    timeoutMs: 600_000,
  });
  expect(ran.exitCode, ran.output).toBe(0);
  const line = ran.output.trim().split("\n").at(-1) ?? "";
  return JSON.parse(line) as Probe;
}

describe("a pull request's code in the sandbox", () => {
  it("finds no secret, no other process, no network, nowhere to write, no capability", async () => {
    delete process.env["EVOKERNEL_SANDBOX"];
    const found = await runProbe();
    expect(found.leaks).toEqual([]);
    expect(found.seen.pids).toBeLessThanOrEqual(3);
    expect(found.seen.cap_eff).toBe("0000000000000000");
    if (process.getuid?.() === 0) expect(found.seen.uid).not.toBe(0);
  });

  it("holds the canary neither in its source nor in its bytecode, so its own copies are no find", async () => {
    // Python folds "EVK-" + "CANARY" into one constant in the .pyc: on the H100 (2026-11-26)
    // the probe, loaded as a candidate, found its own cached bytecode and called it a leak
    const dir = await mkdtemp(join(tmpdir(), "evk-pyc-"));
    try {
      const pyc = join(dir, "probe.pyc");
      const python = process.env["EVOKERNEL_PYTHON"] ?? "python3";
      const compiled = await execa(python, ["-I", "-c", COMPILE, PROBE, pyc], { reject: false });
      expect(compiled.exitCode, compiled.stderr).toBe(0);
      expect(compiled.stdout.trim()).toBe("clean");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("finds them all when the sandbox is switched off (the test can fail)", async () => {
    process.env["EVOKERNEL_SANDBOX"] = "off";
    try {
      const found = await runProbe();
      const kinds = new Set(found.leaks.map((leak) => leak.split(":")[0]));
      expect(kinds).toContain("proc-environ");
      expect(kinds).toContain("file");
      expect(kinds).toContain("net");
      expect(kinds).toContain("write");
      // the runner's own environment stays filtered even then (exec.ts's allowlist)
      expect(kinds).not.toContain("env");
    } finally {
      delete process.env["EVOKERNEL_SANDBOX"];
    }
  });
});
