// A corpus manifest: candidates with the verdict each must get (runner/corpus/manifest.json,
// runner/corpus/isolation/manifest.json, runner/corpus/correct/manifest.json). Shared by
// `evokernel selftest` and the GPU tests.
import { dirname, isAbsolute, join, resolve } from "node:path";
import { z } from "zod";
import { candidateFormatSchema } from "#shared/contract/formats.js";
import { readText } from "../workspace/files.js";

export const corpusEntrySchema = z.object({
  file: z.string(),
  task: z.string(),
  format: candidateFormatSchema.optional(),
  hack: z.number().int().min(1).max(16).nullable(),
  expect: z.enum(["pass", "reject"]),
  reasons: z.array(z.string()),
  check: z.enum(["verify", "bench"]),
  /**
   * With check "bench": every timed configuration must be marked launch-bound (hack 14: a
   * task too small to time is timed and marked, never a win's headline).
   */
  launchBound: z.boolean().optional(),
  /**
   * Seconds its verification may take where more than selftest's --timeout: a candidate whose
   * own code compiles as it loads (load_inline in the verification: 24-30 s on the H100).
   */
  timeoutS: z.number().positive().max(3600).optional(),
});
export type CorpusEntry = z.infer<typeof corpusEntrySchema>;

export async function readManifest(path: string): Promise<CorpusEntry[]> {
  const text = await readText(path);
  const parsed = z.array(corpusEntrySchema).safeParse(JSON.parse(text));
  if (!parsed.success) {
    throw new Error(`${path}: not a corpus manifest: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

/** What `verify --manifest` needs of an entry: its file and its task; other keys are ignored. */
export const candidateEntrySchema = z.looseObject({ file: z.string(), task: z.string() });
export type CandidateEntry = z.infer<typeof candidateEntrySchema>;

/** A list of {file, task} entries: a corpus manifest, or any list naming only those two. */
export async function readCandidateList(path: string): Promise<CandidateEntry[]> {
  const text = await readText(path);
  const parsed = z.array(candidateEntrySchema).safeParse(JSON.parse(text));
  if (!parsed.success) {
    throw new Error(
      `${path}: not a list of {"file", "task"} entries: ${z.prettifyError(parsed.error)}`,
    );
  }
  return parsed.data;
}

/** Did the candidate get what the manifest says it must? */
export function meetsExpectation(
  entry: CorpusEntry,
  result: {
    ok: boolean;
    reason: string | null;
    bench?: { configs: readonly { launchBound: boolean }[] } | null;
  },
): boolean {
  if (entry.expect === "pass" && entry.launchBound === true) {
    const configs = result.bench?.configs ?? [];
    return result.ok && configs.length > 0 && configs.every((config) => config.launchBound);
  }
  if (entry.expect === "pass") return result.ok;
  return !result.ok && result.reason !== null && entry.reasons.includes(result.reason);
}

/** Where public task data lives: $EVOKERNEL_SHARED_DATA, else <root>/../shared/data. */
export function sharedDataDir(root: string, env: NodeJS.ProcessEnv = process.env): string {
  return env["EVOKERNEL_SHARED_DATA"] ?? join(dirname(resolve(root)), "shared", "data");
}

/**
 * A manifest's task or file path on this machine. `shared:REST` is REST under the shared
 * data folder (robust-kbench folders, KernelBench problems: public data that is never
 * copied into the repository); an absolute path stays; anything else is relative to the
 * repository root. A `#backward` suffix (a robust-kbench backward task) is kept.
 */
export function resolveCorpusPath(
  path: string,
  root: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  if (path.startsWith("shared:"))
    return join(sharedDataDir(root, env), path.slice("shared:".length));
  return isAbsolute(path) ? path : resolve(root, path);
}
