// A corpus manifest: candidates with the verdict each must get (runner/corpus/manifest.json,
// runner/corpus/isolation/manifest.json). Shared by `evokernel selftest` and the GPU tests.
import { readFile } from "node:fs/promises";
import { z } from "zod";

export const corpusEntrySchema = z.object({
  file: z.string(),
  task: z.string(),
  format: z.enum(["evk", "torch-ext", "py"]).optional(),
  hack: z.number().int().min(1).max(16).nullable(),
  expect: z.enum(["pass", "reject"]),
  reasons: z.array(z.string()),
  check: z.enum(["verify", "bench"]),
});
export type CorpusEntry = z.infer<typeof corpusEntrySchema>;

export async function readManifest(path: string): Promise<CorpusEntry[]> {
  const text = await readFile(path, "utf8");
  const parsed = z.array(corpusEntrySchema).safeParse(JSON.parse(text));
  if (!parsed.success) {
    throw new Error(`${path}: not a corpus manifest: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

/** Did the candidate get what the manifest says it must? */
export function meetsExpectation(
  entry: CorpusEntry,
  result: { ok: boolean; reason: string | null },
): boolean {
  if (entry.expect === "pass") return result.ok;
  return !result.ok && result.reason !== null && entry.reasons.includes(result.reason);
}
