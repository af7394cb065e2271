// The result of a run, as the app will post it (src/shared/result.ts): built from the
// search, the final checks and the original kernel, and parsed against the shared schema
// before anyone sees it.
import { unifiedDiff as sharedUnifiedDiff } from "#report/patch.js";
import { resultSchema, type Result, type ResultConfig } from "#shared/result.js";
import type { EngineResult } from "./engine.js";
import type { Final } from "./final.js";
import type { Language } from "./fingerprint.js";
import { geometricMean } from "./noise.js";
import type { Budget, FinalConfigTiming, FinalVerification } from "./types.js";

export type ResultInput = {
  task: Result["task"];
  run: Result["run"];
  budget: Budget;
  engine: EngineResult;
  final: Final;
  /** The kernel the run started from; `file` is how the diff names it (a repository path). */
  original: { file: string; source: string };
  language: Language;
  device: Result["device"];
  /** A search over several GPUs: what each lane did (absent on one GPU). */
  lanes?: NonNullable<Result["search"]["lanes"]> | undefined;
};

export function buildResult(input: ResultInput): Result {
  const { engine, final } = input;
  const configs = final.timing.configs.map(describeConfig);
  // the headline leaves launch-bound configurations out, unless there is nothing else
  const measured = final.timing.configs.filter((config) => !config.launchBound);
  const headline = measured.length > 0 ? measured : final.timing.configs;
  const subjects = headline.map((config) => config.candidate ?? config.baseline);
  const compiled = headline.flatMap((config, index) =>
    config.compile === null ? [] : [config.compile.medianMs / (subjects[index]?.medianMs ?? 1)],
  );
  const candidate = final.candidate;
  const result: Result = {
    schema: 1,
    kind: "optimize",
    task: input.task,
    run: input.run,
    win: final.win,
    verdict: final.verdict,
    speedup: {
      baseline: final.judged?.speedup ?? null,
      lowerBound: final.judged?.lowerBound ?? null,
      eager: positiveOrNull(
        geometricMean(
          headline.map((config, index) => config.eager.medianMs / (subjects[index]?.medianMs ?? 1)),
        ),
      ),
      compile:
        compiled.length === headline.length && compiled.length > 0
          ? positiveOrNull(geometricMean(compiled))
          : null,
    },
    configs,
    verification: {
      ...(final.verification === null
        ? { ok: false, status: "not-run", reason: null, message: final.verdict, configs: [] }
        : withoutPhases(final.verification)),
      rejected: final.rejected,
    },
    best:
      candidate === null
        ? null
        : (() => {
            const source = materializeDefines(candidate.source, candidate.defines, input.language);
            return {
              id: candidate.id,
              hash: candidate.hash,
              proposer: candidate.proposer,
              parents: candidate.parents,
              insight: candidate.insight,
              defines: candidate.defines,
              flags: candidate.flags,
              source,
              file: input.original.file,
              diff: unifiedDiff(input.original.file, input.original.source, source),
            };
          })(),
    history: engine.history,
    search: {
      candidates: engine.spent.candidates,
      ...engine.counts,
      seconds: engine.spent.seconds,
      stoppedBy: engine.stoppedBy,
      budget: input.budget,
      ...(input.lanes === undefined ? {} : { lanes: input.lanes }),
    },
    usage: engine.usage,
    device: input.device,
  };
  return resultSchema.parse(result);
}

function describeConfig(config: FinalConfigTiming): ResultConfig {
  const best = config.candidate;
  const subject = best ?? config.baseline;
  return {
    name: config.config,
    floorMs: config.floorMs,
    launchBound: config.launchBound,
    baseline: config.baseline,
    best,
    eager: config.eager,
    compile: config.compile,
    speedup: {
      baseline: best === null ? null : ratio(config.baseline.medianMs, best.medianMs),
      eager: ratio(config.eager.medianMs, subject.medianMs),
      compile: config.compile === null ? null : ratio(config.compile.medianMs, subject.medianMs),
    },
    percentOfFloor: {
      baseline: percentOf(config.floorMs, config.baseline.medianMs) ?? 0,
      best: best === null ? null : percentOf(config.floorMs, best.medianMs),
    },
    clearlyFaster: best !== null && best.p80Ms < config.baseline.p20Ms,
    clearlySlower: best !== null && best.p20Ms > config.baseline.p80Ms,
  };
}

function ratio(reference: number, subject: number): number | null {
  return subject > 0 ? positiveOrNull(reference / subject) : null;
}

function percentOf(floorMs: number, ms: number): number | null {
  return ms > 0 ? (floorMs / ms) * 100 : null;
}

function positiveOrNull(value: number): number | null {
  return Number.isFinite(value) && value > 0 ? value : null;
}

/** Unified diff of the original kernel against the best, both named by the same path. */
export function unifiedDiff(file: string, before: string, after: string): string {
  return sharedUnifiedDiff(file, before, after);
}

/**
 * The source as it would be committed: a tuner's -D values written into it. A default
 * guarded by `#ifndef NAME` gets the new value in place (a one-line diff); otherwise a
 * `#define` goes on top, where -D would have been. Python sources have no defines.
 */
export function materializeDefines(
  source: string,
  defines: Readonly<Record<string, string>>,
  language: Language,
): string {
  const entries = Object.entries(defines).sort(([a], [b]) => a.localeCompare(b));
  if (language === "python" || entries.length === 0) return source;
  let text = source;
  const prepend: string[] = [];
  for (const [name, value] of entries) {
    const guarded = new RegExp(
      `(#\\s*ifndef\\s+${name}\\b[^\\n]*\\n\\s*#\\s*define\\s+${name}\\s+)([^\\n]*?)([ \\t]*(?://[^\\n]*)?)$`,
      "m",
    );
    if (guarded.test(text))
      text = text.replace(
        guarded,
        (_, head: string, _old: string, tail: string) => `${head}${value}${tail}`,
      );
    else prepend.push(`#define ${name} ${value}`);
  }
  return prepend.length === 0 ? text : `${prepend.join("\n")}\n${text}`;
}

/** A final verification as the result keeps it: the harness's phases are for the run's log only. */
function withoutPhases(verification: FinalVerification): Omit<FinalVerification, "phases"> {
  const { ok, status, reason, message, configs } = verification;
  return { ok, status, reason, message, configs };
}
