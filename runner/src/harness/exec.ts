// The one place processes start. Every child gets an allowlisted environment (no tokens,
// no API keys: a candidate runs in that child), its own process group (a timeout kills the
// candidate's helpers too), and a bounded tail of its output.
import { execa } from "execa";
import { delimiter, join } from "node:path";
import { createInterface } from "node:readline";
import type { Readable } from "node:stream";
import { EnvironmentError } from "../errors.js";
import { cacheDir, harnessDir } from "../paths.js";

export type ChildEnv = Record<string, string>;

export type ProcessOutcome = {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  seconds: number;
  /** The last OUTPUT_TAIL characters of stdout and stderr, interleaved. */
  output: string;
};

const PASSED_THROUGH = [
  "PATH",
  "HOME",
  "LANG",
  "LC_ALL",
  "TMPDIR",
  "CUDA_VISIBLE_DEVICES",
  "CUDA_HOME",
  "CUDA_PATH",
  "LD_LIBRARY_PATH",
  "NVIDIA_VISIBLE_DEVICES",
  "TORCHINDUCTOR_CACHE_DIR",
  "TRITON_CACHE_DIR",
] as const;

const SECRET_NAME = /TOKEN|SECRET|KEY|PASSWORD/i;
const OUTPUT_TAIL = 64 * 1024;
const PYTHON_CANDIDATES = ["python3", "/usr/bin/python3"] as const;

/** The environment a harness child sees: the allowlist above, EVOKERNEL_* and our own settings. */
export function childEnv(parent: NodeJS.ProcessEnv = process.env, cache = cacheDir()): ChildEnv {
  const env: ChildEnv = {};
  for (const name of PASSED_THROUGH) {
    const value = parent[name];
    if (value !== undefined) env[name] = value;
  }
  for (const [name, value] of Object.entries(parent)) {
    if (value === undefined || !name.startsWith("EVOKERNEL_") || SECRET_NAME.test(name)) continue;
    env[name] = value;
  }
  env["PYTHONPATH"] = [harnessDir(), parent["PYTHONPATH"]].filter(Boolean).join(delimiter);
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

/** Runs a process to its end; never throws for the child's failure, only reports it. */
export async function runProcess(
  file: string,
  args: readonly string[],
  options: RunOptions,
): Promise<ProcessOutcome> {
  const started = performance.now();
  const child = execa(file, args, {
    env: options.env,
    extendEnv: false,
    detached: true,
    reject: false,
    buffer: false,
    all: true,
    stdin: "ignore",
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
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
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // ESRCH: nothing left to kill.
  }
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
  const probe = await runProcess(candidate, ["-c", FIND_TORCH], {
    env: childEnv(parent),
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
  const file = await requirePython();
  return runProcess(file, ["-m", "evokernel_harness", ...args], { env: childEnv(), ...options });
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
  options: { env: ChildEnv; onLine: (line: string) => void },
): LineProcess {
  const started = performance.now();
  const child = execa(file, args, {
    env: options.env,
    extendEnv: false,
    detached: true,
    reject: false,
    buffer: false,
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
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

/** Starts `python -m evokernel_harness ARGS` as a line process. */
export async function startHarness(
  args: readonly string[],
  onLine: (line: string) => void,
): Promise<LineProcess> {
  const file = await requirePython();
  return startLineProcess(file, ["-m", "evokernel_harness", ...args], { env: childEnv(), onLine });
}
