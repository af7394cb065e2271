// A task's task.json is read and parsed once per run (issue 21.2): the optimize pipeline read
// it three times (the target, the tunables, the reference), a job's task five (its target,
// its tolerance, then optimize's three). Every read of the runner goes through
// node:fs/promises, which counts them here; the stand-in harness (a process of its own)
// plays the GPU, as in test/runner/cli/review.test.ts.
import { execa } from "execa";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type * as FsPromises from "node:fs/promises";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";

const reads = vi.hoisted(() => [] as string[]);
vi.mock("node:fs/promises", async (importOriginal) => {
  const fs = await importOriginal<typeof FsPromises>();
  const readFile = ((path: unknown, ...rest: unknown[]) => {
    reads.push(String(path));
    return (fs.readFile as (...args: unknown[]) => unknown)(path, ...rest);
  }) as typeof fs.readFile;
  return { ...fs, readFile, default: { ...fs, readFile } };
});

const { jobSpecSchema } = await import("../../../src/shared/job.js");
const { withSession } = await import("../../../runner/src/pipeline/session.js");
const { openGit } = await import("../../../runner/src/git.js");
const { runJob } = await import("../../../runner/src/jobs/run-job.js");
const { runOptimize } = await import("../../../runner/src/pipeline/optimize.js");

const fixture = fileURLToPath(new URL("../../fixtures/tasks/small_softmax", import.meta.url));
const fakeGpu = fileURLToPath(new URL("../../helpers/fake-gpu-harness.mjs", import.meta.url));
let dir = "";

/** How often each task's task.json was read since the last reset (the harness's records of
 * `inspect`, named task.json too, sit in folders of their own). */
function taskJsonReads(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const path of reads.filter((file) => file.endsWith("/small_softmax/task.json"))) {
    counts[path] = (counts[path] ?? 0) + 1;
  }
  return counts;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "evokernel-task-reads-"));
  vi.stubEnv("ANTHROPIC_API_KEY", "");
  vi.stubEnv("EVOKERNEL_PYTHON", fakeGpu);
  vi.stubEnv("EVOKERNEL_SANDBOX", "off");
  vi.stubEnv("EVOKERNEL_CACHE", join(dir, "cache"));
  vi.stubEnv("EVOKERNEL_FAKE_TASK_LOG", join(dir, "harness-requests.jsonl"));
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  reads.length = 0;
  await rm(join(dir, "harness-requests.jsonl"), { force: true });
});

/**
 * The harness's requests that named this task, by whether they carried its task.json: a real
 * harness reads the file for each one that did not.
 */
async function harnessRequests(): Promise<{ command: string; spec: boolean }[]> {
  const text = await readFile(join(dir, "harness-requests.jsonl"), "utf8");
  return text
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { command: string; task: string; spec: boolean })
    .filter((request) => request.task.endsWith("/small_softmax"))
    .map(({ command, spec }) => ({ command, spec }));
}

const budget = { candidates: 2, seconds: 600, usd: 1 };

describe("task.json, read once per task per run", () => {
  it("by the optimize pipeline", async () => {
    const task = join(dir, "optimize", "small_softmax");
    await cp(fixture, task, { recursive: true });
    const run = await runOptimize({
      task,
      cwd: join(dir, "optimize"),
      budget,
      population: 4,
      proposer: "tuner",
      seed: 1,
      env: {},
      say: () => undefined,
    });
    expect(run.interrupted).toBe(false);
    expect(taskJsonReads()).toEqual({ [join(task, "task.json")]: 1 });
    // and the harness was given it with every request: it read the file not once
    const requests = await harnessRequests();
    expect(requests.length).toBeGreaterThan(3);
    expect(requests.filter((request) => !request.spec)).toEqual([]);
  });

  it("by a job's task: its review and its search", async () => {
    const repo = join(dir, "repo");
    const git = (...args: string[]) => execa("git", args, { cwd: repo });
    await mkdir(join(repo, "kernels"), { recursive: true });
    await cp(fixture, join(repo, "kernels", "small_softmax"), { recursive: true });
    await git("init", "-q", "-b", "main");
    await git("add", "-A");
    await git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "base");
    const base = (await git("rev-parse", "HEAD")).stdout;
    const kernel = join(repo, "kernels", "small_softmax", "kernel.cu");
    await writeFile(kernel, "// speed=0.5\n", { flag: "a" });
    await git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qam", "head");
    const head = (await git("rev-parse", "HEAD")).stdout;
    const spec = jobSpecSchema.parse({
      schema: 1,
      id: "review-1-reads",
      kind: "review",
      optimize: true,
      budget: { candidates: 2, minutes: 10, usd: 1 },
      proposer: "tuner",
      seed: 1,
      repo: { owner: "acme", name: "kernels" },
      sha: head,
      baseSha: base,
      pr: 1,
      tasks: ["kernels/small_softmax"],
    });
    reads.length = 0;
    const result = await runJob(spec, {
      git: await openGit(repo),
      openSession: (work) => withSession(work),
      say: () => undefined,
      onEvent: () => undefined,
    });
    expect(result.tasks[0]).toMatchObject({ status: "passed" });
    expect(result.tasks[0]?.optimize?.search.candidates).toBe(2);
    // head's task.json and base's, each once (the job's folders are temporary: by suffix)
    const counts = Object.entries(taskJsonReads()).map(([path, count]) => [
      path.slice(path.lastIndexOf("/kernels/") - 4),
      count,
    ]);
    expect(counts.sort()).toEqual([
      ["base/kernels/small_softmax/task.json", 1],
      ["head/kernels/small_softmax/task.json", 1],
    ]);
    const requests = await harnessRequests();
    expect(requests.map((request) => request.command)).toContain("evaluate");
    expect(requests.filter((request) => !request.spec)).toEqual([]);
  });
});
