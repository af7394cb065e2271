// What the app accepts from outside before it holds it: webhook bodies, result artifacts and
// config files are checked against these caps while they stream in, so the app's memory
// does not depend on what a pull request or a run sends. GitHub's own output limits are in
// limits.ts.

/** GitHub caps webhook payloads at 25 MB; anything larger is not from GitHub. */
export const WEBHOOK_BODY_LIMIT = 25 * 1024 * 1024;

/**
 * A string value in a webhook body longer than this (escaped bytes) is emptied as the body
 * streams in: nothing the app reads comes near it (GitHub caps PR and comment bodies at
 * 65,536 characters, at most 384 KiB escaped), and the body's size then costs no memory.
 */
export const WEBHOOK_STRING_LIMIT = 1024 * 1024;

/**
 * Bytes of webhook bodies being read at once, across all requests: the 26th concurrent 25 MB
 * body waits for the socket's turn (TCP back-pressure) instead of adding to the heap.
 */
export const WEBHOOK_BODIES_IN_FLIGHT = 64 * 1024 * 1024;

/**
 * The result artifact: a zip holding one JSON file (action/action.yml uploads it). A real
 * result is a few hundred KB; these caps leave room for a large optimize and refuse a bomb.
 */
export interface ZipLimits {
  readonly zipBytes: number;
  readonly entries: number;
  readonly entryBytes: number;
  readonly totalBytes: number;
  readonly ratio: number;
}

export const ARTIFACT_LIMITS: ZipLimits = {
  /** The zip as listed and as downloaded. */
  zipBytes: 32 * 1024 * 1024,
  entries: 64,
  entryBytes: 32 * 1024 * 1024,
  totalBytes: 64 * 1024 * 1024,
  /** Inflated bytes per compressed byte, checked once 1 MiB has been inflated. */
  ratio: 200,
};

/** `.github/evokernel.yml`: a real one is under 2 KB; YAML parsing time grows with size. */
export const CONFIG_FILE_LIMIT = 16 * 1024;
