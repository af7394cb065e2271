// How one harness run ended, whether it ran in its own process or in a fork-server child,
// and what that ending means for the record it was meant to write. A failure always says
// what failed: the stage, the exception or signal, and the tail of the run's own output
// (size-capped, secrets redacted), never an exit code alone.
import { constants } from "node:os";
import type { HarnessCommand } from "#shared/contract/harness-request.js";
import { redactSecrets } from "#shared/redact.js";
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

/** What a failure keeps of the run's output: its last lines, at most this many characters. */
export const LOG_TAIL_CHARS = 4000;
const LOG_TAIL_LINES = 40;

/**
 * The failure an ending stands for, or null when the run ended normally (exit 0). `stage` is
 * what the run was doing ("static check", "verify", "build"…): it leads the message, so the one
 * line a comment or a progress line shows says which stage failed and why.
 */
export function failureOf(
  outcome: HarnessOutcome,
  timeoutMs: number,
  stage: string,
): Failure | null {
  const log = logTail(outcome.log);
  const cause = causeIn(log);
  const because = cause === null ? "" : `: ${cause}`;
  if (outcome.timedOut) {
    const seconds = Math.round(timeoutMs / 1000);
    return { status: "timeout", message: `${stage}: timed out after ${seconds} s${because}`, log };
  }
  if (outcome.memKilled) {
    return { status: "crash", message: `${stage}: killed: over the memory limit${because}`, log };
  }
  if (outcome.signal !== null) {
    const message = `${stage}: the harness was killed by ${signalName(outcome.signal)}${because}`;
    return { status: "crash", message, log };
  }
  if (outcome.exitCode === null) {
    return { status: "crash", message: `${stage}: the harness process vanished${because}`, log };
  }
  // Exit 3 with the harness's MemoryLimitError (an allocation past the command's memory limit),
  // FileSizeLimitError or ProcessLimitError (the sandbox's prlimit): limits.py, said as such,
  // reason `resources`.
  const limit = LIMIT_HIT.find((prefix) => cause?.startsWith(prefix) === true);
  if (outcome.exitCode === 3 && cause !== null && limit !== undefined) {
    const said = cause.slice(limit.length).trim();
    return { status: "error", reason: "resources", message: `${stage}: ${said}`, log };
  }
  if (outcome.exitCode !== 0) {
    const said = cause ?? lastLine(log) ?? "it printed nothing";
    return {
      status: "error",
      message: `${stage}: the harness failed (exit ${outcome.exitCode}): ${said}`,
      log,
    };
  }
  return null;
}

const LIMIT_HIT = ["MemoryLimitError:", "FileSizeLimitError:", "ProcessLimitError:"];

/** The end of a run's output as a failure keeps it: the last lines, capped, secrets redacted. */
export function logTail(log: string): string {
  const lines = redactSecrets(log).trimEnd().split("\n").slice(-LOG_TAIL_LINES).join("\n");
  return lines.length <= LOG_TAIL_CHARS ? lines : `…${lines.slice(-(LOG_TAIL_CHARS - 1))}`;
}

// A Python exception's last line ("PermissionError: [Errno 13] …", "torch.OutOfMemoryError: …"),
// or the sandbox's own word ("evokernel sandbox: cannot bind …").
const EXCEPTION =
  /^(?:[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Fault)\b.*|evokernel sandbox: .*)$/;

/** The exception (or the sandbox's complaint) the output ends with, or null. */
export function causeIn(log: string): string | null {
  const lines = log.split("\n").map((line) => line.trimEnd());
  for (let i = lines.length - 1; i >= 0; i -= 1) {
    const line = lines[i] ?? "";
    if (EXCEPTION.test(line)) return clipLine(line);
  }
  return null;
}

function lastLine(log: string): string | null {
  const lines = log.split("\n").filter((line) => line.trim() !== "");
  const last = lines.at(-1);
  return last === undefined ? null : `its last output: ${clipLine(last.trim())}`;
}

function clipLine(line: string): string {
  return line.length <= 300 ? line : `${line.slice(0, 299)}…`;
}

/** "SIGKILL (signal 9)" from "9" or "SIGKILL". */
export function signalName(signal: string): string {
  const signals = constants.signals as Record<string, number>;
  const number = /^\d+$/.test(signal) ? Number(signal) : signals[signal];
  const name = /^\d+$/.test(signal)
    ? Object.keys(signals).find((key) => signals[key] === number)
    : signal;
  if (name === undefined) return `signal ${signal}`;
  const hint =
    name === "SIGKILL"
      ? ", often the machine's out-of-memory killer"
      : name === "SIGXFSZ"
        ? ", a file past the sandbox's file-size limit, EVOKERNEL_SANDBOX_FSIZE"
        : "";
  return number === undefined ? name : `${name} (signal ${number}${hint})`;
}
