// The noise rule for base against head, in one place: the runner computes a review's
// statuses with it and the renderers recompute them with the app's threshold, so the
// comment, the check run and the job's result cannot disagree.
import type { Spread } from "./result.js";

export type Change = "faster" | "slower" | "same";

/**
 * faster: head's p80 under base's p20 (faster whatever the noise); slower: head's p20 over
 * base's p80 by more than `thresholdPercent`; else the same within the noise.
 */
export function compareSpreads(base: Spread, head: Spread, thresholdPercent: number): Change {
  if (head.p80Ms < base.p20Ms) return "faster";
  if (head.p20Ms > base.p80Ms * (1 + thresholdPercent / 100)) return "slower";
  return "same";
}

export type Timed = {
  base: Spread | null;
  head: Spread | null;
  launchBound: boolean;
  /** The configuration's name: what a per-configuration threshold is looked up by. */
  name?: string;
};

/** A regression threshold in percent: one for every configuration, or one per configuration. */
export type PerConfig = number | ((config: string) => number);

function at(threshold: PerConfig, config: Timed): number {
  return typeof threshold === "number" ? threshold : threshold(config.name ?? "");
}

export type SpeedupSummary = {
  median: number;
  lowerBound: number;
  upperBound: number;
  configs: number;
};

/**
 * Geometric means over the configurations that count (both timed, not launch-bound) of
 * base/head by median, by base p20 / head p80 (lower bound) and base p80 / head p20 (upper).
 * Null when none counts.
 */
export function summarizeSpeedup(configs: readonly Timed[]): SpeedupSummary | null {
  const pairs = configs.flatMap((config) =>
    config.base !== null && config.head !== null && !config.launchBound
      ? [{ base: config.base, head: config.head }]
      : [],
  );
  if (pairs.length === 0) return null;
  const ok = pairs.every(
    ({ base, head }) => head.medianMs > 0 && head.p80Ms > 0 && head.p20Ms > 0 && base.p20Ms > 0,
  );
  if (!ok) return null;
  return {
    median: geomean(pairs.map(({ base, head }) => base.medianMs / head.medianMs)),
    lowerBound: geomean(pairs.map(({ base, head }) => base.p20Ms / head.p80Ms)),
    upperBound: geomean(pairs.map(({ base, head }) => base.p80Ms / head.p20Ms)),
    configs: pairs.length,
  };
}

/** Head slower beyond noise and threshold on any configuration that counts. */
export function isRegression(configs: readonly Timed[], thresholdPercent: PerConfig): boolean {
  return configs.some(
    (config) =>
      !config.launchBound &&
      config.base !== null &&
      config.head !== null &&
      compareSpreads(config.base, config.head, at(thresholdPercent, config)) === "slower",
  );
}

/**
 * Head faster beyond the noise overall, by at least `winPercent` (the lower bound of the
 * speedup over 1 + winPercent / 100; any gain beyond the noise for 0), and slower beyond it
 * nowhere.
 */
export function isImprovement(
  configs: readonly Timed[],
  thresholdPercent: PerConfig,
  winPercent = 0,
): boolean {
  const summary = summarizeSpeedup(configs);
  return (
    summary !== null &&
    summary.lowerBound > 1 &&
    summary.lowerBound >= 1 + winPercent / 100 &&
    !isRegression(configs, thresholdPercent)
  );
}

function geomean(values: readonly number[]): number {
  return Math.exp(values.reduce((sum, value) => sum + Math.log(value), 0) / values.length);
}
