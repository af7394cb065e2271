// The verifier's reason codes in words a PR author reads without the docs; the code stays
// beside them (`mismatch`), for searching and for the docs. An unknown code (a newer
// harness) reads as a rejection with its code. The codes are the contract's
// (src/shared/contract/reasons.ts): a key that is none of them does not typecheck.
import type { Reason } from "../shared/contract/reasons.js";

const WORDS: Readonly<Partial<Record<Reason, string>>> = {
  mismatch: "its output differs from the reference",
  "reduced-precision": "it computes in lower precision than the task allows",
  "accuracy-loss": "it loses accuracy against the reference",
  "nan-output": "it writes NaN or Inf where the reference does not",
  "wrong-shape": "its output has the wrong shape",
  "wrong-dtype": "its output has the wrong dtype",
  "unwritten-output": "it leaves part of its output unwritten",
  "input-mutation": "it changes its inputs",
  "output-memory-reuse": "it hands back memory from an earlier call",
  "result-caching": "it returns cached results instead of computing them",
  "shape-specific": "it is right only on the shapes it was shown",
  "distribution-specific": "it is right only on the input values it was shown",
  "timer-patching": "it tampers with the timer",
  "side-stream": "it works on a CUDA stream the timer does not see",
  "background-thread": "it works in a background thread",
  "torch-fallback": "it calls PyTorch instead of running its own kernel",
  "own-kernel-required": "it is a PyTorch rewrite, and the task requires its own kernels",
  "fake-tensor": "it returns a tensor without computing it",
  "below-floor": "it reports a time below what the hardware allows",
  "timing-output-mismatch": "its output while timed differs from its checked output",
  "verdict-forged": "it tampers with the verification: its real outputs are wrong",
  "outputs-missing": "it tampers with the verification: it left no outputs to check",
  "outputs-invalid":
    "it tampers with the verification: the outputs it left are not what it computed",
  "no-record": "it ended its process without a record of its verification",
  "record-invalid": "it tampers with the verification: its record contradicts itself",
  "recheck-error": "the harness could not check its outputs",
  "samples-missing": "it tampers with the timing: it left no raw times to check",
  "samples-invalid": "it tampers with the timing: its raw times are not a timer's",
  "launch-error": "its kernel launch fails",
  "compile-error": "it does not compile",
  "load-error": "it does not load",
  "no-entry-point": "it has no entry point the task can call",
  crash: "it crashed",
  error: "the harness failed",
  timeout: "it ran out of time",
  "reference-error": "the task's reference fails",
  "task-invalid": "the task is invalid",
  "degenerate-task": "the task cannot tell a right kernel from a wrong one",
  "no-gpu": "no GPU was available",
  "not-timed": "it was not timed",
};

/** "its output differs from the reference", or null for a code we have no words for. */
export function reasonWords(code: string): string | null {
  return Object.hasOwn(WORDS, code) ? (WORDS[code as Reason] ?? null) : null;
}
