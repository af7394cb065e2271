// A task's history, per configuration: its kernel's time at each merged pull request and
// each nightly run, beside eager PyTorch, torch.compile and the floor (the roofline), kept
// on the state branch `evokernel-state` (src/shared/nightly.ts) under `history/`: one JSON
// file per task (so no file nears the 1 MB past which GitHub's contents API returns no
// content), its chart as SVG beside it, and `index.html` linking them. `index.json` lists the
// tasks (for the page) and holds a pull request's timings until it is merged (a closed one
// is forgotten).
// Pure: what to keep, in what order, within which bounds; src/app/history.ts reads and writes.
import { z } from "zod";
import type { ReviewResult } from "./review.js";
import { STATE_BRANCH } from "./nightly.js";

export const HISTORY_FOLDER = "history";
export const INDEX_FILE = `${HISTORY_FOLDER}/index.json`;
export const PAGE_FILE = `${HISTORY_FOLDER}/index.html`;
/** Runs kept per task (oldest forgotten first): a year of nights and the merges between. */
export const MAX_ENTRIES = 500;
/** Pull requests whose timings wait for a merge (the least recently reviewed forgotten first). */
export const MAX_PENDING = 200;
/**
 * Bytes a state file may hold: GitHub's contents API returns a file's content up to 1 MB;
 * what is over it is trimmed, oldest first, with room to spare.
 */
export const MAX_FILE_BYTES = 900_000;

const ms = z.number().nonnegative();

export const historyConfigSchema = z.object({
  name: z.string(),
  kernelMs: ms,
  eagerMs: ms.nullable(),
  compileMs: ms.nullable(),
  floorMs: ms.nullable(),
});
export type HistoryConfig = z.infer<typeof historyConfigSchema>;

export const historyEntrySchema = z.object({
  /** pr: the timings of a pull request's head, recorded when it was merged. */
  kind: z.enum(["pr", "nightly"]),
  /** When: the merge, or the night's end (ISO time). */
  at: z.string(),
  /** The commit timed. */
  sha: z.string(),
  pr: z.number().int().positive().nullable(),
  gpu: z.string(),
  configs: z.array(historyConfigSchema),
});
export type HistoryEntry = z.infer<typeof historyEntrySchema>;

export const taskHistorySchema = z.object({
  schema: z.literal(1),
  task: z.string(),
  entries: z.array(historyEntrySchema),
});
export type TaskHistory = z.infer<typeof taskHistorySchema>;

const pendingPullSchema = z.object({
  pr: z.number().int().positive(),
  sha: z.string(),
  /** When the review finished. */
  at: z.string(),
  gpu: z.string(),
  tasks: z.array(z.object({ task: z.string(), configs: z.array(historyConfigSchema) })),
});
export type PendingPull = z.infer<typeof pendingPullSchema>;

const indexedTaskSchema = z.object({
  task: z.string(),
  runs: z.number().int().nonnegative(),
  /** The latest run's time (ISO). */
  latest: z.string().nullable(),
});
export type IndexedTask = z.infer<typeof indexedTaskSchema>;

export const historyIndexSchema = z.object({
  schema: z.literal(1),
  /** Every task with a history file. */
  tasks: z.array(indexedTaskSchema),
  /** Reviewed pull requests, open, their timings waiting for a merge. */
  pulls: z.array(pendingPullSchema),
});
export type HistoryIndex = z.infer<typeof historyIndexSchema>;

export const EMPTY_INDEX: HistoryIndex = { schema: 1, tasks: [], pulls: [] };

/** A file name for the task's path: readable, and unique by a hash of the whole path. */
export function historySlug(task: string): string {
  const readable = task
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^[-.]+|-+$/g, "")
    .slice(0, 80);
  return `${readable === "" ? "task" : readable}-${fnv1a(task)}`;
}

/** FNV-1a, 32 bits, as 8 hex digits: tells file names apart (no secret, no adversary). */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

export function historyPaths(task: string): { json: string; svg: string } {
  const slug = historySlug(task);
  return { json: `${HISTORY_FOLDER}/${slug}.json`, svg: `${HISTORY_FOLDER}/${slug}.svg` };
}

/**
 * Where a reader sees the task's chart: the SVG on the state branch, as github.com (or the
 * Enterprise Server at `web`) shows a file.
 */
export function chartUrl(
  repo: { owner: string; repo: string },
  task: string,
  web = "https://github.com",
): string {
  const path = historyPaths(task).svg;
  return `${web.replace(/\/+$/, "")}/${encodeURIComponent(repo.owner)}/${encodeURIComponent(repo.repo)}/blob/${STATE_BRANCH}/${path}`;
}

/** Each timed task's configurations as the history keeps them (its head kernel's medians). */
export function reviewTimings(review: ReviewResult): { task: string; configs: HistoryConfig[] }[] {
  return review.tasks.flatMap((task) => {
    if (task.status !== "passed") return [];
    const configs = task.timings.flatMap((config): HistoryConfig[] =>
      config.head === null
        ? []
        : [
            {
              name: config.name,
              kernelMs: config.head.medianMs,
              eagerMs: config.eager?.medianMs ?? null,
              compileMs: config.compile?.medianMs ?? null,
              floorMs: config.floorMs > 0 ? config.floorMs : null,
            },
          ],
    );
    return configs.length === 0 ? [] : [{ task: task.task.path, configs }];
  });
}

/**
 * The history with `entry` in it: the same run recorded again (a redelivery, a retried
 * write) replaces itself; in time order; at most MAX_ENTRIES and MAX_FILE_BYTES, the
 * oldest dropped first.
 */
export function addEntry(history: TaskHistory, entry: HistoryEntry): TaskHistory {
  const others = history.entries.filter(
    (old) => !(old.kind === entry.kind && old.sha === entry.sha && old.pr === entry.pr),
  );
  const entries = [...others, entry]
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
    .slice(-MAX_ENTRIES);
  return fit({ ...history, entries }, (kept, count) => ({
    ...kept,
    entries: kept.entries.slice(count),
  }));
}

/** The pull request's latest timings, waiting for its merge (an earlier review's replaced). */
export function addPending(index: HistoryIndex, pull: PendingPull): HistoryIndex {
  const pulls = [...index.pulls.filter((old) => old.pr !== pull.pr), pull].slice(-MAX_PENDING);
  return fit({ ...index, pulls }, (kept, count) => ({
    ...kept,
    pulls: kept.pulls.slice(count),
  }));
}

/** The pull request's waiting timings taken out (merged or closed). */
export function takePending(
  index: HistoryIndex,
  pr: number,
): { index: HistoryIndex; pull: PendingPull | undefined } {
  return {
    index: { ...index, pulls: index.pulls.filter((old) => old.pr !== pr) },
    pull: index.pulls.find((old) => old.pr === pr),
  };
}

/** The index after the task's history was written. */
export function indexTask(index: HistoryIndex, history: TaskHistory): HistoryIndex {
  const entry: IndexedTask = {
    task: history.task,
    runs: history.entries.length,
    latest: history.entries.at(-1)?.at ?? null,
  };
  const tasks = [...index.tasks.filter((old) => old.task !== history.task), entry].sort((a, b) =>
    a.task < b.task ? -1 : a.task > b.task ? 1 : 0,
  );
  return { ...index, tasks };
}

export function serializeHistory(value: TaskHistory | HistoryIndex): string {
  return `${JSON.stringify(value)}\n`;
}

/** Trims with `drop` until the serialized text fits MAX_FILE_BYTES (or nothing is left to drop). */
function fit<T extends TaskHistory | HistoryIndex>(
  value: T,
  drop: (value: T, count: number) => T,
): T {
  let kept = value;
  for (;;) {
    const bytes = Buffer.byteLength(serializeHistory(kept));
    const count = size(kept);
    if (bytes <= MAX_FILE_BYTES || count === 0) return kept;
    // as many as the excess holds on average (one at least): a few passes, not one per item
    kept = drop(kept, Math.max(1, Math.ceil((count * (bytes - MAX_FILE_BYTES)) / bytes)));
  }
}

function size(value: TaskHistory | HistoryIndex): number {
  return "entries" in value ? value.entries.length : value.pulls.length;
}

/** Stored text as a history; unreadable or foreign text starts afresh (with the reason). */
export function parseTaskHistory(
  task: string,
  text: string | undefined,
): { history: TaskHistory; error?: string } {
  const empty: TaskHistory = { schema: 1, task, entries: [] };
  const parsed = parseJson(taskHistorySchema, text);
  if (parsed.value === undefined || parsed.value.task !== task)
    return { history: empty, ...(parsed.error === undefined ? {} : { error: parsed.error }) };
  return { history: parsed.value };
}

export function parseHistoryIndex(text: string | undefined): {
  index: HistoryIndex;
  error?: string;
} {
  const parsed = parseJson(historyIndexSchema, text);
  return {
    index: parsed.value ?? EMPTY_INDEX,
    ...(parsed.error === undefined ? {} : { error: parsed.error }),
  };
}

function parseJson<T>(
  schema: z.ZodType<T>,
  text: string | undefined,
): { value?: T; error?: string } {
  if (text === undefined) return {};
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { error: `not JSON: ${(error as Error).message}` };
  }
  const parsed = schema.safeParse(data);
  return parsed.success
    ? { value: parsed.data }
    : { error: parsed.error.issues[0]?.message ?? "invalid" };
}
