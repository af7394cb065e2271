// nvcc flags the tuner may try. Every one keeps the arithmetic exactly as written: register
// caps, load-caching modes and vectorisation change speed, never results. Flags that trade
// accuracy for speed (fast math, flush-to-zero, approximate division or square root,
// contraction changes) are refused here, whoever asks.

/** One flag dimension: null means the flag is left out. */
export type FlagDimension = { id: string; label: string; values: (string | null)[] };

export const FLAG_DIMENSIONS: readonly FlagDimension[] = [
  {
    id: "maxrregcount",
    label: "-maxrregcount",
    values: [null, "-maxrregcount=32", "-maxrregcount=64", "-maxrregcount=128"],
  },
  {
    id: "dlcm",
    label: "global-load caching (ptxas -dlcm)",
    values: [null, "--ptxas-options=-dlcm=ca", "--ptxas-options=-dlcm=cg"],
  },
  {
    id: "extra-device-vectorization",
    label: "-extra-device-vectorization",
    values: [null, "-extra-device-vectorization"],
  },
];

const SAFE = [
  /^-maxrregcount=\d{2,3}$/,
  /^--ptxas-options=-dlcm=(ca|cg)$/,
  /^--ptxas-options=-O[0-3]$/,
  /^-Xptxas=-O[0-3]$/,
  /^-extra-device-vectorization$/,
];

/** Spellings of flags that lower precision: never passed, even if a list names them. */
export const PRECISION_LOWERING = /fast.?math|ftz|prec-?div|prec-?sqrt|fmad|approx/i;

/** True for flags on the allow-list, which keep every result bit for bit as written. */
export function isPrecisionSafeFlag(flag: string): boolean {
  return !PRECISION_LOWERING.test(flag) && SAFE.some((re) => re.test(flag));
}
