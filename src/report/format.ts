// Numbers as a reader sees them in comments and check runs: times in one unit per table,
// signed time changes, ratios, percentages, errors. Escaping of untrusted text: escape.ts.

export type TimeUnit = "ms" | "µs";

/** One unit for a set of times: µs when every one is under 1 ms, else ms. */
export function unitFor(times: readonly (number | null)[]): TimeUnit {
  const known = times.filter((time): time is number => time !== null);
  return known.length > 0 && known.every((time) => time < 1) ? "µs" : "ms";
}

/** A time in the column's unit, three significant digits, no unit (the header has it). */
export function formatIn(ms: number | null, unit: TimeUnit): string {
  if (ms === null) return "—";
  const value = unit === "µs" ? ms * 1000 : ms;
  return value >= 1000 ? value.toFixed(0) : value.toPrecision(3);
}

/** The no-break space between a number and its unit or word: a cell never wraps there. */
const NBSP = "\u00A0";

/**
 * A speedup (base time over the PR's) as a reader says it: `1.35× faster`, `1.39× slower`
 * (base takes 1.39× less time), `1.00×` where the two round to the same.
 */
export function formatSpeedup(speedup: number): string {
  const size = speedup >= 1 ? speedup : 1 / speedup;
  // a third decimal where two would read 1.00× for a change there is
  const digits = size >= 10 ? 0 : size.toFixed(2) === "1.00" ? 3 : 2;
  const ratio = `${size.toFixed(digits)}×`;
  if (ratio === "1.000×") return "1.00×";
  return `${ratio}${NBSP}${speedup >= 1 ? "faster" : "slower"}`;
}

/** 1.8×, 1.25×, 12× */
export function formatRatio(ratio: number, digits = 3): string {
  return `${significant(ratio, ratio >= 10 ? 2 : digits)}×`;
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
