// Where the harness's processes start, through src/process/spawn.ts (the one module that
// starts any process, git's and the app's included). Every harness child gets an allowlisted
// environment (no tokens, no API keys: a candidate runs in that child), its own process group
// (a timeout kills the candidate's helpers too), and a bounded tail of its output.
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { HARNESS_SETTINGS, MACHINE_ENV, pickEnv } from "#shared/environment.js";
import { spawnProcess } from "#process/spawn.js";
import { EnvironmentError } from "../errors.js";
import { cacheDir, harnessDir } from "../paths.js";
import {
  DESCRIBE_PYTHON,
  allowLocks,
  allowWrite,
  sealedDir,
  sandboxMode,
  sandboxed,
  scratchDir,
  type Invocation,
  type PythonInstall,
} from "../sandbox/sandbox.js";

export type ChildEnv = Record<string, string>;

export type ProcessOutcome = {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  seconds: number;
  /** The last OUTPUT_TAIL characters of stdout and stderr, interleaved. */
  output: string;
};

const OUTPUT_TAIL = 64 * 1024;
const PYTHON_CANDIDATES = ["python3", "/usr/bin/python3"] as const;

/** The environment a harness child sees: the machine's basics, the harness's settings (both
 * allowlists in src/shared/environment.ts, never a key) and our own settings. */
export function childEnv(parent: NodeJS.ProcessEnv = process.env, cache = cacheDir()): ChildEnv {
  const env: ChildEnv = pickEnv(parent, [...MACHINE_ENV, ...HARNESS_SETTINGS]);
  // One cache for both sides: builds the harness makes on its own land beside ours.
  env["EVOKERNEL_CACHE"] = cache;
  env["TORCH_EXTENSIONS_DIR"] = join(cache, "torch_extensions");
  env["TORCHINDUCTOR_CACHE_DIR"] ??= join(cache, "inductor");
  env["TRITON_CACHE_DIR"] ??= join(cache, "triton");
  env["PYTHONUNBUFFERED"] = "1";
  env["PYTHONDONTWRITEBYTECODE"] = "1";
  return env;
}

export type RunOptions = { env: ChildEnv; timeoutMs?: number; cwd?: string };

// The harness starts isolated (-I: no PYTHON* variables, no user site, no script or working
// folder on sys.path): torch comes from the Python's own installation and the harness from
// the runner's, whatever a pull request puts in its tree (a torch.py, an evokernel_harness/).
const LAUNCH = (harness: string): string =>
  `import sys; sys.path.insert(0, ${JSON.stringify(harness)}); import evokernel_harness.__main__`;

let describing: Promise<PythonInstall> | undefined;

/** The Python's own folders, shown read-only inside the sandbox (asked once). */
function describePython(python: string): Promise<PythonInstall> {
  describing ??= runProcess(python, ["-I", "-c", DESCRIBE_PYTHON], {
    env: childEnv(),
    timeoutMs: 120_000,
  }).then((ran) => {
    const line = ran.output.trim().split("\n").at(-1) ?? "";
    try {
      if (ran.exitCode === 0) return JSON.parse(line) as PythonInstall;
    } catch {
      // said below
    }
    throw new EnvironmentError(
      `${python} did not say where its installation is (exit ${String(ran.exitCode)}: ` +
        `${ran.output.trim().slice(-300)}): the sandbox shows it that installation only`,
    );
  });
  return describing;
}

let checked: Promise<void> | undefined;

/** The sandbox starts here (asked once): a Python inside it answers, or exit 3 saying why. */
function requireSandbox(python: string): Promise<void> {
  checked ??= (async () => {
    const install = await describePython(python);
    const probe = sandboxed({
      // the Python by the path it answers to (a venv's bin/python3 finds the venv's torch)
      file: install.executable,
      args: ["-I", "-c", "print('sandbox ok')"],
      python: install,
      env: childEnv(),
    });
    const ran = await runProcess(probe.file, probe.args, { env: probe.env, timeoutMs: 120_000 });
    if (ran.exitCode === 0 && ran.output.includes("sandbox ok")) return;
    throw new EnvironmentError(
      "the sandbox for untrusted code cannot start on this machine " +
        `(${ran.output.trim().split("\n").slice(-2).join(" ") || `exit ${String(ran.exitCode)}`}): ` +
        "it needs util-linux unshare and user namespaces (or root); see docs/SECURITY.md. " +
        "Only on a machine that runs nothing untrusted, EVOKERNEL_SANDBOX=off runs without it",
    );
  })();
  return checked;
}

/** How `python -m evokernel_harness ARGS` starts: isolated, and in the sandbox unless it is off. */
export function harnessInvocation(
  args: readonly string[],
  overrides: ChildEnv = {},
): Promise<Invocation & { cwd: string }> {
  return pythonInvocation(["-I", "-c", LAUNCH(harnessDir()), ...args], overrides);
}

/**
 * How the harness's Python starts with `args`: the allowlisted environment, the working folder
 * in scratch (never a pull request's tree), inside the sandbox unless EVOKERNEL_SANDBOX=off.
 */
export async function pythonInvocation(
  args: readonly string[],
  overrides: ChildEnv = {},
): Promise<Invocation & { cwd: string }> {
  const python = await requirePython();
  const env = { ...childEnv(), ...overrides };
  const cwd = scratchDir();
  if (sandboxMode() === "off") return { file: python, args: [...args], env, cwd };
  allowWrite(env["EVOKERNEL_CACHE"] ?? cacheDir());
  sealedDir(); // shown (read-only) to this sandbox and every later one
  // One GPU lock for every sandbox on the machine (each has its own /tmp).
  env["EVOKERNEL_GPU_LOCKS"] ??= join(tmpdir(), "evokernel-gpu-locks");
  if (env["EVOKERNEL_GPU_LOCKS"] !== "off")
    await allowLocks(env["EVOKERNEL_GPU_LOCKS"], env["CUDA_VISIBLE_DEVICES"]);
  await requireSandbox(python);
  const install = await describePython(python);
  const inside = sandboxed({ file: install.executable, args, python: install, env });
  return { ...inside, cwd };
}

/** Runs a process to its end; never throws for the child's failure, only reports it. */
export async function runProcess(
  file: string,
  args: readonly string[],
  options: RunOptions,
): Promise<ProcessOutcome> {
  const started = performance.now();
  const child = spawnProcess(file, args, {
    env: options.env,
    extendEnv: false,
    detached: true,
    reject: false,
    buffer: false,
    all: true,
    stdin: "ignore",
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  if (child.pid !== undefined) live.add(child.pid);
  const tail = collectTail(child.all);
  let timedOut = false;
  const timer =
    options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          killGroup(child.pid);
        }, options.timeoutMs);
  const result = await child;
  clearTimeout(timer);
  // Whatever the candidate left running in its group goes with it.
  killGroup(child.pid);
  const spawnFailure = child.pid === undefined ? `${result.message}\n` : "";
  return {
    exitCode: result.exitCode ?? null,
    signal: result.signal ?? null,
    timedOut,
    seconds: (performance.now() - started) / 1000,
    output: spawnFailure + tail(),
  };
}

function collectTail(stream: Readable): () => string {
  let text = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    text = (text + chunk).slice(-OUTPUT_TAIL);
  });
  return () => text;
}

/** Kills a child's whole process group; a group already gone is fine. */
export function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  live.delete(pid);
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // ESRCH: nothing left to kill.
  }
}

/**
 * The process groups of the harness's children that have not ended: each child leads a group
 * of its own (detached), so the runner's own death would not reach them, nor their sandbox's
 * PID namespace (a fork server and its workers). killLiveGroups kills them all: the CLI calls
 * it when the runner is told to stop (SIGTERM, SIGHUP, SIGINT) and at its exit.
 */
const live = new Set<number>();

export function killLiveGroups(): void {
  for (const pid of [...live]) killGroup(pid);
}

let python: Promise<string | null> | undefined;

/** The Python that can import torch: $EVOKERNEL_PYTHON, else the first candidate that does. */
export function findPython(): Promise<string | null> {
  python ??= locatePython(process.env);
  return python;
}

async function locatePython(parent: NodeJS.ProcessEnv): Promise<string | null> {
  const chosen = parent["EVOKERNEL_PYTHON"];
  if (chosen) {
    // A setting that is wrong is the operator's to fix: exit 3 with advice, not a traceback.
    const problem = await torchProblem(chosen, parent);
    if (problem === null) return chosen;
    throw new EnvironmentError(
      `EVOKERNEL_PYTHON=${chosen} ${problem}: point it at a Python that has PyTorch ` +
        `(\`${chosen} -c "import torch"\` should work), or unset it to use python3`,
    );
  }
  for (const candidate of PYTHON_CANDIDATES) {
    if ((await torchProblem(candidate, parent)) === null) return candidate;
  }
  return null;
}

// Finds torch without importing it (importing takes 10–30 s; the harness imports it once).
const FIND_TORCH =
  "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 3)";

/** Why `candidate` is not a Python with torch, or null when it is. */
async function torchProblem(candidate: string, parent: NodeJS.ProcessEnv): Promise<string | null> {
  // -I and a neutral working folder: a torch.py in the folder the CLI runs from (a PR's
  // tree) must not count as PyTorch, or the harness would start on a Python without it.
  const probe = await runProcess(candidate, ["-I", "-c", FIND_TORCH], {
    env: childEnv(parent),
    cwd: tmpdir(),
    timeoutMs: 120_000,
  });
  if (probe.exitCode === 0) return null;
  if (/ENOENT/.test(probe.output)) return "does not exist (no such file on PATH)";
  if (/EACCES/.test(probe.output)) return "is not executable";
  if (probe.exitCode === 3) return "has no PyTorch";
  return `does not run as Python (exit ${String(probe.exitCode ?? probe.signal)})`;
}

export async function requirePython(): Promise<string> {
  const found = await findPython();
  if (found !== null) return found;
  throw new EnvironmentError(
    "no Python that can import torch: install PyTorch (e.g. apt-get install python3-torch) " +
      "or point EVOKERNEL_PYTHON at a Python that has it",
  );
}

/** `python -m evokernel_harness ARGS`, to its end. */
export async function runHarness(
  args: readonly string[],
  options: { timeoutMs?: number } = {},
): Promise<ProcessOutcome> {
  const run = await harnessInvocation(args);
  return runProcess(run.file, run.args, { env: run.env, cwd: run.cwd, ...options });
}

export type LineProcess = {
  readonly pid: number | undefined;
  /** Resolves when the process has gone, however it went. */
  readonly exited: Promise<ProcessOutcome>;
  write(line: string): void;
  /** Closes stdin: a well-behaved server exits on end of input. */
  end(): void;
  kill(): void;
};

/** A long-lived child spoken to in lines: one line in on stdin, lines out on stdout. */
export function startLineProcess(
  file: string,
  args: readonly string[],
  options: { env: ChildEnv; cwd?: string; onLine: (line: string) => void },
): LineProcess {
  const started = performance.now();
  const child = spawnProcess(file, args, {
    env: options.env,
    extendEnv: false,
    detached: true,
    reject: false,
    buffer: false,
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  if (child.pid !== undefined) live.add(child.pid);
  createInterface({ input: child.stdout }).on("line", options.onLine);
  const stderr = collectTail(child.stderr);
  // A write to a process that just died must not take us down; `exited` reports it.
  child.stdin.on("error", () => undefined);
  const exited = child.then(function describeExit(result): ProcessOutcome {
    killGroup(child.pid);
    return {
      exitCode: result.exitCode ?? null,
      signal: result.signal ?? null,
      timedOut: false,
      seconds: (performance.now() - started) / 1000,
      output: (child.pid === undefined ? `${result.message}\n` : "") + stderr(),
    };
  });
  return {
    pid: child.pid,
    exited,
    write: (line) => void child.stdin.write(`${line}\n`),
    end: () => void child.stdin.end(),
    kill: () => killGroup(child.pid),
  };
}

/**
 * Starts `python -m evokernel_harness ARGS` as a line process; `overrides` replace variables of
 * its environment (a lane's fork server: CUDA_VISIBLE_DEVICES, gpu/lanes.ts).
 */
export async function startHarness(
  args: readonly string[],
  onLine: (line: string) => void,
  overrides: ChildEnv = {},
): Promise<LineProcess> {
  const run = await harnessInvocation(args, overrides);
  return startLineProcess(run.file, run.args, { env: run.env, cwd: run.cwd, onLine });
}
