// The reproduction line beside each verdict of `verify --json` and `bench --json`
// (src/shared/reproduce.ts): the same command, with the seed the harness chose, that gives
// the same verdict from the same inputs.
import { isAbsolute, relative } from "node:path";
import { benchLine, verifyLine } from "#shared/reproduce.js";
import type { CandidateResult } from "../cascade.js";
import { packageVersion } from "../paths.js";

/** A path as the line gives it: relative to where the command ran when inside it. */
export function asGiven(path: string, cwd: string): string {
  if (!isAbsolute(path)) return path;
  const inside = relative(cwd, path);
  return inside === "" || inside.startsWith("..") || isAbsolute(inside) ? path : inside;
}

/** The verify line of one candidate's verdict; null where no verification ran. */
export function verifyReproduction(
  task: string,
  result: CandidateResult,
  run: { cwd: string; configs: readonly string[]; device: "cuda" | "cpu" },
): string | null {
  const record = result.verify;
  if (record === null) return null;
  return verifyLine(packageVersion(), asGiven(task, run.cwd), asGiven(result.candidate, run.cwd), {
    ok: record.ok,
    reason: record.reason,
    seed: record.seed,
    configs: record.configs,
    selected: run.configs,
    device: run.device,
  });
}

/** The bench line of a timed candidate; null where nothing was timed. */
export function benchReproduction(
  task: string,
  result: CandidateResult,
  run: { cwd: string; configs: readonly string[]; baseline?: string },
): string | null {
  const seed = result.bench?.seed ?? null;
  if (seed === null) return null;
  return benchLine(
    packageVersion(),
    asGiven(task, run.cwd),
    asGiven(result.candidate, run.cwd),
    seed,
    {
      configs: run.configs,
      ...(run.baseline === undefined ? {} : { baseline: asGiven(run.baseline, run.cwd) }),
    },
  );
}
