// When a faster kernel is faster: beyond the noise of the measurement. Each configuration's
// time is a distribution (median, p20, p80 over many calls, baseline and candidate
// interleaved in one process). The speedup's lower bound pairs the baseline's fast end with
// the candidate's slow end, p20 / p80; a win needs the geometric mean of those over the
// configurations above 1, and no configuration "clearly slower" (the candidate's p20 above
// the baseline's p80): a kernel that trades one shape for another is not suggested. A
// configuration is "clearly faster" where the candidate's p80 is under the baseline's p20.
import type { ConfigTiming, Spread } from "./types.js";

export type Judged = {
  /**
   * Geometric mean of baseline median / candidate median (the search's fitness), over the
   * configurations that are not launch-bound (all of them when every one is).
   */
  speedup: number;
  /** Geometric mean of baseline p20 / candidate p80. */
  lowerBound: number;
  win: boolean;
  clearlyFaster: boolean[];
  clearlySlower: boolean[];
};

export function judgeSpeedup(
  configs: readonly { baseline: Spread; candidate: Spread; launchBound?: boolean | undefined }[],
): Judged | null {
  const usable = configs.filter(
    ({ baseline, candidate }) =>
      candidate.medianMs > 0 && candidate.p80Ms > 0 && baseline.p20Ms > 0,
  );
  if (usable.length === 0 || usable.length !== configs.length) return null;
  // A launch-bound configuration (the reference under 20 µs a call) times launches, not
  // kernels: it stays out of the headline, unless there is nothing else.
  const measured = usable.filter((c) => c.launchBound !== true);
  const headline = measured.length > 0 ? measured : usable;
  const speedup = geometricMean(headline.map((c) => c.baseline.medianMs / c.candidate.medianMs));
  const lowerBound = geometricMean(headline.map((c) => c.baseline.p20Ms / c.candidate.p80Ms));
  // every configuration counts here: a kernel that makes a user's real shape slower, launch
  // overhead or not, is not suggested
  const clearlySlower = usable.map((c) => c.candidate.p20Ms > c.baseline.p80Ms);
  return {
    speedup,
    lowerBound,
    win: lowerBound > 1 && !clearlySlower.includes(true),
    clearlyFaster: usable.map((c) => c.candidate.p80Ms < c.baseline.p20Ms),
    clearlySlower,
  };
}

/** judgeSpeedup on the search's own timings (each configuration's candidate beside the baseline). */
export function judgeTimings(timings: readonly ConfigTiming[]): Judged | null {
  return judgeSpeedup(
    timings.map((timing) => ({
      baseline: {
        medianMs: timing.baselineMs,
        p20Ms: timing.baselineP20Ms,
        p80Ms: timing.baselineP80Ms,
      },
      candidate: { medianMs: timing.medianMs, p20Ms: timing.p20Ms, p80Ms: timing.p80Ms },
      launchBound: timing.launchBound,
    })),
  );
}

export function geometricMean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  return Math.exp(values.reduce((sum, value) => sum + Math.log(value), 0) / values.length);
}
