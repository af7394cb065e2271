// Calls into the harness: one function per harness command, each returning the parsed
// record. Candidate-facing calls (static, build, verify, bench) turn every failure into a
// failed record; task and machine calls (inspect, device, ceilings) throw HarnessError.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { z } from "zod";
import { HarnessError } from "../errors.js";
import { cacheDir } from "../paths.js";
import { runHarness } from "./exec.js";
import {
  failedBench,
  failedBuild,
  failedStatic,
  failedVerify,
  type Failure,
} from "./failed-records.js";
import { failureOf, type HarnessRunner } from "./outcome.js";
import {
  benchRecordSchema,
  buildRecordSchema,
  ceilingsSchema,
  deviceRecordSchema,
  parseRecordText,
  staticRecordSchema,
  taskInfoSchema,
  verifyRecordSchema,
  type BenchRecord,
  type BuildRecord,
  type Ceilings,
  type Device,
  type DeviceRecord,
  type StaticRecord,
  type TaskInfo,
  type VerifyRecord,
} from "./records.js";

export { ForkServer, type ForkServerOptions } from "./fork-server.js";
export type { HarnessOutcome, HarnessRunner } from "./outcome.js";

export type CallOptions = {
  /** Where the command runs: its own process (the default) or a ForkServer's `run`. */
  runner?: HarnessRunner;
  timeoutMs?: number;
};

/** Runs each harness command in a process of its own. */
export const directRunner: HarnessRunner = async function runDirect(argv, timeoutMs) {
  const ended = await runHarness(argv, { timeoutMs });
  return {
    exitCode: ended.exitCode,
    signal: ended.signal,
    timedOut: ended.timedOut,
    memKilled: false,
    seconds: ended.seconds,
    log: ended.output,
  };
};

type Called<T> = { record: T } | { failure: Failure; cause?: HarnessError };

async function call<T extends z.ZodType>(
  argv: readonly string[],
  schema: T,
  what: string,
  options: CallOptions,
  defaultTimeoutMs: number,
): Promise<Called<z.infer<T>>> {
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  const dir = await mkdtemp(join(tmpdir(), "evokernel-"));
  const out = join(dir, `${what}.json`);
  try {
    const outcome = await (options.runner ?? directRunner)([...argv, "--out", out], timeoutMs);
    const failure = failureOf(outcome, timeoutMs);
    if (failure !== null) return { failure };
    const text = await readFile(out, "utf8").catch(() => null);
    if (text === null) {
      return {
        failure: { status: "error", message: "the harness wrote no record", log: outcome.log },
      };
    }
    return { record: parseRecordText(schema, text, what) };
  } catch (error) {
    if (!(error instanceof HarnessError)) throw error;
    return { failure: { status: "error", message: error.message, log: error.log }, cause: error };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function recordOrThrow<T>(called: Called<T>, what: string): T {
  if ("record" in called) return called.record;
  throw new HarnessError(`harness ${what}: ${called.failure.message}`, {
    cause: called.cause,
    issues: called.cause?.issues ?? [],
    log: called.failure.log,
  });
}

export async function inspectTask(
  task: string,
  options: CallOptions & { probe?: boolean } = {},
): Promise<TaskInfo> {
  const argv = ["inspect", "--task", resolve(task), ...(options.probe ? ["--probe"] : [])];
  return recordOrThrow(await call(argv, taskInfoSchema, "task", options, 300_000), "inspect");
}

export async function staticCheck(
  candidate: string,
  options: CallOptions & {
    task?: string;
    /** Flag only the reference's own ops: for CPU runs, where a py candidate is plain torch. */
    relaxed?: boolean;
  } = {},
): Promise<StaticRecord> {
  const argv = [
    "static",
    "--candidate",
    resolve(candidate),
    ...(options.task === undefined ? [] : ["--task", resolve(options.task)]),
    ...(options.relaxed ? ["--relaxed"] : []),
  ];
  const called = await call(argv, staticRecordSchema, "static", options, 60_000);
  return "record" in called ? called.record : failedStatic(called.failure);
}

export type Defines = Readonly<Record<string, string | number>>;

export async function build(
  candidate: string,
  options: CallOptions & { cache?: string; defines?: Defines; flags?: readonly string[] } = {},
): Promise<BuildRecord> {
  const defines = Object.entries(options.defines ?? {}).flatMap(([name, value]) => [
    "--define",
    `${name}=${value}`,
  ]);
  // one argument each, NAME=VALUE style: a flag's leading "-" must not read as an option
  const flags = (options.flags ?? []).map((flag) => `--nvcc-flag=${flag}`);
  const cache = options.cache ?? cacheDir();
  const argv = ["build", "--candidate", resolve(candidate), "--cache", cache, ...defines, ...flags];
  const called = await call(argv, buildRecordSchema, "build", options, 900_000);
  return "record" in called ? called.record : failedBuild(called.failure);
}

export type VerifyOptions = CallOptions & {
  /** The build's artifact; py candidates have none. */
  artifact?: string | null;
  heldout?: boolean;
  /** The smallest visible configuration only: a cheap first gate before the full check. */
  quick?: boolean;
  device?: "cuda" | "cpu";
  seed?: number;
  /** Written into a failed record when the run never described the device itself. */
  knownDevice?: Device;
};

export async function verify(
  task: string,
  candidate: string,
  options: VerifyOptions = {},
): Promise<VerifyRecord> {
  const argv = [
    "verify",
    "--task",
    resolve(task),
    "--candidate",
    resolve(candidate),
    ...(options.artifact ? ["--artifact", options.artifact] : []),
    ...(options.heldout ? ["--heldout"] : []),
    ...(options.quick ? ["--quick"] : []),
    ...(options.device === undefined ? [] : ["--device", options.device]),
    ...(options.seed === undefined ? [] : ["--seed", String(options.seed)]),
  ];
  const called = await call(argv, verifyRecordSchema, "verify", options, 600_000);
  if ("record" in called) return called.record;
  return failedVerify(called.failure, {
    task,
    candidate,
    ...(options.knownDevice === undefined ? {} : { device: options.knownDevice }),
    ...(options.seed === undefined ? {} : { seed: options.seed }),
  });
}

export type BenchOptions = CallOptions & {
  candidate?: string;
  artifact?: string | null;
  baseline?: string;
  baselineArtifact?: string | null;
  /** Time torch.compile as a second baseline (slow to warm up); on unless false. */
  compile?: boolean;
  /** Seconds of timing per configuration (the harness's default, 1.5, when not given). */
  budgetS?: number;
  knownDevice?: Device;
};

export async function bench(task: string, options: BenchOptions = {}): Promise<BenchRecord> {
  const argv = [
    "bench",
    "--task",
    resolve(task),
    ...(options.candidate === undefined ? [] : ["--candidate", resolve(options.candidate)]),
    ...(options.artifact ? ["--artifact", options.artifact] : []),
    ...(options.baseline === undefined ? [] : ["--baseline", resolve(options.baseline)]),
    ...(options.baselineArtifact ? ["--baseline-artifact", options.baselineArtifact] : []),
    ...(options.compile === false ? ["--no-compile"] : []),
    ...(options.budgetS === undefined ? [] : ["--budget", String(options.budgetS)]),
    // measured once per GPU, then read back: the harness re-measures if the GPU differs
    "--ceilings",
    join(cacheDir(), "ceilings.json"),
  ];
  const called = await call(argv, benchRecordSchema, "bench", options, 600_000);
  if ("record" in called) return called.record;
  return failedBench(called.failure, {
    task,
    ...(options.knownDevice === undefined ? {} : { device: options.knownDevice }),
  });
}

export async function device(options: CallOptions = {}): Promise<DeviceRecord> {
  return recordOrThrow(
    await call(["device"], deviceRecordSchema, "device", options, 120_000),
    "device",
  );
}

export async function ceilings(options: CallOptions = {}): Promise<Ceilings> {
  return recordOrThrow(
    await call(["ceilings"], ceilingsSchema, "ceilings", options, 300_000),
    "ceilings",
  );
}
