// Records for candidates whose harness run ended without a readable record (timeout, crash,
// a record that does not parse). A candidate failure stays data, and never reads as a pass.
import type {
  BenchRecord,
  BuildRecord,
  Device,
  StaticRecord,
  VerifyRecord,
  VerifyStatus,
} from "#shared/contract/records.js";

export type Failure = {
  status: Exclude<VerifyStatus, "passed" | "rejected" | "compile-error">;
  message: string;
  log: string;
  /** The record's reason where not the status: `resources` for a command over its memory limit. */
  reason?: string;
};

/** Stands in for the device when the run that would have described it never finished. */
export const UNKNOWN_DEVICE: Device = {
  name: "unknown",
  backend: "cpu",
  driver: null,
  torch: "",
  cuda: null,
  sms: null,
  l2Bytes: null,
  smClockMHz: null,
  python: "",
};

const FAILURE_STATUSES: readonly Failure["status"][] = ["timeout", "crash", "error"];

/** The failure a static record stands in for (see failedStatic), or null for a real check. */
export function staticFailure(record: StaticRecord): Failure["status"] | null {
  const code = record.findings[0]?.code;
  return FAILURE_STATUSES.find((status) => code === `harness-${status}`) ?? null;
}

/**
 * A static check that never ran: one finding, coded harness-<status>, whose message is the
 * failure's (stage and cause on its first line) with the run's output tail below it.
 */
export function failedStatic(failure: Failure): StaticRecord {
  return {
    schema: 1,
    kind: "static",
    ok: false,
    format: "unknown",
    findings: [
      {
        code: `harness-${failure.status}`,
        hack: null,
        line: 0,
        text: "",
        message: joinLog(failure),
        severity: "reject",
      },
    ],
  };
}

export function failedBuild(failure: Failure, hash = ""): BuildRecord {
  return {
    schema: 1,
    kind: "build",
    ok: false,
    // A build that never reported has no format; py is the one that needs no artifact.
    format: "py",
    artifact: null,
    cached: false,
    seconds: 0,
    hash,
    log: joinLog(failure),
  };
}

export function failedVerify(
  failure: Failure | { status: "compile-error"; message: string; log: string },
  where: { task: string; candidate: string; device?: Device; seed?: number },
): VerifyRecord {
  return {
    schema: 1,
    kind: "verify",
    task: where.task,
    candidate: where.candidate,
    format: "unknown",
    ok: false,
    status: failure.status,
    reason: ("reason" in failure ? failure.reason : undefined) ?? failure.status,
    hack: null,
    message: joinLog(failure),
    mismatch: null,
    configs: [],
    checks: [],
    warnings: [],
    seconds: { load: 0, verify: 0 },
    phases: {},
    device: where.device ?? UNKNOWN_DEVICE,
    seed: where.seed ?? null,
    kernelShares: null,
    libraryKernels: [],
  };
}

export function failedBench(
  failure: Failure,
  where: { task: string; device?: Device },
): BenchRecord {
  return {
    schema: 1,
    kind: "bench",
    task: where.task,
    ok: false,
    reason: failure.reason ?? failure.status,
    message: joinLog(failure),
    device: where.device ?? UNKNOWN_DEVICE,
    ceilings: null,
    seed: null,
    configs: [],
    notes: [],
    profile: null,
    phases: {},
    probeCache: null,
    race: null,
    seconds: 0,
  };
}

function joinLog(failure: { message: string; log: string }): string {
  return failure.log.trim() === ""
    ? failure.message
    : `${failure.message}\n${failure.log.trimEnd()}`;
}
