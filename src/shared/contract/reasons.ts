// The verdict's reason codes and the hack classes they name (docs/DESIGN.md, "Verdict
// reasons"), declared once. The harness writes them; runner/harness/tests/test_contract.py
// checks its records and verify.py's HACKS against the generated JSON Schemas. Records keep
// `reason` a plain string when parsed: a newer harness's code reads as a rejection with its
// code (src/report/reasons.ts), never as a record we cannot read.
import { z } from "zod";

export const REASONS = [
  "mismatch",
  "reduced-precision",
  "accuracy-loss",
  "nan-output",
  "wrong-shape",
  "wrong-dtype",
  "unwritten-output",
  "input-mutation",
  "output-memory-reuse",
  "result-caching",
  "shape-specific",
  "distribution-specific",
  "timer-patching",
  "side-stream",
  "background-thread",
  "race",
  "torch-fallback",
  "own-kernel-required",
  "fake-tensor",
  "below-floor",
  "timing-output-mismatch",
  "verdict-forged",
  "outputs-missing",
  "outputs-invalid",
  "no-record",
  "record-invalid",
  "recheck-error",
  "samples-missing",
  "samples-invalid",
  "launch-error",
  "compile-error",
  "load-error",
  "no-entry-point",
  "crash",
  "timeout",
  "error",
  "reference-error",
  "task-invalid",
  "degenerate-task",
  "no-gpu",
  "not-timed",
] as const;
export const reasonSchema = z.enum(REASONS);
export type Reason = z.infer<typeof reasonSchema>;

/**
 * The hack class (numbers from shared/notes/verification.md) each hack reason names: the
 * `hack` a record carries beside that reason. Hack 14 (tiny problems) is no rejection
 * (launch-bound configurations are timed and marked).
 */
export const HACK_CLASSES = {
  "output-memory-reuse": 1,
  "unwritten-output": 1,
  "input-mutation": 2,
  "side-stream": 3,
  "background-thread": 4,
  "fake-tensor": 5,
  "timer-patching": 6,
  "reduced-precision": 7,
  "degenerate-task": 8,
  "distribution-specific": 9,
  "shape-specific": 10,
  "result-caching": 11,
  "torch-fallback": 12,
  "launch-error": 13,
  race: 15,
  "below-floor": 16,
  "timing-output-mismatch": 11,
  // the judge (issue 16.1): the candidate's process tampered with the verification's record
  "verdict-forged": 6,
  "outputs-missing": 6,
  "outputs-invalid": 6,
  "no-record": 6,
  "record-invalid": 6,
} as const satisfies Partial<Record<Reason, number>>;

/** The table itself as a schema: exactly these reasons, each with its number. */
export const hackClassesSchema = z.strictObject(
  Object.fromEntries(
    Object.entries(HACK_CLASSES).map(([reason, hack]) => [reason, z.literal(hack)]),
  ) as { [K in keyof typeof HACK_CLASSES]: z.ZodLiteral<(typeof HACK_CLASSES)[K]> },
);
