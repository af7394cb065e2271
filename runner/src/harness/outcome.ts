// How one harness run ended, whether it ran in its own process or in a fork-server child,
// and what that ending means for the record it was meant to write.
import type { HarnessCommand } from "#shared/contract/harness-request.js";
import type { Failure } from "./failed-records.js";

export type HarnessOutcome = {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  memKilled: boolean;
  seconds: number;
  /** Tail of the run's own output (never the record). */
  log: string;
};

/** Runs one harness command somewhere and says how it ended. */
export type HarnessRunner = (request: HarnessCommand, timeoutMs: number) => Promise<HarnessOutcome>;

/** The failure an ending stands for, or null when the run ended normally (exit 0). */
export function failureOf(outcome: HarnessOutcome, timeoutMs: number): Failure | null {
  const log = outcome.log;
  if (outcome.timedOut) {
    return { status: "timeout", message: `timed out after ${Math.round(timeoutMs / 1000)} s`, log };
  }
  if (outcome.memKilled) return { status: "crash", message: "killed: over the memory limit", log };
  if (outcome.signal !== null)
    return { status: "crash", message: `killed by ${outcome.signal}`, log };
  if (outcome.exitCode === null) return { status: "crash", message: "the process vanished", log };
  if (outcome.exitCode !== 0) {
    return { status: "error", message: `the harness failed (exit ${outcome.exitCode})`, log };
  }
  return null;
}
