// The Action as a workflow gets it: `npm run release-action` tags a commit carrying the
// bundled runner (HEAD, the branch and the working tree untouched), and action.yml's own
// steps, run from that tag's tree, find the bundle and Node and run the CLI with no npm and
// no node_modules. No GPU here: the command answers "no CUDA GPU" (exit 3), which is the
// bundle running; a GPU job from the bundle is the lead's command in the report.
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), "evk-action-"));
const clone = join(tmp, "evokernel");
const released = join(tmp, "released");
const gitEnv = {
  GIT_AUTHOR_NAME: "release",
  GIT_AUTHOR_EMAIL: "release@example.invalid",
  GIT_COMMITTER_NAME: "release",
  GIT_COMMITTER_EMAIL: "release@example.invalid",
};

interface Step {
  name: string;
  run?: string;
  uses?: string;
  if?: string;
}

const action = parse(readFileSync(join(root, "action/action.yml"), "utf8")) as {
  runs: { using: string; steps: Step[] };
};

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, ...gitEnv } });
}

/** A PATH whose `npm` and `npx` leave a mark: the Action must never call them. */
function pathWithTrap(): { PATH: string; mark: string } {
  const bin = join(tmp, "trap-bin");
  const mark = join(tmp, "npm-was-called");
  mkdirSync(bin, { recursive: true });
  for (const name of ["npm", "npx"]) {
    writeFileSync(join(bin, name), `#!/bin/sh\ntouch '${mark}'\nexit 99\n`);
    chmodSync(join(bin, name), 0o755);
  }
  return { PATH: `${bin}:${process.env.PATH ?? ""}`, mark };
}

async function runStep(
  step: Step,
  env: Record<string, string>,
  cwd = join(tmp, "workspace"),
): Promise<{ exitCode: number; output: string }> {
  const result = await execa("bash", ["-e", "-c", step.run ?? ""], {
    env: { ...env, HOME: process.env.HOME ?? "/tmp" },
    extendEnv: false,
    reject: false,
    all: true,
    cwd,
  });
  return { exitCode: result.exitCode ?? -1, output: result.all };
}

beforeAll(async () => {
  git(tmp, "clone", "--quiet", root, clone);
  symlinkSync(join(root, "node_modules"), join(clone, "node_modules"));
  await execa("node", ["scripts/release-action.mjs", "v9.9.9"], {
    cwd: clone,
    env: gitEnv,
  });
  mkdirSync(released);
  execFileSync("sh", ["-c", `git archive v9.9.9 | tar -x -C '${released}'`], { cwd: clone });
  mkdirSync(join(tmp, "workspace"));
});

afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

describe("npm run release-action", () => {
  it("tags HEAD plus the bundle, leaving the branch and working tree as they were", () => {
    const head = git(clone, "rev-parse", "HEAD").trim();
    expect(git(clone, "rev-parse", "v9.9.9^").trim()).toBe(head);
    expect(git(clone, "diff", "--name-status", "HEAD", "v9.9.9").trim()).toBe(
      "A\taction/dist/evokernel.mjs",
    );
    expect(git(clone, "status", "--porcelain", "--untracked-files=no")).toBe("");
    expect(existsSync(join(clone, "action/dist/evokernel.mjs"))).toBe(false);
  });

  it("refuses an existing tag, a bad name and uncommitted changes", async () => {
    const again = await execa("node", ["scripts/release-action.mjs", "v9.9.9"], {
      cwd: clone,
      reject: false,
    });
    expect(again.exitCode).toBe(2);
    expect(again.stderr).toMatch(/tag v9\.9\.9 exists/);
    const bad = await execa("node", ["scripts/release-action.mjs", "latest"], {
      cwd: clone,
      reject: false,
    });
    expect(bad.stderr).toMatch(/usage/);
    writeFileSync(join(clone, "README.md"), "changed\n");
    const dirty = await execa("node", ["scripts/release-action.mjs", "v9.9.10"], {
      cwd: clone,
      reject: false,
    });
    expect(dirty.exitCode).toBe(2);
    expect(dirty.stderr).toMatch(/uncommitted changes/);
    git(clone, "checkout", "--", "README.md");
  });
});

describe("action.yml, run from the release's tree", () => {
  const steps = action.runs.steps;
  const check = steps.find(
    (step) => step.run?.includes("check.sh") && !step.run.includes("--require"),
  );
  const setupNode = steps.find((step) => step.uses?.startsWith("actions/setup-node@"));
  const run = steps.find((step) => step.name === "Run the job");

  it("is composite, builds nothing, and installs Node only when the check says so", () => {
    expect(action.runs.using).toBe("composite");
    for (const step of steps) expect(step.run ?? "").not.toMatch(/\bnpm\b|\bnpx\b/);
    expect(check).toBeDefined();
    expect(setupNode?.if).toBe("steps.check.outputs.node != 'ok'");
    expect(run).toBeDefined();
  });

  it("runs the bundled CLI with no npm, no node_modules, and reports its exit code", async () => {
    const { PATH, mark } = pathWithTrap();
    const output = join(tmp, "github-output");
    writeFileSync(output, "");
    const env = {
      PATH,
      GITHUB_ACTION_PATH: join(released, "action"),
      GITHUB_OUTPUT: output,
      GITHUB_STEP_SUMMARY: join(tmp, "summary.md"),
      RUNNER_TEMP: join(tmp, "runner-temp"),
    };
    mkdirSync(env.RUNNER_TEMP, { recursive: true });
    expect(existsSync(join(released, "node_modules"))).toBe(false);

    const checked = await runStep(check!, env);
    expect(checked.exitCode).toBe(0);
    expect(readFileSync(output, "utf8")).toContain("node=ok");

    const ran = await runStep(run!, {
      ...env,
      EVOKERNEL_CLI: join(released, "action/dist/evokernel.mjs"),
      EVOKERNEL_PYTHON: "",
      INPUT_SPEC: "",
      INPUT_COMMAND: "bench",
      INPUT_TASK: join(root, "kernels/softmax"),
      INPUT_CANDIDATE: "",
    });
    // No GPU on this machine: the bundle ran and said so, as the documented exit 3.
    expect(ran.exitCode).toBe(3);
    expect(readFileSync(output, "utf8")).toContain("exit-code=3");
    const result = readFileSync(join(env.RUNNER_TEMP, "evokernel-result/result.json"), "utf8");
    expect(result).toMatch(/GPU/);
    expect(existsSync(mark)).toBe(false);
  });

  it("runs a dispatched job spec from the bundle with no npm (the stand-in harness for the GPU)", async () => {
    // the workflow's checkout: a repository whose head makes the task's kernel faster
    const repo = join(tmp, "job-checkout");
    mkdirSync(join(repo, "kernels"), { recursive: true });
    execFileSync("cp", [
      "-r",
      join(root, "test/fixtures/tasks/small_softmax"),
      join(repo, "kernels"),
    ]);
    const inRepo = (...args: string[]) => git(repo, ...args).trim();
    inRepo("init", "-q", "-b", "main");
    inRepo("add", "-A");
    inRepo("commit", "-q", "-m", "base");
    const baseSha = inRepo("rev-parse", "HEAD");
    const kernel = join(repo, "kernels/small_softmax/kernel.cu");
    writeFileSync(kernel, `${readFileSync(kernel, "utf8")}\n// speed=0.5\n`);
    inRepo("commit", "-q", "-am", "a faster kernel");
    const sha = inRepo("rev-parse", "HEAD");
    const spec = {
      schema: 1,
      id: "review-7-action",
      kind: "review",
      repo: { owner: "acme", name: "kernels" },
      sha,
      baseSha,
      pr: 7,
      tasks: ["kernels/small_softmax"],
    };
    const { PATH, mark } = pathWithTrap();
    const output = join(tmp, "job-output");
    writeFileSync(output, "");
    const runnerTemp = join(tmp, "job-runner-temp");
    mkdirSync(runnerTemp, { recursive: true });
    const ran = await runStep(
      run!,
      {
        PATH,
        GITHUB_ACTION_PATH: join(released, "action"),
        GITHUB_OUTPUT: output,
        GITHUB_STEP_SUMMARY: join(tmp, "job-summary.md"),
        RUNNER_TEMP: runnerTemp,
        EVOKERNEL_CLI: join(released, "action/dist/evokernel.mjs"),
        EVOKERNEL_PYTHON: join(root, "test/helpers/fake-gpu-harness.mjs"),
        EVOKERNEL_SANDBOX: "off", // the stand-in harness is a Node script
        EVOKERNEL_CACHE: join(tmp, "job-cache"),
        INPUT_SPEC: JSON.stringify(spec),
        INPUT_COMMAND: "bench",
        INPUT_TASK: "",
        INPUT_CANDIDATE: "",
      },
      repo,
    );
    expect(ran.exitCode, ran.output).toBe(0);
    expect(readFileSync(output, "utf8")).toContain("exit-code=0");
    const result = JSON.parse(
      readFileSync(join(runnerTemp, "evokernel-result/result.json"), "utf8"),
    ) as { job: unknown; tasks: { status: string; improvement: boolean }[] };
    expect(result.job).toEqual(spec);
    expect(result.tasks[0]).toMatchObject({ status: "passed", improvement: true });
    expect(existsSync(mark)).toBe(false);
  });

  it("fails with what to do when the ref has no bundle or Node is too old", async () => {
    const bare = join(tmp, "bare-action");
    mkdirSync(bare, { recursive: true });
    writeFileSync(join(bare, "check.sh"), readFileSync(join(root, "action/check.sh")));
    const output = join(tmp, "bare-output");
    writeFileSync(output, "");
    const noBundle = await runStep(check!, {
      PATH: process.env.PATH ?? "",
      GITHUB_ACTION_PATH: bare,
      GITHUB_OUTPUT: output,
    });
    expect(noBundle.exitCode).toBe(2);
    expect(noBundle.output).toMatch(/No bundled runner at this ref.*release tag/);

    // A Node 18 first on PATH: the check asks for setup-node, the run step refuses it.
    const oldBin = join(tmp, "old-node-bin");
    mkdirSync(oldBin, { recursive: true });
    writeFileSync(join(oldBin, "node"), "#!/bin/sh\necho 18.20.4\n");
    chmodSync(join(oldBin, "node"), 0o755);
    const env = {
      PATH: `${oldBin}:${process.env.PATH ?? ""}`,
      GITHUB_ACTION_PATH: join(released, "action"),
      GITHUB_OUTPUT: output,
    };
    const old = await runStep(check!, env);
    expect(old.exitCode).toBe(0);
    expect(old.output).toMatch(/18\.20\.4 on PATH is not one evokernel supports/);
    expect(readFileSync(output, "utf8")).not.toContain("node=ok");
    const required = await execa("bash", [join(released, "action/check.sh"), "--require"], {
      env,
      extendEnv: false,
      reject: false,
      all: true,
    });
    expect(required.exitCode).toBe(3);
    expect(required.all).toMatch(/needs Node\.js \^20\.18\.1 or >= 22 and found 18\.20\.4/);
  });
});
