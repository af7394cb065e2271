// The line that reproduces a verdict: what a developer pastes on a GPU machine, in the
// repository's checkout, to get the same verdict from the same seed, configurations and
// inputs. One builder for the runner's `--json` and the app's comment and check run, so the
// line printed is the line the CLI takes (test/runner/cli/reproduce.test.ts parses and runs them).
//
// Why the lines are what they are (runner/harness/evokernel_harness): a verification trial's
// inputs come from the seed, the configuration's name and the trial's number, and a timing's
// from the seed and the configuration's place among the visible ones, which `--config` keeps;
// so `--seed` with `--config` gives a configuration the inputs it had in the full run, and
// its trials replay in order. A verdict also depends on the configurations run before the
// one that failed (a failure after others passed is "shape-specific"), so the verify line
// names every configuration up to and including the first that failed, and all of them (with
// --heldout) where the verdict rests on the ones after it too.

/** What a verify line needs of a verification: how it ended, its seed, its configurations in run order. */
export type VerifiedRun = {
  ok: boolean;
  reason: string | null;
  seed: number | null;
  configs: readonly { name: string; heldout: boolean; ok: boolean }[];
  /** The configurations the run was restricted to (`--config`), when it was. */
  selected?: readonly string[];
  /** cpu: the run was on the CPU (`--device cpu`, py candidates). */
  device?: "cuda" | "cpu";
};

/** A word for a POSIX shell: as it is when it is plain, else single-quoted. */
export function shellWord(word: string): string {
  if (/^[A-Za-z0-9_./:@=+,-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** `npx evokernel@V`: the version that judged (the latest where it is not a release's number). */
function command(version: string, words: readonly string[]): string {
  const release = /^\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.-]+)?$/.test(version);
  return ["npx", release ? `evokernel@${version}` : "evokernel", ...words].map(shellWord).join(" ");
}

/**
 * The configurations a verify line names: null for all of them (a pass, a failure before any
 * configuration ran, or a verdict that rests on configurations after the failing one); else
 * the run's configurations up to and including the first that failed.
 */
export function verifyConfigs(run: VerifiedRun): string[] | null {
  if (run.ok || run.reason === "shape-specific") return null;
  const failed = run.configs.findIndex((config) => !config.ok);
  if (failed < 0 || failed === run.configs.length - 1) return null;
  return run.configs.slice(0, failed + 1).map((config) => config.name);
}

/**
 * `npx evokernel@V verify <task> --candidate <file> --seed N [--config C]… [--heldout]`; null
 * without a seed (the run never reached the harness's verification).
 */
export function verifyLine(
  version: string,
  task: string,
  candidate: string,
  run: VerifiedRun,
): string | null {
  if (run.seed === null) return null;
  const words = ["verify", task, "--candidate", candidate, "--seed", String(run.seed)];
  const selected = run.selected ?? [];
  const configs = verifyConfigs(run) ?? (selected.length > 0 ? selected : null);
  if (configs !== null) for (const name of configs) words.push("--config", name);
  else if (run.configs.some((config) => config.heldout)) words.push("--heldout");
  if (run.device === "cpu") words.push("--device", "cpu");
  return command(version, words);
}

/** Base's kernel as a review timed it: the file at the merge base of the two commits. */
export type BaseKernel = { baseSha: string; headSha: string; kernel: string };

/**
 * `npx evokernel@V bench <task> --candidate <file> --seed N [--config C]…`: the timing of the
 * named configurations (all when none) from the inputs the seed gave them. With `base`, base's
 * kernel is timed beside it as a review times it (from the merge base, as the review took it):
 * `git show` writes it out first.
 */
export function benchLine(
  version: string,
  task: string,
  candidate: string,
  seed: number,
  options: { configs?: readonly string[]; base?: BaseKernel | null; baseline?: string } = {},
): string {
  const words = ["bench", task, "--candidate", candidate, "--seed", String(seed)];
  for (const name of options.configs ?? []) words.push("--config", name);
  if (options.baseline !== undefined) words.push("--baseline", options.baseline);
  const base = options.base ?? null;
  if (base === null) return command(version, words);
  const extension = /\.[A-Za-z0-9]+$/.exec(base.kernel)?.[0] ?? "";
  const file = `/tmp/evokernel-base${extension}`;
  const commit = `"$(git merge-base ${shellWord(base.baseSha)} ${shellWord(base.headSha)})"`;
  const show = `git show ${commit}:${shellWord(base.kernel)} > ${file}`;
  return `${show} && ${command(version, [...words, "--baseline", file])}`;
}
