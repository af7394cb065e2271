// evokernel verify: the full cascade for each candidate of one task, or of every task of a
// manifest (--manifest): all builds start at once on the machine's build pool, the GPU
// takes one candidate at a time.
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { readCandidateList } from "../corpus/manifest.js";
import { EnvironmentError, UsageError } from "../errors.js";
import { runCascade, type CandidateResult, type CascadeOptions } from "../cascade.js";
import { repoRoot } from "../paths.js";
import { renderCandidates } from "../render/candidates.js";
import { renderStatic } from "../render/verify-table.js";
import {
  configsOption,
  flag,
  printJson,
  seedOption,
  stringOption,
  stringsOption,
  type Command,
  type Io,
} from "./command.js";
import { createProgress } from "./progress.js";
import { verifyReproduction } from "./reproduce.js";
import { createResources } from "../build/resources.js";
import { NO_GPU, withSession, type Session } from "../pipeline/session.js";
import { candidatesFor, loadTarget, taskRef, type Target } from "../workspace/target.js";

export const verifyCommand: Command = {
  name: "verify",
  usage: `usage: evokernel verify <task> [--candidate FILE]… [--heldout] [--device cpu|cuda] [--seed N] [--config NAME]… [--json]
       evokernel verify --manifest FILE… [--heldout] [--device cpu|cuda] [--seed N] [--json]

Runs each candidate through the static check, the build, and verification on every
configuration of the task. Without --candidate, verifies the task's own kernel.
With --manifest, verifies every candidate of a corpus manifest, whatever its task, in
one run: every build starts at once (the machine's build pool bounds the compilers), the
GPU verifies one candidate at a time, and a line per candidate says how it ended.

  <task>              a task folder, a KernelBench .py file, or a name under ./kernels
  -c, --candidate F   a candidate file (.cu or .py); repeat for several
  -m, --manifest F    a JSON list of {"file", "task"} entries (a corpus manifest, e.g.
                      runner/corpus/manifest.json; other keys are ignored); paths are
                      relative to the repository root, or absolute, or shared:REST for
                      $EVOKERNEL_SHARED_DATA/REST; repeat for several
      --heldout       also verify the held-out configurations
      --device D      cuda (default) or cpu (py candidates only; no GPU needed): a CPU
                      pass is a CPU check only, not a verdict (whose kernels did the
                      work, streams and timing are checked on a GPU only); a CUDA
                      candidate (.cu) is checked and built, then exit 3
      --seed N        seed for the inputs: the same seed gives the same inputs (a
                      verdict's reproduction line gives the run's)
      --config NAME   only this configuration (held-out ones too); repeat for several;
                      with the same --seed each gets the inputs it had in the full run
      --json          print one JSON document: { task, device, candidates }, or with
                      --manifest { device, summary, tasks: [{ task, candidates }] }

exit: 0 all passed (with --device cpu: CPU check only, not a verdict), 1 a candidate
      rejected or the task invalid, 2 usage, 3 no GPU or no Python with torch (the static
      check still runs), or --device cpu on a CUDA candidate (the static check and the
      build still run), 4 internal error`,
  options: {
    candidate: { type: "string", short: "c", multiple: true },
    manifest: { type: "string", short: "m", multiple: true },
    heldout: { type: "boolean" },
    device: { type: "string" },
    seed: { type: "string" },
    config: { type: "string", multiple: true },
    json: { type: "boolean" },
  },
  async run(parsed, io) {
    const deviceChoice = stringOption(parsed, "device") ?? "cuda";
    if (deviceChoice !== "cuda" && deviceChoice !== "cpu") {
      throw new UsageError(`--device is cuda or cpu, not ${deviceChoice}`);
    }
    const device: "cuda" | "cpu" = deviceChoice;
    const seed = seedOption(parsed);
    const configs = configsOption(parsed);
    const common: CascadeOptions = {
      device: deviceChoice,
      heldout: flag(parsed, "heldout"),
      ...(seed === undefined ? {} : { seed }),
      ...(configs.length === 0 ? {} : { configs }),
    };
    const manifests = stringsOption(parsed, "manifest");
    if (manifests.length > 0)
      return verifyManifests(manifests, parsed.positionals, common, {
        candidates: stringsOption(parsed, "candidate"),
        json: flag(parsed, "json"),
        io,
      });
    const target = await loadTarget(parsed.positionals[0], io.cwd);
    const candidates = await candidatesFor(target, stringsOption(parsed, "candidate"), io.cwd);
    const json = flag(parsed, "json");

    return withSession(
      async function verifyWithServer(session) {
        const noGpu = deviceChoice === "cuda" && !session.device.cuda;
        const results = await runCascade(taskRef(target), candidates, {
          ...common,
          staticOnly: noGpu,
          knownDevice: session.device.device,
          server: session.server,
          onEvent: createProgress(io),
        });
        const task = parsed.positionals[0] ?? target.task.path;
        const run = { cwd: io.cwd, configs, device };
        const document = {
          task: target.task,
          device: session.device,
          // each verdict with the line that reproduces it (the seed the harness chose)
          candidates: results.map((result) => ({
            ...result,
            reproduce: verifyReproduction(task, result, run),
          })),
        };
        if (noGpu) {
          if (json) printJson(io, { ...document, error: { exitCode: 3, message: NO_GPU } });
          else
            io.stdout(
              `${results.map((result) => renderStatic(result.candidate, result.static)).join("\n")}\n`,
            );
          if (json) return 3;
          throw new EnvironmentError(NO_GPU);
        }
        if (deviceChoice === "cpu") return finishOnCpu(results, document, json, io);
        if (json) printJson(io, document);
        else io.stdout(`${renderCandidates(results)}\n`);
        return results.every((result) => result.ok) ? 0 : 1;
      },
      { say: (line) => io.stderr(`${line}\n`) },
    );
  },
};

/** What a pass on the CPU is: the outputs were right there, nothing more. */
export const CPU_CHECK_ONLY =
  "CPU check only, not a verdict: the outputs were compared on the CPU; whose kernels did " +
  "the work, the streams and the timing are checked on a GPU only";

/** The candidates --device cpu could not verify at all: CUDA candidates (the harness's no-gpu). */
export function noVerdictOnCpu(results: readonly CandidateResult[]): CandidateResult[] {
  return results.filter((result) => result.reason === "no-gpu");
}

/**
 * --device cpu's ending: a CPU check is never a verdict, so the document says so; a candidate
 * rejected is exit 1, a CUDA candidate (checked and built, never run) exit 3, else 0.
 */
function finishOnCpu(
  results: readonly CandidateResult[],
  document: Record<string, unknown>,
  json: boolean,
  io: Io,
  text: () => string = () => renderCandidates(results),
): number {
  const rejected = results.some((result) => !result.ok && result.reason !== "no-gpu");
  const unverified = noVerdictOnCpu(results);
  const message =
    unverified.length === 0
      ? null
      : `--device cpu: ${unverified.length} CUDA candidate${unverified.length === 1 ? "" : "s"} ` +
        "checked and built but not run, no verdict (a CUDA candidate runs on a GPU only): " +
        unverified.map((result) => result.candidate).join(", ");
  const code = rejected ? 1 : message !== null ? 3 : 0;
  if (json) {
    printJson(io, {
      ...document,
      cpuCheck: CPU_CHECK_ONLY,
      ...(message !== null && code === 3 ? { error: { exitCode: 3, message } } : {}),
    });
    return code;
  }
  const passed = results.some((result) => result.ok);
  io.stdout(`${text()}\n${passed ? `\n${CPU_CHECK_ONLY}\n` : ""}`);
  if (code === 3 && message !== null) throw new EnvironmentError(message);
  if (message !== null) io.stderr(`${message}\n`);
  return code;
}

type ManifestRun = { candidates: readonly string[]; json: boolean; io: Io };

/** A manifest path: absolute, shared:REST under $EVOKERNEL_SHARED_DATA, else from the root. */
export function manifestPath(path: string, root: string, env = process.env): string {
  if (path.startsWith("shared:")) {
    const data = env["EVOKERNEL_SHARED_DATA"] ?? join(dirname(root), "shared", "data");
    return join(data, path.slice("shared:".length));
  }
  return isAbsolute(path) ? path : resolve(root, path);
}

async function verifyManifests(
  manifests: readonly string[],
  positionals: readonly string[],
  common: CascadeOptions,
  run: ManifestRun,
): Promise<number> {
  if (positionals.length > 0 || run.candidates.length > 0)
    throw new UsageError(
      "--manifest names the tasks and candidates: give no <task> or --candidate",
    );
  const root = repoRoot();
  // task → its candidates, in manifest order; every file checked before anything starts
  const byTask = new Map<string, string[]>();
  for (const manifest of manifests) {
    const entries = await readCandidateList(resolve(run.io.cwd, manifest)).catch(
      (error: unknown) => {
        throw new UsageError(error instanceof Error ? error.message : String(error));
      },
    );
    for (const entry of entries) {
      const task = manifestPath(entry.task, root);
      byTask.set(task, [...(byTask.get(task) ?? []), manifestPath(entry.file, root)]);
    }
  }
  const groups: { target: Target; candidates: string[] }[] = [];
  for (const [task, files] of byTask) {
    const target = await loadTarget(task, run.io.cwd);
    groups.push({ target, candidates: await candidatesFor(target, files, run.io.cwd) });
  }
  const total = groups.reduce((sum, group) => sum + group.candidates.length, 0);

  return withSession(async function verifyManifestWithServer(session: Session) {
    const noGpu = common.device !== "cpu" && !session.device.cuda;
    const shared: CascadeOptions = {
      ...common,
      staticOnly: noGpu,
      knownDevice: session.device.device,
      server: session.server,
      // one build pool, GPU queue and static-check limit for every candidate of the command
      ...createResources(),
      onEvent: createProgress(run.io),
    };
    const started = performance.now();
    let done = 0;
    // one cascade per candidate, all at once: each reports as it ends
    const tasks = await Promise.all(
      groups.map(async function verifyGroup({ target, candidates }) {
        const results = await Promise.all(
          candidates.map(async function verifyOne(candidate): Promise<CandidateResult> {
            const [result] = await runCascade(taskRef(target), [candidate], shared);
            if (result === undefined) throw new Error(`no result for ${candidate}`);
            done += 1;
            run.io.stderr(`${candidateLine(done, total, root, result)}\n`);
            return result;
          }),
        );
        return { task: target.task, candidates: results };
      }),
    );
    const wallSeconds = (performance.now() - started) / 1000;
    const results = tasks.flatMap((task) => task.candidates);
    const summary = {
      tasks: tasks.length,
      candidates: results.length,
      passed: results.filter((result) => result.ok).length,
      wallSeconds,
      candidatesPerMinute: results.length / (wallSeconds / 60),
    };
    const document = { device: session.device, summary, tasks };
    if (noGpu) {
      if (run.json) {
        printJson(run.io, { ...document, error: { exitCode: 3, message: NO_GPU } });
        return 3;
      }
      run.io.stdout(
        `${results.map((result) => renderStatic(result.candidate, result.static)).join("\n")}\n`,
      );
      throw new EnvironmentError(NO_GPU);
    }
    const text = () => {
      const sections = tasks.map(
        (task) => `## ${task.task.name}\n${renderCandidates(task.candidates)}`,
      );
      return (
        `${sections.join("\n\n")}\n\n${summary.passed}/${summary.candidates} passed, ` +
        `${summary.tasks} tasks, ${wallSeconds.toFixed(1)} s, ` +
        `${summary.candidatesPerMinute.toFixed(1)} candidates/min`
      );
    };
    if (common.device === "cpu") return finishOnCpu(results, document, run.json, run.io, text);
    if (run.json) printJson(run.io, document);
    else run.io.stdout(`${text()}\n`);
    return summary.passed === summary.candidates ? 0 : 1;
  });
}

/** `[3/24] runner/corpus/x.cu: passed (compile 41.2 s, verify 1.3 s)` */
function candidateLine(done: number, total: number, root: string, result: CandidateResult): string {
  const where = relative(root, result.candidate);
  const name = where.startsWith("..") ? result.candidate : where;
  const cached = result.build?.cached ? ", cached" : "";
  const verdict = result.ok
    ? "passed"
    : `${result.status}${result.reason ? ` (${result.reason})` : ""}`;
  const seconds = `compile ${result.seconds.compile.toFixed(1)} s${cached}, verify ${result.seconds.verify.toFixed(1)} s`;
  return `[${done}/${total}] ${name}: ${verdict} (${seconds})`;
}
