// Number formats shared by the reports: fixed decimals that keep three significant digits
// for times, scientific notation for errors that span many orders of magnitude.
import type { Stat } from "#shared/contract/records.js";

function decimalsFor(ms: number): number {
  if (ms >= 100) return 1;
  if (ms >= 10) return 2;
  if (ms >= 0.01) return 3;
  return 4;
}

export function formatMs(ms: number): string {
  return ms.toFixed(decimalsFor(ms));
}

/** "median ± half the p20–p80 spread", in ms, both to the median's precision. */
export function formatStat(stat: Stat | null): string {
  if (stat === null) return "–";
  const decimals = decimalsFor(stat.medianMs);
  const spread = (stat.p80Ms - stat.p20Ms) / 2;
  return `${stat.medianMs.toFixed(decimals)} ± ${spread.toFixed(decimals)}`;
}

/** An error measure; null stands for NaN or Inf, which JSON cannot carry. */
export function formatError(value: number | null): string {
  if (value === null) return "NaN/Inf";
  if (!Number.isFinite(value)) return String(value);
  if (value === 0) return "0";
  return value.toExponential(2);
}

export function formatSeconds(seconds: number): string {
  return seconds >= 10 ? `${seconds.toFixed(0)} s` : `${seconds.toFixed(1)} s`;
}

export function formatRatio(ratio: number | null): string {
  if (ratio === null || !Number.isFinite(ratio)) return "–";
  return `${ratio.toFixed(2)}×`;
}

export function formatPercent(value: number | null): string {
  if (value === null || !Number.isFinite(value)) return "–";
  return `${value.toFixed(0)}%`;
}

export function indent(text: string, by = "  "): string {
  return text
    .trimEnd()
    .split("\n")
    .map((line) => by + line)
    .join("\n");
}
