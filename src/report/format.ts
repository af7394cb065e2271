// Numbers as a reader sees them in comments and check runs: times, spreads, ratios,
// percentages. Escaping of untrusted text lives in escape.ts.
import type { Spread } from "../shared/result.js";

/** A time in ms with three significant digits (µs below 0.1 ms). */
export function formatMs(ms: number): string {
  if (ms < 0.1) return `${significant(ms * 1000)} µs`;
  return `${significant(ms)} ms`;
}

/**
 * `median ± half the p20–p80 range`, the spread the timer reports: the median to three
 * significant digits, the spread to the same decimals (µs below 0.1 ms).
 */
export function formatSpread(spread: Spread | null): string {
  if (spread === null) return "—";
  const micro = spread.medianMs < 0.1;
  const scale = micro ? 1000 : 1;
  const median = spread.medianMs * scale;
  const half = ((spread.p80Ms - spread.p20Ms) / 2) * scale;
  const decimals = median <= 0 ? 0 : Math.max(0, 2 - Math.floor(Math.log10(median)));
  return `${median.toFixed(decimals)} ± ${half.toFixed(decimals)} ${micro ? "µs" : "ms"}`;
}

/** 1.8×, 1.25×, 12× */
export function formatRatio(ratio: number, digits = 3): string {
  return `${significant(ratio, ratio >= 10 ? 2 : digits)}×`;
}

/** A speedup under 1 as "12% slower" reads better than 0.89×: head over base, minus one. */
export function percentSlower(speedup: number): number {
  return (1 / speedup - 1) * 100;
}

export function formatPercent(percent: number | null): string {
  if (percent === null) return "—";
  return `${percent >= 10 ? Math.round(percent) : significant(percent, 2)}%`;
}

/** A number in scientific notation with two significant digits (3.1e-2), for errors. */
export function formatError(value: number | null): string {
  if (value === null) return "NaN";
  if (value === 0) return "0";
  const [mantissa, exponent] = value.toExponential(1).split("e");
  return `${Number(mantissa)}e${Number(exponent)}`;
}

export function significant(value: number, digits = 3): string {
  if (value === 0 || !Number.isFinite(value)) return String(value);
  // Number() drops trailing zeros and exponent notation: 2.00 → 2, 1.0e+2 → 100.
  return String(Number(value.toPrecision(digits)));
}

/** The first line of a message, cut to `max` characters. */
export function firstLine(text: string, max = 200): string {
  const line = text.trim().split(/\r?\n/)[0] ?? "";
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
