// `evokernel review` and `evokernel job` end to end on a real git repository made here:
// a task, a base commit and a pull request's commit. A stand-in harness plays the GPU
// (test/helpers/fake-gpu-harness.mjs: a kernel's time follows `speed=` or BLOCK_SIZE in
// its source), so the whole path runs on CI: git, the plan, the cascade, the renderers.
import { execa } from "execa";
import { cp, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { reviewResultSchema } from "../../../src/shared/review.js";
import { jobSpecSchema } from "../../../src/shared/job.js";
import { runCli } from "../../helpers/cli.js";
import { python, skipWithoutPython } from "../../helpers/python.js";

const fixture = fileURLToPath(new URL("../../fixtures/tasks/small_softmax", import.meta.url));
const fakeGpu = fileURLToPath(new URL("../../helpers/fake-gpu-harness.mjs", import.meta.url));

let dir: string;
let repo: string;
let out: string;
let env: Record<string, string>;

async function git(...args: string[]): Promise<string> {
  return (await execa("git", args, { cwd: repo })).stdout;
}

/** Rewrites the task's kernel so the stand-in harness times it at `speed` × the base's. */
async function setKernel(marker: string): Promise<void> {
  const file = join(repo, "kernels", "small_softmax", "kernel.cu");
  const source = await readFile(file, "utf8");
  await writeFile(
    file,
    `${source.replace(/\n\/\/ (speed=|fake-harness:).*\n$/, "\n")}\n// ${marker}\n`,
  );
}

async function commit(message: string): Promise<string> {
  await git("add", "-A");
  await git("commit", "-q", "-m", message);
  return git("rev-parse", "HEAD");
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evokernel-review-"));
  repo = join(dir, "repo");
  out = join(dir, "out");
  await mkdir(join(repo, "kernels"), { recursive: true });
  await cp(fixture, join(repo, "kernels", "small_softmax"), { recursive: true });
  await writeFile(join(repo, "README.md"), "kernels\n");
  await git("init", "-q", "-b", "main");
  await git("config", "user.email", "test@example.com");
  await git("config", "user.name", "test");
  await setKernel("speed=1.0");
  await commit("base");
  await git("checkout", "-q", "-b", "feature");
  const cache = join(dir, "cache");
  await mkdir(cache);
  env = {
    EVOKERNEL_PYTHON: fakeGpu,
    EVOKERNEL_SANDBOX: "off",
    EVOKERNEL_CACHE: cache,
    ANTHROPIC_API_KEY: "",
  };
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const review = (args: string[] = [], environment = env) =>
  runCli(["review", "--out", out, ...args], { cwd: repo, env: environment });

describe("evokernel review", () => {
  it("finds the changed task, times head beside base, and writes what the app would post", async () => {
    await setKernel("speed=0.5");
    await commit("a faster kernel");
    const before = await git("status", "--porcelain");

    const run = await review();
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stderr).toContain("review: kernels/small_softmax (native) changed");
    expect(run.stdout.split("\n")[0]).toBe("<!-- evokernel:comment -->");
    expect(run.stdout).toContain(
      "### ⚡ 1 improvement: `small_softmax` 2.00×\u00A0faster than base, verified on 4 shapes",
    );

    const checkRun = JSON.parse(await readFile(join(out, "check-run.json"), "utf8")) as unknown;
    expect(checkRun).toMatchObject({
      conclusion: "success",
      title: "1 improvement: small_softmax 2.00×\u00A0faster than base, verified on 4 shapes",
    });
    // The CLI helper drops the last newline of stdout.
    expect(await readFile(join(out, "comment.md"), "utf8")).toBe(`${run.stdout}\n`);
    const result = reviewResultSchema.parse(
      JSON.parse(await readFile(join(out, "review.json"), "utf8")),
    );
    expect(result.tasks).toHaveLength(1);
    expect(result.tasks[0]).toMatchObject({
      task: { name: "small_softmax", path: "kernels/small_softmax", format: "native" },
      status: "passed",
      kernel: "kernels/small_softmax/kernel.cu",
      inBase: true,
      improvement: true,
      regression: false,
    });
    expect(result.job.baseSha).toBe(await git("rev-parse", "main"));
    // The user's checkout is as it was: nothing checked out, nothing written into it.
    expect(await git("status", "--porcelain")).toBe(before);
    expect(await git("rev-parse", "--abbrev-ref", "HEAD")).toBe("feature");
  });

  it("without --out writes outside the checkout, in the user cache folder, and says where", async () => {
    await setKernel("speed=0.5");
    const sha = await commit("a faster kernel");
    const before = await git("status", "--porcelain", "--ignored");
    const xdg = join(dir, "xdg");
    const run = await runCli(["review"], { cwd: repo, env: { ...env, XDG_CACHE_HOME: xdg } });
    expect(run.exitCode, run.stderr).toBe(0);
    const folder = join(xdg, "evokernel", "reviews", `repo-${sha.slice(0, 7)}`);
    expect(await readFile(join(folder, "comment.md"), "utf8")).toBe(`${run.stdout}\n`);
    expect(run.stderr).toContain(`in ${folder} (outside your checkout`);
    expect(await git("status", "--porcelain", "--ignored")).toBe(before);
  });

  it("fails a kernel slower than base beyond the noise", async () => {
    await setKernel("speed=1.3");
    await commit("a slower kernel");
    const run = await review();
    expect(run.exitCode, run.stderr).toBe(1);
    expect(run.stdout).toContain("`small_softmax` 1.30×\u00A0slower than base");
    expect(JSON.parse(await readFile(join(out, "check-run.json"), "utf8"))).toMatchObject({
      conclusion: "failure",
    });
  });

  it("fails a wrong kernel, naming the configuration", async () => {
    await setKernel("fake-harness: verify=mismatch");
    await commit("a wrong kernel");
    const run = await review(["--json"]);
    expect(run.exitCode, run.stderr).toBe(1);
    const result = reviewResultSchema.parse(JSON.parse(run.stdout));
    expect(result.tasks[0]).toMatchObject({ status: "wrong" });
    expect(JSON.parse(await readFile(join(out, "check-run.json"), "utf8"))).toMatchObject({
      conclusion: "failure",
      title:
        "1 wrong: small_softmax is wrong on 8192x8192: its output differs from the reference (mismatch)",
    });
  });

  // Every failure says what failed: the stage, the exception, the output's tail (H200,
  // 2026-11-28: every review said only "the harness failed (exit 4)").
  it.each([
    ["static", "static check"],
    ["verify", "verification"],
    ["bench", "timing"],
  ])(
    "a harness that fails in %s: the comment, the check run and --json say where and why",
    async (stage, name) => {
      const secret = "s3cret-value-of-the-runner";
      await setKernel(`fake-harness: fail-in=${stage} fake-harness: print=${secret}`);
      await commit(`a kernel the harness fails on in ${stage}`);
      const run = await review(["--json"], { ...env, GITHUB_TOKEN: secret });
      expect(run.exitCode, run.stderr).toBe(1);
      const cause = "PermissionError: [Errno 13] Permission denied";
      const comment = await readFile(join(out, "comment.md"), "utf8");
      expect(comment).toContain(`${name}: the harness failed (exit 4): ${cause}`);
      expect(comment).toContain("Traceback (most recent call last)");
      const checkRun = JSON.parse(await readFile(join(out, "check-run.json"), "utf8")) as {
        summary: string;
        text?: string;
      };
      expect(checkRun.summary).toContain(`${name}: the harness failed (exit 4)`);
      expect(checkRun.text).toContain("<details><summary>What failed");
      expect(checkRun.text).toContain("Traceback (most recent call last)");
      const result = reviewResultSchema.parse(JSON.parse(run.stdout));
      expect(result.tasks[0]?.status).toBe("error");
      expect(result.tasks[0]?.verification?.message).toContain(cause);
      expect(result.tasks[0]?.verification?.message).toContain("Traceback");
      // the runner's log line for the stage names the cause too
      expect(run.stderr).toContain(cause);
      // a secret of the runner's never reaches what is posted
      for (const text of [comment, JSON.stringify(checkRun), run.stdout, run.stderr]) {
        expect(text).not.toContain(secret);
      }
      expect(comment).toContain("[redacted]");
    },
  );

  it("a task moved: the old one removed, the new one checked with nothing to compare", async () => {
    await git("mv", "kernels/small_softmax", "kernels/softmax_v2");
    await commit("rename the task");
    const run = await review(["--json"]);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stderr).toContain("review: kernels/small_softmax (native) removed");
    expect(run.stderr).toContain("review: kernels/softmax_v2 (native) new");
    const result = reviewResultSchema.parse(JSON.parse(run.stdout));
    expect(result.tasks.map((task) => [task.task.path, task.status, task.inBase])).toEqual([
      ["kernels/small_softmax", "removed", true],
      ["kernels/softmax_v2", "passed", false],
    ]);
    expect(result.tasks[1]?.timings[0]?.base).toBeNull();
    expect(await readFile(join(out, "comment.md"), "utf8")).toContain(
      "`softmax_v2` verified on 4 shapes (new: no base to compare with)",
    );
  });

  it("says nothing changed when no task did, and needs no GPU for it", async () => {
    await writeFile(join(repo, "README.md"), "kernels, faster\n");
    await commit("docs");
    const run = await review([], { ...env, EVOKERNEL_FAKE_NO_GPU: "1" });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stderr).toContain("review: no kernel task changed");
    expect(JSON.parse(await readFile(join(out, "check-run.json"), "utf8"))).toMatchObject({
      conclusion: "neutral",
    });
  });

  it("without a GPU lists the changed tasks, then exits 3", async () => {
    await setKernel("speed=0.5");
    await commit("a faster kernel");
    const run = await review([], { ...env, EVOKERNEL_FAKE_NO_GPU: "1" });
    expect(run.exitCode, run.stderr).toBe(3);
    expect(run.stderr).toContain("review: kernels/small_softmax (native) changed");
    expect(run.stderr).toContain(
      "found 1 task(s) to check (kernels/small_softmax), but no CUDA GPU",
    );
  });

  it("reads .github/evokernel.yml from the base branch, and says what is wrong in it", async () => {
    await git("checkout", "-q", "main");
    await mkdir(join(repo, ".github"));
    await writeFile(join(repo, ".github", "evokernel.yml"), "pullRequest: optimize\n");
    await commit("config");
    await git("checkout", "-q", "-b", "change");
    await setKernel("speed=0.5");
    await commit("a faster kernel");
    const run = await review();
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain("did you mean `pullRequests`?");
  });

  it("is a usage error outside a git checkout or with an unknown ref", async () => {
    const outside = await runCli(["review"], { cwd: dir, env });
    expect(outside.exitCode).toBe(2);
    expect(outside.stderr).toContain("is not in a git repository");
    const unknown = await review(["--base", "no-such-branch"]);
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('"no-such-branch" names no commit');
  });

  it("--optimize evolves the head kernel and suggests the change", async () => {
    // A small search, set where the app reads it: the base branch's config.
    await git("checkout", "-q", "main");
    await mkdir(join(repo, ".github"));
    await writeFile(
      join(repo, ".github", "evokernel.yml"),
      "proposer: tuner\nbudget: { candidates: 6, minutes: 5, usd: 1 }\n",
    );
    await commit("config");
    await git("checkout", "-q", "feature");
    await git("rebase", "-q", "main");
    // The stand-in times BLOCK_SIZE 512 fastest: the tuner finds it (with this seed, in six
    // candidates).
    const file = join(repo, "kernels", "small_softmax", "kernel.cu");
    await writeFile(file, (await readFile(file, "utf8")).replace(/\n\/\/ speed=.*\n$/, "\n"));
    await commit("drop the marker");
    const run = await runCli(
      ["review", "--out", out, "--optimize", "--seed", "5", "--base", "main"],
      {
        cwd: repo,
        env,
      },
    );
    expect(run.exitCode, run.stderr).toBe(0);
    const result = reviewResultSchema.parse(
      JSON.parse(await readFile(join(out, "review.json"), "utf8")),
    );
    const task = result.tasks[0];
    expect(task?.optimize?.search.budget.candidates).toBe(6);
    expect(task?.optimize?.win, run.stderr).toBe(true);
    expect(task?.suggestion?.path).toBe("kernels/small_softmax/kernel.cu");
    expect(task?.suggestion?.after).toContain("#define BLOCK_SIZE 512");
    const patch = await readFile(join(out, "suggestion.patch"), "utf8");
    expect(patch).toContain("+#define BLOCK_SIZE 512");
    // The patch applies to the PR's file as the user has it.
    await execa("git", ["apply", "--check", join(out, "suggestion.patch")], { cwd: repo });
    expect(run.stdout).toContain("**Evolved:**");
    expect(run.stdout).toContain("xychart-beta");
  });
});

describe("evokernel job", () => {
  it("runs a spec in a checkout and writes a result the app can read", async () => {
    const base = await git("rev-parse", "main");
    await setKernel("speed=0.5");
    const head = await commit("a faster kernel");
    const spec = jobSpecSchema.parse({
      schema: 1,
      id: "review-7-test",
      kind: "review",
      repo: { owner: "acme", name: "kernels" },
      sha: head,
      baseSha: base,
      pr: 7,
      tasks: ["kernels/small_softmax"],
    });
    const specFile = join(dir, "spec.json");
    await writeFile(specFile, JSON.stringify({ spec: JSON.stringify(spec) }));
    const resultFile = join(dir, "result.json");
    const run = await runCli(["job", "--spec", specFile, "--out", resultFile], { cwd: repo, env });
    expect(run.exitCode, run.stderr).toBe(0);
    const result = reviewResultSchema.parse(JSON.parse(await readFile(resultFile, "utf8")));
    expect(result.job).toEqual(spec);
    expect(result.tasks[0]).toMatchObject({ status: "passed", improvement: true });
    expect(run.stdout).toContain("`small_softmax` 2.00×\u00A0faster");
    // the job built in a cache of its own, gone with it (issue 16.3): the configured cache
    // holds nothing of it (the stand-in harness writes its builds there as fake-<hash>.json)
    expect(await readdir(env["EVOKERNEL_CACHE"] ?? "")).toEqual([]);
  });

  it("refuses a spec it cannot trust, and a commit the checkout lacks", async () => {
    const specFile = join(dir, "spec.json");
    await writeFile(specFile, JSON.stringify({ schema: 1, kind: "review" }));
    const bad = await runCli(["job", "--spec", specFile], { cwd: repo, env });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain("spec.id");
    const missing = {
      schema: 1,
      id: "x",
      kind: "verify",
      repo: { owner: "acme", name: "kernels" },
      sha: "c".repeat(40),
      tasks: [],
    };
    await writeFile(specFile, JSON.stringify(missing));
    const lacking = await runCli(["job", "--spec", specFile], { cwd: repo, env });
    expect(lacking.exitCode).toBe(2);
    expect(lacking.stderr).toContain("fetch-depth: 0");
  });
});

// The path every pull request takes, inside the sandbox: the job's checkout is a temporary
// folder (0700, the runner's), which the sandbox's user could not read, so every kernel of
// every review failed with "the harness failed (exit 4)" on the H200 (2026-11-28) while
// `verify` of the same task passed. Here the real harness starts in the sandbox on the CPU:
// the review gets as far as asking for a GPU, not stopped by the checkout's permissions.
describe.skipIf(skipWithoutPython || process.getuid?.() !== 0)(
  "evokernel review in the sandbox, as root",
  () => {
    it("lets the sandbox's user read the job's checkout", async () => {
      await setKernel("speed=0.5");
      await commit("a faster kernel");
      const sandboxed: Record<string, string> = { ...env, EVOKERNEL_SANDBOX: "on" };
      delete sandboxed["EVOKERNEL_PYTHON"]; // the real harness (the stand-in is no Python)
      if (python !== null) sandboxed["EVOKERNEL_PYTHON"] = python;
      const run = await review([], sandboxed);
      expect(run.stderr).not.toContain("cannot read");
      expect(run.stderr).toContain("no CUDA GPU");
      expect(run.exitCode, run.stderr).toBe(3);
    }, 300_000);
  },
);
