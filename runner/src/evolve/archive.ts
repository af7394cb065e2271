// The archive of a run: one JSON line per candidate, appended as each one finishes and
// parsed with zod when read back. It is the run's memory: a run that stops (budget, crash,
// Ctrl-C) resumes from it, rebuilding its population and its spent budget.
import { appendFile, mkdir, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { z } from "zod";
import { evoConfigSchema, spreadSchema, usageSchema } from "#shared/result.js";
import { UsageError } from "../errors.js";
import type { Evaluation, Individual, Usage } from "./types.js";

const configTimingSchema = z.object({
  config: z.string(),
  medianMs: spreadSchema.shape.medianMs,
  p20Ms: spreadSchema.shape.p20Ms,
  p80Ms: spreadSchema.shape.p80Ms,
  baselineMs: z.number().nonnegative(),
  baselineP20Ms: z.number().nonnegative(),
  baselineP80Ms: z.number().nonnegative(),
  launchBound: z.boolean().optional(),
  floorMs: z.number().positive().optional(),
});

export const evaluationSchema = z.object({
  ok: z.boolean(),
  stage: z.enum(["static", "compile", "quick", "verify", "time", "done"]),
  reason: z.string().nullable(),
  message: z.string(),
  timings: z.array(configTimingSchema),
  fitness: z.number().positive().nullable(),
  profile: z.string().nullable(),
  seconds: z.object({
    compile: z.number().nonnegative(),
    verify: z.number().nonnegative(),
    time: z.number().nonnegative(),
  }),
  gpu: z.string().optional(),
  timePhases: z.record(z.string(), z.number().nonnegative()).optional(),
  verifyPhases: z
    .object({
      quick: z.record(z.string(), z.number().nonnegative()).optional(),
      full: z.record(z.string(), z.number().nonnegative()).optional(),
    })
    .optional(),
  raced: z
    .object({
      config: z.string(),
      timed: z.array(z.string()),
      speedupUpper: z.number().nonnegative(),
      leaderLower: z.number().positive(),
    })
    .optional(),
}) satisfies z.ZodType<Evaluation>;

export const individualSchema = z.object({
  id: z.string(),
  hash: z.string(),
  source: z.string(),
  defines: z.record(z.string(), z.string()),
  /** Absent in archives written before the tuner searched nvcc flags. */
  flags: z.array(z.string()).default([]),
  parents: z.array(z.string()),
  insight: z.string(),
  proposer: z.string(),
  evaluation: evaluationSchema,
}) satisfies z.ZodType<Individual>;

export const archiveEntrySchema = z.object({
  v: z.literal(1),
  /** The run's settings, on every line: a resumed run must match them. */
  seed: z.number().int(),
  config: evoConfigSchema,
  /** Which proposal this is: generation 0 holds the baseline alone. */
  generation: z.number().int().nonnegative(),
  slot: z.number().int().nonnegative(),
  /** Seconds of search so far, over every run of this archive. */
  elapsedS: z.number().nonnegative(),
  at: z.string(),
  usage: usageSchema satisfies z.ZodType<Usage>,
  /** The candidate, or null when the proposer gave none (`failure` says why). */
  individual: individualSchema.nullable(),
  /** The id of an earlier candidate with the same fingerprint: not evaluated again. */
  duplicateOf: z.string().nullable(),
  failure: z.object({ reason: z.string(), message: z.string() }).nullable(),
});
export type ArchiveEntry = z.infer<typeof archiveEntrySchema>;

/** Refuses to resume an archive written by a run with another seed or configuration. */
export function assertResumable(
  entries: readonly ArchiveEntry[],
  run: { seed: number; config: ArchiveEntry["config"] },
): void {
  const foreign = entries.find((entry) => entry.seed !== run.seed || entry.config !== run.config);
  if (foreign === undefined) return;
  throw new UsageError(
    `the archive was written by a run with --seed ${foreign.seed} --config ${foreign.config}: ` +
      "resume with those, or pass another --archive",
  );
}

/** Where entries go: a JSONL file, or memory in tests. */
export type Archive = {
  load(): Promise<ArchiveEntry[]>;
  append(entry: ArchiveEntry): Promise<void>;
};

export function memoryArchive(entries: ArchiveEntry[] = []): Archive & { entries: ArchiveEntry[] } {
  return {
    entries,
    load: () => Promise.resolve(entries.map((entry) => structuredClone(entry))),
    append(entry) {
      entries.push(structuredClone(entry));
      return Promise.resolve();
    },
  };
}

export function fileArchive(path: string): Archive {
  // Appends one at a time, in the order asked for: lines never interleave.
  let last: Promise<void> = Promise.resolve();
  return {
    load: () => readArchive(path),
    append(entry) {
      const line = `${JSON.stringify(entry)}\n`;
      last = last.then(async () => {
        await mkdir(dirname(path), { recursive: true });
        await appendFile(path, line, "utf8");
      });
      return last;
    },
  };
}

/** The entries of an archive file ([] when there is none). */
export async function readArchive(path: string): Promise<ArchiveEntry[]> {
  const text = await readFile(path, "utf8").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return "";
    throw error;
  });
  return parseArchive(text, path);
}

export function parseArchive(text: string, path: string): ArchiveEntry[] {
  const lines = text.split("\n");
  // A run killed while writing leaves its last line cut short, without a newline: that
  // candidate is simply run again. Anything else unreadable is not ours to guess at.
  const torn = !text.endsWith("\n") && text !== "" ? lines.length - 1 : -1;
  const entries: ArchiveEntry[] = [];
  for (const [index, line] of lines.entries()) {
    if (line.trim() === "") continue;
    const parsed = parseLine(line);
    if (parsed.success) entries.push(parsed.data);
    else if (index !== torn) {
      throw new UsageError(
        `${path} line ${index + 1} is not an archive entry (${parsed.error}): ` +
          "move the file away, or pass another --archive",
      );
    }
  }
  return entries;
}

function parseLine(
  line: string,
): { success: true; data: ArchiveEntry } | { success: false; error: string } {
  let data: unknown;
  try {
    data = JSON.parse(line);
  } catch {
    return { success: false, error: "not JSON" };
  }
  const parsed = archiveEntrySchema.safeParse(data);
  if (parsed.success) return { success: true, data: parsed.data };
  return { success: false, error: z.prettifyError(parsed.error).replace(/\n/g, "; ") };
}
