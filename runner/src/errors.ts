// Failures of the infrastructure, as typed errors that carry their cause. A candidate that
// fails is a record (see harness/failed-records.ts), never one of these.
import type { z } from "zod";

export class EvokernelError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The command line asks for something that cannot be done as written (exit 2). */
export class UsageError extends EvokernelError {}

/** A task that does not load or does not validate (exit 1). */
export class TaskError extends EvokernelError {}

/** This machine lacks what the work needs: a CUDA GPU, a Python with torch (exit 3). */
export class EnvironmentError extends EvokernelError {}

/** The harness failed or wrote a record we cannot read (exit 4). */
export class HarnessError extends EvokernelError {
  readonly issues: readonly z.core.$ZodIssue[];
  readonly log: string;

  constructor(
    message: string,
    options: { cause?: unknown; issues?: readonly z.core.$ZodIssue[]; log?: string } = {},
  ) {
    super(message, { cause: options.cause });
    this.issues = options.issues ?? [];
    this.log = options.log ?? "";
  }
}

/**
 * A fork server that died again and again at its start, no answer between: it is not started
 * again. On several GPUs that lane's GPU is given up (gpu/lanes.ts) and its work goes to the
 * others; it is never a verdict on the candidate whose request found it down.
 */
export class ServerDownError extends HarnessError {}
