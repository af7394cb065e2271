// evokernel optimize: flags → options → the pipeline (runner/src/pipeline/optimize.ts) →
// the result printed (a summary, or --json) and the exit code.
import { UsageError } from "../errors.js";
import { DEFAULTS } from "../evolve/engine.js";
import type { Budget, EvoConfig } from "../evolve/types.js";
import { gpusOf } from "../gpu/lanes.js";
import { OFFLINE_PARALLEL, runOptimize } from "../pipeline/optimize.js";
import { DEFAULT_MODEL, PROPOSERS } from "../proposers/index.js";
import { describeEvent } from "../render/progress.js";
import { renderOptimizeSummary } from "../render/optimize-summary.js";
import { flag, printJson, stringOption, type Command, type Parsed } from "./command.js";

const CONFIGS: readonly EvoConfig[] = ["free", "insight", "full"];
export const DEFAULT_BUDGET: Budget = { candidates: 45, seconds: 60 * 60, usd: 10 };

export const optimizeCommand: Command = {
  name: "optimize",
  usage: `usage: evokernel optimize <task> [--config free|insight|full] [--proposer NAME] [--model M]
                          [--candidates N] [--minutes M] [--usd D] [--population N]
                          [--parallel N] [--gpus LIST] [--seed N] [--archive FILE]
                          [--out DIR] [--candidate FILE] [--no-nvcc-flags] [--json]

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
                      (default ${DEFAULTS.parallel} for the llm, ${OFFLINE_PARALLEL} for the tuners,
                      times the number of GPUs)
      --gpus LIST     search on these GPUs, one lane each (such as 0,1,2,3; default: those of
                      CUDA_VISIBLE_DEVICES, else one); the final checks run on the first
      --seed N        seed of every random choice (default: the archive's, else random)
      --archive FILE  the run's archive (default .evokernel/<task>/archive.jsonl)
      --out DIR       write result.json there, and the winner as best.cu (or best.py)
  -c, --candidate F   start from this kernel instead of the task's own
      --no-nvcc-flags the tuner leaves nvcc flags alone (as a pull request's search does: its
                      winner is suggested as a change to the kernel file, which cannot carry them)
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
    gpus: { type: "string" },
    seed: { type: "string" },
    archive: { type: "string" },
    out: { type: "string" },
    candidate: { type: "string", short: "c" },
    "no-nvcc-flags": { type: "boolean" },
    json: { type: "boolean" },
  },
  async run(parsed, io) {
    const settings = readSettings(parsed);
    // On a terminal the cascade's steps rewrite one status line; each candidate ends a line.
    const clear = io.stderrIsTTY ? "\r\x1b[K" : "";
    const run = await runOptimize({
      ...settings,
      task: parsed.positionals[0],
      cwd: io.cwd,
      candidate: stringOption(parsed, "candidate"),
      archive: stringOption(parsed, "archive"),
      out: stringOption(parsed, "out"),
      ...(flag(parsed, "no-nvcc-flags") ? { nvccFlags: false } : {}),
      env: process.env,
      say: (line) => io.stderr(`${clear}${line}\n`),
      onEvaluation: io.stderrIsTTY
        ? (event) => io.stderr(`${clear}${describeEvent(event)}`)
        : undefined,
      interruptSignal: io.interruptSignal,
    });
    if (run.interrupted) return 130;
    if (flag(parsed, "json")) printJson(io, run.result);
    else io.stdout(`${renderOptimizeSummary(run.result, run.written)}\n`);
    return run.result.win ? 0 : 1;
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
  /** --gpus, checked; absent: CUDA_VISIBLE_DEVICES's, else one. */
  gpus: string | undefined;
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
    gpus: checkedGpus(stringOption(parsed, "gpus")),
  };
}

/** --gpus as given, once gpusOf accepts it (a usage error, exit 2, otherwise). */
function checkedGpus(given: string | undefined): string | undefined {
  gpusOf(given, process.env);
  return given;
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
