// optimize's pipeline as a function (issue 21.2): the task and its starting kernel, the
// archive, the proposer, a session (fork server, device) for the search and the final
// checks, the result and its files. `evokernel optimize` (flags → options → this → print)
// and a job's optimize step (runner/src/jobs/optimize-head.ts) both call it.
import { randomInt } from "node:crypto";
import { basename, dirname, extname, isAbsolute, join, relative, resolve } from "node:path";
import { detectCandidateFormat, type CandidateFormat } from "#shared/contract/formats.js";
import type { BenchRecord, TaskInfo } from "#shared/contract/records.js";
import type { Result } from "#shared/result.js";
import { candidatesFor, loadTarget, taskRef, type Target } from "../workspace/target.js";
import { requireGpu, withSession } from "./session.js";
import { createBuildPool } from "../build/pool.js";
import type { CascadeEvent } from "../cascade.js";
import { assertResumable, fileArchive, readArchive } from "../evolve/archive.js";
import { DEFAULTS, runEngine } from "../evolve/engine.js";
import { createHarnessEvaluator, referenceTiming } from "../evolve/harness-evaluator.js";
import { finalize, where } from "../evolve/final.js";
import type { Language } from "../evolve/fingerprint.js";
import { buildResult } from "../evolve/result.js";
import { proposalTask } from "../evolve/task-context.js";
import { TECHNIQUES } from "../evolve/techniques.js";
import type { Budget, EvoConfig } from "../evolve/types.js";
import { build, device as deviceOf, ForkServer, inspectTask } from "../harness/client.js";
import { startCpuServer, startGpuServer } from "../harness/fork-server.js";
import { createLanes, gpusOf, type Lanes } from "../gpu/lanes.js";
import { EnvironmentError } from "../errors.js";
import { packageVersion } from "../paths.js";
import { createProposer, DEFAULT_MODEL, defaultProposer } from "../proposers/index.js";
import { describeEngineEvent } from "../render/optimize-progress.js";
import { allowRead } from "../sandbox/sandbox.js";
import { makeFolder, readText, writeData } from "../workspace/files.js";

export const DEFAULT_CONFIG: EvoConfig = "insight";
/**
 * Proposals in flight: EvoEngineer's 4 for the llm; 8 for the offline tuners, whose
 * proposals cost nothing: with a build taking 2-3 s and the GPU's part of a candidate under
 * one, 4 in flight leave the GPU waiting for builds.
 */
export const OFFLINE_PARALLEL = 8;

export type OptimizeOptions = {
  /**
   * The task as a user names it (a folder, a KernelBench .py file, a name under ./kernels),
   * or already loaded (a job's task): then its task.json is not read again.
   */
  task: string | Target | undefined;
  /** What relative paths (task, candidate, archive, out) are relative to. */
  cwd: string;
  /** Start from this kernel instead of the task's own. */
  candidate?: string | undefined;
  /** The run's archive (default .evokernel/<task>/archive.jsonl). */
  archive?: string | undefined;
  /** Where result.json (and a winner's source) go; absent: nowhere. */
  out?: string | undefined;
  /** Absent: the archive's, else the default (insight). */
  config?: EvoConfig | undefined;
  /** Absent: the archive's, else random. */
  seed?: number | undefined;
  /** Absent: llm with an API key in env, else tuner. */
  proposer?: string | undefined;
  model?: string | undefined;
  budget: Budget;
  population: number;
  /** Absent: the proposer's default (parallelFor). */
  parallel?: number | undefined;
  /**
   * The GPUs to search on, comma-separated (--gpus): absent, CUDA_VISIBLE_DEVICES's (from
   * `env`), else one. With several, each is a lane (gpu/lanes.ts); the final checks run on the first.
   */
  gpus?: string | undefined;
  /**
   * false: the tuner leaves nvcc flags alone (a job whose winner becomes a suggestion: a change
   * to the kernel file cannot carry them). Absent: a .cu kernel's precision-keeping flags are
   * searched too.
   */
  nvccFlags?: boolean | undefined;
  /** Where the proposer looks for its API key. */
  env: NodeJS.ProcessEnv;
  /** One line per step of the search (each candidate, the final checks). */
  say: (line: string) => void;
  /** Each step of a candidate's cascade (a terminal's status line). */
  onEvaluation?: ((event: CascadeEvent) => void) | undefined;
  /**
   * Asked for once the search is about to start (the CLI's first Ctrl-C from then on aborts
   * it): stop after the candidates in flight and skip the final checks.
   */
  interruptSignal?: (() => AbortSignal) | undefined;
};

export type OptimizeRun =
  | { interrupted: true }
  | {
      interrupted: false;
      result: Result;
      /** The files written, as a user would name them. */ written: string[];
    };

/** The search, the final checks and the result; throws for a run that cannot start. */
export async function runOptimize(options: OptimizeOptions): Promise<OptimizeRun> {
  const { say } = options;
  const settings = options;
  // before anything starts: a bad list is a usage error that costs nothing
  const gpus = gpusOf(options.gpus, options.env);
  // One GPU and no --gpus: the run as it always was, on whatever CUDA_VISIBLE_DEVICES says.
  const chosen = gpus !== null && (gpus.length > 1 || options.gpus !== undefined) ? gpus : null;
  const io = { cwd: options.cwd };
  const target =
    typeof options.task === "object" ? options.task : await loadTarget(options.task, io.cwd);
  const given = options.candidate;
  const [start] = await candidatesFor(target, given === undefined ? [] : [given], io.cwd);
  if (start === undefined) throw new Error("candidatesFor returned no candidate");
  const archivePath = resolve(
    io.cwd,
    options.archive ?? join(".evokernel", target.task.name, "archive.jsonl"),
  );
  const archived = await readArchive(archivePath);
  // The search writes its candidates here; the sandbox reads them.
  const candidatesDir = join(dirname(archivePath), "candidates");
  await makeFolder(candidatesDir);
  allowRead(candidatesDir);
  const first = archived[0];
  const config = settings.config ?? first?.config ?? DEFAULT_CONFIG;
  const seed = settings.seed ?? first?.seed ?? randomInt(2 ** 31);
  assertResumable(archived, { seed, config });
  const baselineSource = await readText(start);
  const proposerName = settings.proposer ?? defaultProposer(options.env);
  const model = proposerName === "llm" ? (settings.model ?? DEFAULT_MODEL) : null;
  const proposer = createProposer(proposerName, {
    seed,
    taskPath: target.task.path,
    baselineSource,
    ...tuningOf(target),
    compiled: extname(start) !== ".py" && options.nvccFlags !== false,
    ...(settings.model === undefined ? {} : { model: settings.model }),
    env: options.env,
  });

  const interrupt = options.interruptSignal?.();
  // Static checks and builds run in the CPU fork server: one sandbox for the whole search,
  // each check and build a child forked in it, instead of a sandbox each (namespaces and
  // mounts made anew: two or three a candidate, the baseline's cached build included).
  const checks = new ForkServer({ concurrent: true, start: startCpuServer });
  // The kernel to beat is built while the harness starts: its first step after the static
  // check, and the pool shares the build (or the harness's cache has it) when it gets there.
  const pool = createBuildPool({
    build: (candidate, defines, flags, task) =>
      build(candidate, {
        defines,
        flags,
        runner: checks.run,
        ...(task === undefined ? {} : { task }),
      }),
  });
  // So is the reference's own timing (its torch.compile compiles for 10-30 s): the final
  // timings wait for it, and on the H100 it outlasted a tuner's whole search (2026-11-26)
  let referenceRun: ReferenceRun | undefined;
  const beside = () => {
    void pool.build(start).catch(() => undefined);
    const run: ReferenceRun = {
      promise: referenceTiming(taskRef(target)),
      startedAt: performance.now(),
      endedAt: null,
    };
    // read by the evaluator and referenceLine, which say why it failed
    run.promise.then(
      () => (run.endedAt = performance.now()),
      () => (run.endedAt = performance.now()),
    );
    referenceRun = run;
  };
  // Every harness process that is no lane's own (lane 0's fork server, the reference's timing)
  // runs on the first GPU given; lanes 1… start their fork servers on theirs.
  const visibleBefore = process.env["CUDA_VISIBLE_DEVICES"];
  if (chosen !== null) process.env["CUDA_VISIBLE_DEVICES"] = chosen[0];
  const laneServers = (chosen ?? [])
    .slice(1)
    .map((gpu) => new ForkServer({ start: startGpuServer(gpu) }));
  try {
    return await withSession(
      async function optimizeWithServer(session) {
        requireGpu(session);
        const lanes =
          chosen === null || chosen.length === 1
            ? undefined
            : await startLanes(chosen, session.server, laneServers, say);
        const startedAt = new Date().toISOString();
        const info = await inspectTask(taskRef(target), { runner: session.server.run });
        const { device } = session.device;
        const evaluator = createHarnessEvaluator({
          task: taskRef(target),
          baseline: start,
          workDir: candidatesDir,
          pool,
          server: lanes === undefined ? session.server : { run: lanes.run },
          ...(lanes === undefined ? {} : { lanes }),
          checks,
          ...(referenceRun === undefined ? {} : { reference: referenceRun.promise }),
          knownDevice: device,
          ...(options.onEvaluation === undefined ? {} : { onEvent: options.onEvaluation }),
        });
        // torch.compile's warm-up beside the search, not in the final checks' first timing
        evaluator.timeReference();
        const language: Language = extname(start) === ".py" ? "python" : "c";
        const reference = await referenceSource(target, info);
        const task = proposalTask(info, reference, formatOf(start, baselineSource), device);
        const engine = await runEngine({
          task,
          config,
          seed,
          proposer,
          evaluator,
          archive: fileArchive(archivePath),
          clock: { now: () => performance.now() },
          budget: settings.budget,
          baseline: { source: baselineSource },
          language,
          populationSize: settings.population,
          // each lane needs proposals of its own in flight to keep busy
          parallel:
            settings.parallel ?? parallelFor(undefined, proposerName) * (chosen?.length ?? 1),
          techniques: TECHNIQUES,
          onEvent: (event) => say(describeEngineEvent(event, settings.budget)),
          ...(interrupt === undefined ? {} : { signal: interrupt }),
        });
        if (engine.stoppedBy === "interrupted") {
          say(
            `interrupted after ${engine.spent.candidates} candidates: the archive ${archivePath} ` +
              "has each one; run the same command to resume",
          );
          return { interrupted: true };
        }
        if (lanes !== undefined) say(describeLanes(lanes));
        say(
          `final checks: ${engine.best.id === engine.baseline.id ? "timing the baseline" : "re-verifying and re-timing the best"}`,
        );
        const final = await finalize({
          population: engine.population,
          baseline: engine.baseline,
          rechecker: evaluator,
          onStep: say,
        });
        if (referenceRun !== undefined) say(await referenceLine(referenceRun));
        const file = relative(io.cwd, start);
        const result = buildResult({
          task: { name: info.name, format: info.format, path: target.task.path },
          run: {
            config,
            proposer: proposer.name,
            model,
            seed,
            populationSize: settings.population,
            archive: archivePath,
            startedAt,
            finishedAt: new Date().toISOString(),
          },
          budget: settings.budget,
          engine,
          final,
          original: {
            file: file.startsWith("..") || isAbsolute(file) ? basename(start) : file,
            source: baselineSource,
          },
          language,
          device: {
            gpu: device.name,
            driver: device.driver,
            cuda: device.cuda,
            torch: device.torch,
            python: device.python,
            evokernel: packageVersion(),
          },
          ...(lanes === undefined ? {} : { lanes: lanes.use() }),
        });
        const written = await writeOutputs(result, options.out, io.cwd, start);
        return { interrupted: false, result, written };
      },
      { say, beside },
    );
  } finally {
    await Promise.all([checks.close(), ...laneServers.map((server) => server.close())]);
    if (chosen !== null) {
      if (visibleBefore === undefined) delete process.env["CUDA_VISIBLE_DEVICES"];
      else process.env["CUDA_VISIBLE_DEVICES"] = visibleBefore;
    }
  }
}

/**
 * The lanes of a search over several GPUs: lane 0 is the session's fork server (already on
 * gpus[0]); the others start theirs now, each importing torch beside the others, and a GPU
 * that is not there stops the run before the search, naming it.
 */
async function startLanes(
  gpus: string[],
  first: ForkServer,
  others: ForkServer[],
  say: (line: string) => void,
): Promise<Lanes> {
  say(`searching on ${gpus.length} GPUs (${gpus.join(", ")}): one lane each`);
  const devices = await Promise.all(others.map((server) => deviceOf({ runner: server.run })));
  devices.forEach((found, index) => {
    if (!found.cuda) {
      throw new EnvironmentError(
        `GPU ${gpus[index + 1] ?? "?"} (from --gpus or CUDA_VISIBLE_DEVICES) is not a CUDA GPU ` +
          "on this machine: `nvidia-smi -L` lists the GPUs there are; name those",
      );
    }
  });
  return createLanes(gpus, [first.run, ...others.map((server) => server.run)]);
}

/** What each lane did over the search: one line. */
function describeLanes(lanes: Lanes): string {
  const each = lanes
    .use()
    .map(
      (lane) =>
        `GPU ${lane.gpu}: ${lane.evaluated} evaluated, ${lane.busySeconds.toFixed(1)} s busy` +
        (lane.stopped === undefined ? "" : ` (given up: ${lane.stopped})`),
    );
  return `lanes: ${each.join("; ")}`;
}

/** The reference's own timing, started as the harness starts: when, and when it ended. */
type ReferenceRun = {
  promise: Promise<BenchRecord>;
  startedAt: number;
  endedAt: number | null;
};

/** What the reference's own timing took, beside the search, and where its seconds went. */
async function referenceLine(reference: ReferenceRun): Promise<string> {
  let record: BenchRecord;
  try {
    record = await reference.promise;
  } catch (error) {
    return `  the reference could not be timed beside the search: ${String(error)}`;
  }
  const seconds = ((reference.endedAt ?? performance.now()) - reference.startedAt) / 1000;
  const ended = record.ok ? "" : `: ${record.reason ?? "failed"}`;
  return (
    `  the reference alone (eager, torch.compile) timed in ${seconds.toFixed(1)} s from the harness's start` +
    `${where(record.phases, seconds)}${ended}`
  );
}

/** The proposals in flight for a proposer, unless given. */
export function parallelFor(given: number | undefined, proposer: string): number {
  return given ?? (proposer === "llm" ? DEFAULTS.parallel : OFFLINE_PARALLEL);
}

/** The task's declared tunables and the rules their combinations keep (task.json). */
function tuningOf(target: Target): {
  tunables: Record<string, (string | number)[]>;
  constraints?: string[];
} {
  if (target.spec === null) return { tunables: {} };
  const { tunables = {}, constraints } = target.spec;
  return constraints === undefined ? { tunables } : { tunables, constraints };
}

/** The PyTorch reference a proposal is shown (the task's, never a held-out configuration). */
async function referenceSource({ task, spec }: Target, info: TaskInfo): Promise<string> {
  if (task.format === "kernelbench") return readText(task.folder);
  if (task.format === "robust-kbench") {
    const file = info.backward ? "func_backward.py" : "func_forward.py";
    return readText(join(task.folder, file));
  }
  if (spec === null) return "";
  return readText(join(task.path, spec.reference));
}

/**
 * The candidate format, as the harness detects it (docs/DESIGN.md, "Candidates"); a source
 * the harness will refuse is shown the evk format's rules.
 */
function formatOf(file: string, source: string): CandidateFormat {
  return detectCandidateFormat(file, source) ?? "evk";
}

/** result.json always; the winner's source only when it is one. */
async function writeOutputs(
  result: Result,
  out: string | undefined,
  cwd: string,
  start: string,
): Promise<string[]> {
  if (out === undefined) return [];
  const dir = resolve(cwd, out);
  await makeFolder(dir);
  const written = [join(dir, "result.json")];
  await writeData(written[0] ?? "", `${JSON.stringify(result, null, 2)}\n`);
  if (result.win && result.best !== null) {
    const file = join(dir, `best${extname(start) === ".py" ? ".py" : ".cu"}`);
    await writeData(file, result.best.source);
    written.push(file);
  }
  return written.map((path) => {
    const near = relative(cwd, path);
    return near === "" || near.startsWith("..") || isAbsolute(near) ? path : near;
  });
}
