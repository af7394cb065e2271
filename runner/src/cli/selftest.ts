// evokernel selftest: run the adversarial corpus on this GPU and check every verdict. It
// proves the verifier on a new runner, and measures how many candidates a minute it takes.
import { dirname, join, relative, resolve } from "node:path";
import { EnvironmentError, UsageError } from "../errors.js";
import { runCascade, type CandidateResult } from "../cascade.js";
import {
  meetsExpectation,
  readManifest,
  resolveCorpusPath,
  sharedDataDir,
  type CorpusEntry,
} from "../corpus/manifest.js";
import { repoRoot } from "../paths.js";
import { taskFolder } from "#shared/task-id.js";
import { renderSelftest, type SelftestRow } from "../render/selftest-table.js";
import { flag, printJson, stringOption, stringsOption, type Command } from "./command.js";
import { createProgress } from "./progress.js";
import { createResources } from "../build/resources.js";
import { requireGpu, withSession } from "../pipeline/session.js";
import { allowRead } from "../sandbox/sandbox.js";
import type { TaskRef } from "../harness/client.js";
import { existsNow } from "../workspace/files.js";
import { loadTarget, taskRef } from "../workspace/target.js";

const DEFAULT_MANIFESTS = ["runner/corpus/manifest.json", "runner/corpus/isolation/manifest.json"];

export const selftestCommand: Command = {
  name: "selftest",
  usage: `usage: evokernel selftest [--manifest FILE]… [--timeout S] [--json]

Builds every candidate of the corpus in parallel, verifies (and where the manifest says,
times) each on the GPU one at a time, and checks each verdict against the manifest.
Prints per candidate the compile, verify and timing seconds, and candidates per minute.

  -m, --manifest F   a corpus manifest (default: runner/corpus/manifest.json and
                     runner/corpus/isolation/manifest.json)
      --timeout S    limit for one candidate's verification, seconds (default 30)
      --json         print one JSON document

exit: 0 every verdict as expected, 1 a verdict missed, 2 usage, 3 no GPU, 4 internal error`,
  options: {
    manifest: { type: "string", short: "m", multiple: true },
    timeout: { type: "string" },
    json: { type: "boolean" },
  },
  async run(parsed, io) {
    const root = repoRoot();
    const manifests = stringsOption(parsed, "manifest");
    const timeoutText = stringOption(parsed, "timeout") ?? "30";
    const timeoutS = Number(timeoutText);
    if (!(timeoutS > 0))
      throw new UsageError(`--timeout is a number of seconds, not ${timeoutText}`);
    const entries: CorpusEntry[] = [];
    // yours from where you are; the built-in ones from the repository
    const paths = manifests.length
      ? manifests.map((path) => resolve(io.cwd, path))
      : DEFAULT_MANIFESTS.map((path) => join(root, path));
    for (const path of paths) {
      const read = await readManifest(path).catch((error: unknown) => {
        throw new UsageError(error instanceof Error ? error.message : String(error));
      });
      entries.push(...read);
    }
    // entries whose public data (shared:…) is not on this machine are skipped, said, and
    // listed: a release tree, the runner image and a fresh clone carry none of it, and every
    // hack class has entries of its own besides (test/runner/cli/verify-manifest.test.ts)
    const { entries: present, skipped } = presentEntries(entries, root);
    if (present.length === 0) requireTasksHere(skipped, root);
    if (skipped.length > 0) {
      io.stderr(
        `selftest: skipping ${skipped.length} entr${skipped.length === 1 ? "y" : "ies"} whose task is not on this ` +
          `machine (${skipped.map((entry) => entry.task).join(", ")}): public data read under ` +
          `${sharedDataDir(root)} (EVOKERNEL_SHARED_DATA); every hack class is still checked by other entries\n`,
      );
    }
    entries.splice(0, entries.length, ...present);
    // each task read once and, with the candidates' folders, shown to the sandbox before the
    // fork server starts (it sees only what was allowed then); a task the runner cannot load
    // goes to the harness as a path, whose record says why
    const taskPaths = [...new Set(entries.map((entry) => resolveCorpusPath(entry.task, root)))];
    const tasks = new Map<string, TaskRef>(
      await Promise.all(
        taskPaths.map(
          async (path) => [path, await loadTarget(path, root).then(taskRef, () => path)] as const,
        ),
      ),
    );
    for (const entry of entries) allowRead(dirname(resolveCorpusPath(entry.file, root)));
    return withSession(
      async function selftestWithServer(session) {
        requireGpu(session);
        const { pool, gpu } = createResources();
        const started = performance.now();
        // one cascade per (task, check, time limit); all share the pool and the GPU queue, so
        // every build starts at once and the GPU never waits for a compile it could skip
        const groups = new Map<string, CorpusEntry[]>();
        const limitOf = (entry: CorpusEntry) => Math.max(timeoutS, entry.timeoutS ?? 0);
        for (const entry of entries) {
          const key = `${entry.task}\n${entry.check}\n${limitOf(entry)}`;
          groups.set(key, [...(groups.get(key) ?? []), entry]);
        }
        const results = new Map<CorpusEntry, CandidateResult>();
        await Promise.all(
          [...groups.values()].map(async function evaluateGroup(group) {
            const first = group[0];
            if (first === undefined) return;
            const path = resolveCorpusPath(first.task, root);
            const evaluated = await runCascade(
              tasks.get(path) ?? path,
              group.map((entry) => resolveCorpusPath(entry.file, root)),
              {
                server: session.server,
                pool,
                gpu,
                heldout: true,
                knownDevice: session.device.device,
                timeouts: { verifyMs: limitOf(first) * 1000, benchMs: 10 * limitOf(first) * 1000 },
                // hacks 14 and 16 show against eager and the floor: no torch.compile warm-up
                ...(first.check === "bench" ? { bench: { compile: false } } : {}),
                onEvent: createProgress(io),
              },
            );
            group.forEach((entry, i) => {
              const result = evaluated[i];
              if (result !== undefined) results.set(entry, result);
            });
          }),
        );
        const wallS = (performance.now() - started) / 1000;
        const rows: SelftestRow[] = entries.map((entry) => {
          const result = results.get(entry);
          return {
            file: relative(root, join(root, entry.file)),
            hack: entry.hack,
            expect: entry.expect,
            reasons: entry.reasons,
            got: result ? { ok: result.ok, status: result.status, reason: result.reason } : null,
            met: result !== undefined && meetsExpectation(entry, result),
            seconds: result?.seconds ?? { compile: 0, verify: 0, time: 0, total: 0 },
            message: result?.message ?? "not evaluated",
            ...(result === undefined ? {} : { detail: detailOf(result) }),
          };
        });
        const summary = {
          candidates: rows.length,
          met: rows.filter((row) => row.met).length,
          skipped: skipped.map((entry) => entry.file),
          wallSeconds: wallS,
          candidatesPerMinute: rows.length / (wallS / 60),
        };
        if (flag(parsed, "json")) printJson(io, { device: session.device, summary, rows });
        else io.stdout(`${renderSelftest(rows, summary)}\n`);
        return summary.met === summary.candidates ? 0 : 1;
      },
      { needGpu: true, say: (line) => io.stderr(`${line}\n`) },
    );
  },
};

/** The entries whose task is on this machine, and those skipped because it is not. */
export function presentEntries(
  entries: readonly CorpusEntry[],
  root: string,
): { entries: CorpusEntry[]; skipped: CorpusEntry[] } {
  const here = (entry: CorpusEntry) => existsNow(taskFolder(resolveCorpusPath(entry.task, root)));
  return { entries: entries.filter(here), skipped: entries.filter((entry) => !here(entry)) };
}

/**
 * No task the manifests name is on this machine: exit 3 with the ones missing and
 * where `shared:` tasks are looked for (on the H100, 2026-11-26, a run without the public
 * data gave its KernelBench entries "the harness failed (exit 4)" and nothing more).
 */
function requireTasksHere(skipped: readonly CorpusEntry[], root: string): void {
  const missing = [...new Set(skipped.map((entry) => resolveCorpusPath(entry.task, root)))];
  if (missing.length === 0) return;
  const shown = missing.slice(0, 3).map((path) => relative(root, path) || path);
  throw new EnvironmentError(
    `${missing.length} of the manifests' tasks ${missing.length === 1 ? "is" : "are"} not on this machine ` +
      `(${shown.join(", ")}${missing.length > shown.length ? ", …" : ""}): tasks named shared:… are read ` +
      `under ${sharedDataDir(root)}; set EVOKERNEL_SHARED_DATA to the folder that holds kernelbench/ and robust-kbench/`,
  );
}

/** What a reader of --json needs to see that a kernel passed for the right reasons. */
function detailOf(result: CandidateResult): NonNullable<SelftestRow["detail"]> {
  const own = result.verify?.checks.find((check) => check.name === "own-kernel-ran");
  return {
    ownKernel: own?.detail ?? null,
    kernelShares: result.verify?.kernelShares ?? null,
    bench: (result.bench?.configs ?? []).map((config) => ({
      name: config.name,
      launchBound: config.launchBound,
      candidateMs: config.candidate?.medianMs ?? null,
      eagerMs: config.eager?.medianMs ?? null,
      floorMs: config.floorMs,
    })),
    notes: result.bench?.notes ?? [],
  };
}
