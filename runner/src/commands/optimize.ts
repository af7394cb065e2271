// evokernel optimize: search for a faster kernel that passes the verifier (EvoEngineer),
// re-check the best on every configuration and against the noise, and write the result.
import { randomInt } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { basename, dirname, extname, isAbsolute, join, relative, resolve } from "node:path";
import type { Result } from "../../../src/shared/result.js";
import { UsageError } from "../errors.js";
import type { EvaluationEvent } from "../evaluate.js";
import { runEngine, DEFAULTS } from "../evolve/engine.js";
import { createHarnessEvaluator } from "../evolve/evaluator.js";
import { finalize } from "../evolve/final.js";
import { assertResumable, fileArchive, readArchive } from "../evolve/archive.js";
import type { Language } from "../evolve/fingerprint.js";
import { buildResult } from "../evolve/result.js";
import { proposalTask } from "../evolve/task-context.js";
import { TECHNIQUES } from "../evolve/techniques.js";
import type { Budget, EvoConfig } from "../evolve/types.js";
import { inspectTask } from "../harness/client.js";
import type { TaskInfo } from "../../../src/shared/contract/records.js";
import {
  detectCandidateFormat,
  type CandidateFormat,
} from "../../../src/shared/contract/formats.js";
import { packageVersion } from "../paths.js";
import { createProposer, DEFAULT_MODEL, defaultProposer, PROPOSERS } from "../proposers/index.js";
import { describeEngineEvent } from "../report/optimize-progress.js";
import { describeEvent } from "../report/progress.js";
import { renderOptimizeSummary } from "../report/optimize-summary.js";
import { checkNativeTask } from "../tasks/check-native.js";
import type { DiscoveredTask } from "../tasks/discover.js";
import { flag, printJson, stringOption, type Command, type Parsed } from "./command.js";
import { requireGpu, withSession } from "./session.js";
import { candidatesFor, loadTarget } from "./target.js";
import { allowRead } from "../sandbox/sandbox.js";

const CONFIGS: readonly EvoConfig[] = ["free", "insight", "full"];
const DEFAULT_CONFIG: EvoConfig = "insight";
const DEFAULT_BUDGET: Budget = { candidates: 45, seconds: 60 * 60, usd: 10 };
/**
 * Proposals in flight: EvoEngineer's 4 for the llm; 8 for the offline tuners, whose
 * proposals cost nothing: with a build taking 2-3 s and the GPU's part of a candidate under
 * one, 4 in flight leave the GPU waiting for builds.
 */
const OFFLINE_PARALLEL = 8;

export const optimizeCommand: Command = {
  name: "optimize",
  usage: `usage: evokernel optimize <task> [--config free|insight|full] [--proposer NAME] [--model M]
                          [--candidates N] [--minutes M] [--usd D] [--population N]
                          [--parallel N] [--seed N] [--archive FILE] [--out DIR]
                          [--candidate FILE] [--json]

Evolves the task's kernel (EvoEngineer): a population of verified candidates, parents
drawn by rank, survivors by fitness (geometric-mean speedup over the task's kernel on the
visible configurations). Each candidate goes through the static check, a cached parallel
build, a quick check on the smallest configuration, full verification and timing beside
the task's kernel. The best is then verified again on every configuration, held-out ones
included, and timed again beside the task's kernel, eager PyTorch and torch.compile: it
is a win only when faster beyond the noise (the geometric mean of the task kernel's p20
over the best's p80 above 1). Every candidate goes to the archive; run the same command
again to resume. Needs a CUDA GPU. Method and defaults: docs/OPTIMIZE.md.

  <task>              a task folder, a KernelBench .py file, or a name under ./kernels
      --config C      what a proposal is shown: free, insight (default) or full
      --proposer P    ${PROPOSERS.join(" or ")} (default: llm when ANTHROPIC_API_KEY is set,
                      else tuner, which tries the kernel's tunables and needs no key)
      --model M       the model the llm proposer asks (default ${DEFAULT_MODEL})
      --candidates N  stop after N proposals (default ${DEFAULT_BUDGET.candidates})
      --minutes M     stop after M minutes of search (default ${DEFAULT_BUDGET.seconds / 60})
      --usd D         stop after D dollars of proposals (default ${DEFAULT_BUDGET.usd})
      --population N  the fittest candidates kept as parents and insights (default ${DEFAULTS.populationSize})
      --parallel N    proposals in flight at once; proposal n sees the results of 1..n-N
                      (default ${DEFAULTS.parallel} for the llm, ${OFFLINE_PARALLEL} for the tuners)
      --seed N        seed of every random choice (default: the archive's, else random)
      --archive FILE  the run's archive (default .evokernel/<task>/archive.jsonl)
      --out DIR       write result.json there, and the winner as best.cu (or best.py)
  -c, --candidate F   start from this kernel instead of the task's own
      --json          print the result (one JSON document)

Ctrl-C stops after the candidates in flight (their cost is kept in the archive) and skips
the final checks; run the same command to resume. A second Ctrl-C quits at once.

exit: 0 a faster kernel found and verified, 1 none (or the task invalid), 2 usage,
      3 no GPU or no Python with torch, 4 internal error, 130 interrupted`,
  options: {
    config: { type: "string" },
    proposer: { type: "string" },
    model: { type: "string" },
    candidates: { type: "string" },
    minutes: { type: "string" },
    usd: { type: "string" },
    population: { type: "string" },
    parallel: { type: "string" },
    seed: { type: "string" },
    archive: { type: "string" },
    out: { type: "string" },
    candidate: { type: "string", short: "c" },
    json: { type: "boolean" },
  },
  async run(parsed, io) {
    const settings = readSettings(parsed);
    const target = await loadTarget(parsed.positionals[0], io.cwd);
    const given = stringOption(parsed, "candidate");
    const [start] = await candidatesFor(target, given === undefined ? [] : [given], io.cwd);
    if (start === undefined) throw new Error("candidatesFor returned no candidate");
    const archivePath = resolve(
      io.cwd,
      stringOption(parsed, "archive") ?? join(".evokernel", target.task.name, "archive.jsonl"),
    );
    const archived = await readArchive(archivePath);
    // The search writes its candidates here; the sandbox reads them.
    const candidatesDir = join(dirname(archivePath), "candidates");
    await mkdir(candidatesDir, { recursive: true });
    allowRead(candidatesDir);
    const first = archived[0];
    const config = settings.config ?? first?.config ?? DEFAULT_CONFIG;
    const seed = settings.seed ?? first?.seed ?? randomInt(2 ** 31);
    assertResumable(archived, { seed, config });
    const baselineSource = await readFile(start, "utf8");
    const proposerName = settings.proposer ?? defaultProposer(process.env);
    const model = proposerName === "llm" ? (settings.model ?? DEFAULT_MODEL) : null;
    const proposer = createProposer(proposerName, {
      seed,
      taskPath: target.task.path,
      baselineSource,
      ...(await tuningOf(target.task)),
      compiled: extname(start) !== ".py",
      ...(settings.model === undefined ? {} : { model: settings.model }),
      env: process.env,
    });
    const json = flag(parsed, "json");
    // On a terminal the cascade's steps rewrite one status line; each candidate ends a line.
    const clear = io.stderrIsTTY ? "\r\x1b[K" : "";
    const say = (line: string) => io.stderr(`${clear}${line}\n`);

    const interrupt = io.interruptSignal?.();
    return withSession(
      async function optimizeWithServer(session) {
        requireGpu(session);
        const startedAt = new Date().toISOString();
        const info = await inspectTask(target.task.path, { runner: session.server.run });
        const { device } = session.device;
        const evaluator = createHarnessEvaluator({
          task: target.task.path,
          baseline: start,
          workDir: candidatesDir,
          server: session.server,
          knownDevice: device,
          ...(io.stderrIsTTY
            ? { onEvent: (event: EvaluationEvent) => io.stderr(`${clear}${describeEvent(event)}`) }
            : {}),
        });
        const language: Language = extname(start) === ".py" ? "python" : "c";
        const reference = await referenceSource(target.task, info);
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
          parallel: parallelFor(settings.parallel, proposerName),
          techniques: TECHNIQUES,
          onEvent: (event) => say(describeEngineEvent(event, settings.budget)),
          ...(interrupt === undefined ? {} : { signal: interrupt }),
        });
        if (engine.stoppedBy === "interrupted") {
          say(
            `interrupted after ${engine.spent.candidates} candidates: the archive ${archivePath} ` +
              "has each one; run the same command to resume",
          );
          return 130;
        }
        say(
          `final checks: ${engine.best.id === engine.baseline.id ? "timing the baseline" : "re-verifying and re-timing the best"}`,
        );
        const final = await finalize({
          population: engine.population,
          baseline: engine.baseline,
          rechecker: evaluator,
        });
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
        });
        const written = await writeOutputs(result, stringOption(parsed, "out"), io.cwd, start);
        if (json) printJson(io, result);
        else io.stdout(`${renderOptimizeSummary(result, written)}\n`);
        return result.win ? 0 : 1;
      },
      { say },
    );
  },
};

type Settings = {
  config: EvoConfig | undefined;
  seed: number | undefined;
  proposer: string | undefined;
  model: string | undefined;
  budget: Budget;
  population: number;
  /** --parallel; absent: parallelFor's default for the proposer. */
  parallel: number | undefined;
};

/** Every flag checked before anything starts: a usage error costs no GPU time. */
function readSettings(parsed: Parsed): Settings {
  const configText = stringOption(parsed, "config");
  if (configText !== undefined && !CONFIGS.includes(configText as EvoConfig)) {
    throw new UsageError(`--config is one of ${CONFIGS.join(", ")}, not ${configText}`);
  }
  const proposer = stringOption(parsed, "proposer");
  if (proposer !== undefined && !(PROPOSERS as readonly string[]).includes(proposer)) {
    throw new UsageError(`--proposer is one of ${PROPOSERS.join(", ")}, not ${proposer}`);
  }
  const minutes = number(parsed, "minutes", { min: 0 });
  return {
    config: configText as EvoConfig | undefined,
    seed: number(parsed, "seed", { integer: true, min: 0 }),
    proposer,
    model: stringOption(parsed, "model"),
    budget: {
      candidates:
        number(parsed, "candidates", { integer: true, min: 0 }) ?? DEFAULT_BUDGET.candidates,
      seconds: minutes === undefined ? DEFAULT_BUDGET.seconds : minutes * 60,
      usd: number(parsed, "usd", { min: 0 }) ?? DEFAULT_BUDGET.usd,
    },
    population: number(parsed, "population", { integer: true, min: 1 }) ?? DEFAULTS.populationSize,
    parallel: number(parsed, "parallel", { integer: true, min: 1 }),
  };
}

function parallelFor(given: number | undefined, proposer: string): number {
  return given ?? (proposer === "llm" ? DEFAULTS.parallel : OFFLINE_PARALLEL);
}

function number(
  parsed: Parsed,
  name: string,
  rule: { integer?: boolean; min: number },
): number | undefined {
  const text = stringOption(parsed, name);
  if (text === undefined) return undefined;
  const value = Number(text);
  const kind = rule.integer ? "a whole number" : "a number";
  if (text.trim() === "" || !Number.isFinite(value) || (rule.integer && !Number.isInteger(value))) {
    throw new UsageError(`--${name} is ${kind}, not ${text}`);
  }
  if (value < rule.min) throw new UsageError(`--${name} is at least ${rule.min}, not ${text}`);
  return value;
}

/** The task's declared tunables and the rules their combinations keep (task.json). */
async function tuningOf(
  task: DiscoveredTask,
): Promise<{ tunables: Record<string, (string | number)[]>; constraints?: string[] }> {
  if (task.format !== "native") return { tunables: {} };
  const checked = await checkNativeTask(task.path);
  if (!checked.ok) return { tunables: {} };
  const { tunables = {}, constraints } = checked.task;
  return constraints === undefined ? { tunables } : { tunables, constraints };
}

/** The PyTorch reference a proposal is shown (the task's, never a held-out configuration). */
async function referenceSource(task: DiscoveredTask, info: TaskInfo): Promise<string> {
  if (task.format === "kernelbench") return readFile(task.folder, "utf8");
  if (task.format === "robust-kbench") {
    const file = info.backward ? "func_backward.py" : "func_forward.py";
    return readFile(join(task.folder, file), "utf8");
  }
  const checked = await checkNativeTask(task.path);
  if (!checked.ok) return "";
  return readFile(join(task.path, checked.task.reference), "utf8");
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
  await mkdir(dir, { recursive: true });
  const written = [join(dir, "result.json")];
  await writeFile(written[0] ?? "", `${JSON.stringify(result, null, 2)}\n`, "utf8");
  if (result.win && result.best !== null) {
    const file = join(dir, `best${extname(start) === ".py" ? ".py" : ".cu"}`);
    await writeFile(file, result.best.source, "utf8");
    written.push(file);
  }
  return written.map((path) => {
    const near = relative(cwd, path);
    return near === "" || near.startsWith("..") || isAbsolute(near) ? path : near;
  });
}
