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

/** The no-break space between a number and its %: a cell never wraps there. */
const NBSP = "\u00A0";

/**
 * How the PR's time compares with base's, signed: `−26 %` (26 % less time), `+39 %`. The
 * headline's "26 % faster" and "39 % slower" are these numbers, so the two always agree.
 */
export function formatTimeChange(speedup: number): string {
  const percent = timeChangePercent(speedup);
  const size = Math.abs(percent);
  const digits = size >= 10 ? String(Math.round(size)) : significant(size, 2);
  if (digits === "0") return `0${NBSP}%`;
  return `${percent < 0 ? "\u2212" : "+"}${digits}${NBSP}%`;
}

/** The time change in percent for a speedup (base over PR): 1.35× → −26. */
export function timeChangePercent(speedup: number): number {
  return (1 / speedup - 1) * 100;
}

/** "26 %" of "26 % faster", from a speedup either way. */
export function formatChangeSize(speedup: number): string {
  const size = Math.abs(timeChangePercent(speedup));
  return `${size >= 10 ? Math.round(size) : significant(size, 2)}${NBSP}%`;
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
