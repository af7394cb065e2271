// The fork server's protocol (docs/DESIGN.md, "The fork server"), declared once: one JSON
// line per request on the server's stdin, JSON lines back on its stdout. The runner writes
// requests and parses answers with these schemas (runner/src/harness/fork-server.ts); the
// harness's tests hold server.py to the generated JSON Schemas.
import { z } from "zod";

/** One harness command to run in a forked child, and its deadline. */
export const harnessRequestSchema = z.strictObject({
  id: z.string(),
  argv: z.array(z.string()),
  timeoutS: z.number().nonnegative(),
});
export type HarnessRequest = z.infer<typeof harnessRequestSchema>;

/** How the child ended. */
export const harnessResponseSchema = z.object({
  id: z.string(),
  exit: z.number().int().nullable(),
  signal: z.union([z.string(), z.number()]).nullable(),
  seconds: z.number(),
  timedOut: z.boolean(),
  memKilled: z.boolean(),
  log: z.string(),
});
export type HarnessResponse = z.infer<typeof harnessResponseSchema>;

// Sent before the answer: the server waits for the GPU's machine-wide lock (another process's
// GPU work) before it starts the child, and says when the request's deadline starts.
export const harnessStartedSchema = z.object({ id: z.string(), started: z.literal(true) });
export const harnessWaitingSchema = z.object({ id: z.string(), waiting: z.literal(true) });
