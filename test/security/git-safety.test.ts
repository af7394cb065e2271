// Issue 16.3, "persistence": a job wrote a git hook into the shared clone, which ran with the
// app's environment at the next job's `git worktree add`; a `refs/replace` entry planted by
// one PR's job made the next job read the first PR's kernel. Here both are planted in a real
// clone, and the app's local backend and the runner's git module (src/shared/git-safety.ts)
// must ignore them; each test fails when its switch is taken out of GIT_SAFE_ARGS/ENV.
import { execa } from "execa";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLocalDispatcher } from "../../src/app/dispatch/local.js";
import type { GitHub } from "../../src/app/github.js";
import type { JobSpec } from "../../src/shared/job.js";
import { openGit } from "../../runner/src/git.js";

let dir: string;
let repo: string;
let head: string;
let other: string;

async function git(...args: string[]): Promise<string> {
  return (await execa("git", args, { cwd: repo })).stdout.trim();
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-git-safety-"));
  // A local job's runner runs as a user of its own (60998 where the app is root): it reads
  // the clone and the runner here, and writes its markers.
  await chmod(dir, 0o1777);
  repo = join(dir, "repo");
  await execa("git", ["init", "-q", "-b", "main", repo]);
  await git("config", "user.email", "test@example.com");
  await git("config", "user.name", "test");
  await writeFile(join(repo, "kernel.cu"), "// the PR's own kernel\n");
  await git("add", ".");
  await git("commit", "-q", "-m", "head");
  head = await git("rev-parse", "HEAD");
  await git("checkout", "-q", "-b", "attacker");
  await writeFile(join(repo, "kernel.cu"), "// another PR's kernel\n");
  await git("commit", "-q", "-am", "other");
  other = await git("rev-parse", "HEAD");
  await git("checkout", "-q", "main");
  // What an earlier job left in the shared clone: a hook that leaves a mark, and a replace
  // ref that swaps this job's commit for the other one.
  const hook = join(repo, ".git", "hooks", "post-checkout");
  await writeFile(hook, `#!/bin/sh\necho ran > "${join(dir, "hook-ran")}"\n`);
  await chmod(hook, 0o755);
  await git("replace", head, other);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("git on a clone pull requests reach", () => {
  it("the local backend's worktree runs no hook and honours no replace ref", async () => {
    const seen = join(dir, "seen.txt");
    let finished: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (finished = resolve));
    const local = createLocalDispatcher({
      repoDir: repo,
      // Stands in for the runner: records the kernel the job's checkout holds.
      runnerCommand: [
        process.execPath,
        "-e",
        `require("fs").writeFileSync(${JSON.stringify(seen)}, require("fs").readFileSync("kernel.cu"))`,
        "--",
      ],
      gpus: 1,
      timeoutMs: 600_000,
      onDone: () => {
        finished();
        return Promise.resolve();
      },
      onError: (label, error) => {
        throw new Error(label, { cause: error });
      },
    });
    const spec: JobSpec = {
      schema: 1,
      id: "bench-x-aaaaaaa-000000",
      kind: "bench",
      repo: { owner: "octo", name: "kernels" },
      sha: head,
      tasks: [],
    };
    await local.start({ spec, github: {} as GitHub, workflow: "evokernel.yml", ref: "main" });
    await done;
    expect(await readFile(seen, "utf8")).toBe("// the PR's own kernel\n");
    await expect(readFile(join(dir, "hook-ran"), "utf8")).rejects.toThrow(/ENOENT/);
  });

  it("the runner reads the commit itself, not its replacement", async () => {
    const runnerGit = await openGit(repo);
    const bytes = await runnerGit.readFile(head, "kernel.cu");
    expect(Buffer.from(bytes ?? []).toString("utf8")).toBe("// the PR's own kernel\n");
    // Plain git (no safety switches) does read the replacement: the plant works.
    expect(await git("show", `${head}:kernel.cu`)).toBe("// another PR's kernel");
  });
});
