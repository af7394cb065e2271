// The local backend across a restart of the app (issue 17.5): each job's record lives on disk
// from dispatch to end, so the next process stops a runner the last one left behind (with
// every process under it) and reports the job lost; a pid that no longer belongs to a
// runner of ours is never killed. Real processes and a real git repository.
import { execa } from "execa";
import { spawn } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it, vi } from "vitest";
import { hostPidsWith } from "../../helpers/host-pids.js";
import { createLocalDispatcher } from "../../../src/app/dispatch/local.js";
import type { GitHub } from "../../../src/app/github.js";
import type { JobSpec } from "../../../src/shared/job.js";

let dir: string;
const started: number[] = [];
const runnerUid = process.env["EVOKERNEL_RUNNER_UID"];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-local-restart-"));
  // A local job's runner runs as a user of its own (where the app is root): it reads the
  // clone and the runner here, and writes its markers. A restart kills every process of a
  // lost job's uid: a uid of these tests' own, not the 60998 other tests on the machine use.
  await chmod(dir, 0o1777);
  process.env["EVOKERNEL_RUNNER_UID"] = "61230";
});

afterEach(async () => {
  if (runnerUid === undefined) delete process.env["EVOKERNEL_RUNNER_UID"];
  else process.env["EVOKERNEL_RUNNER_UID"] = runnerUid;
  for (const pid of started) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone.
    }
  }
  started.length = 0;
  await rm(dir, { recursive: true, force: true });
});

/** Alive: a process, not a zombie waiting for its parent. */
async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  return (
    stat !== undefined && stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
  );
}

/** The one live process with an argument equal to `marker`, other than `unshare` around it. */
async function onePid(marker: string): Promise<number> {
  return vi.waitFor(
    async () => {
      const pids: number[] = [];
      for (const pid of await hostPidsWith(marker)) {
        const args = (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0");
        if (args.includes(marker) && args[0] !== "unshare") pids.push(pid);
      }
      const [pid, ...more] = pids;
      if (pid === undefined || more.length > 0) throw new Error(`not one process with ${marker}`);
      return pid;
    },
    { timeout: 600_000, interval: 50 },
  );
}

async function repoWithCommit(): Promise<{ repo: string; sha: string }> {
  const repo = join(dir, "repo");
  await execa("git", ["init", "-q", "-b", "main", repo]);
  await writeFile(join(repo, "kernel.cu"), "// kernel\n");
  const git = (...args: string[]) => execa("git", ["-C", repo, ...args]);
  await git("add", ".");
  await git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "x");
  return { repo, sha: (await git("rev-parse", "HEAD")).stdout.trim() };
}

it("stops the runner a dead process left behind, with its children, and reports the job lost", async () => {
  const { repo, sha } = await repoWithCommit();
  const stateDir = join(dir, "state");
  const pids = join(dir, "pids.json");
  // Stands in for a long runner: starts a child of its own, writes both pids, runs on.
  const runner = join(dir, "runner.cjs");
  await writeFile(
    runner,
    // Found from outside by a marker in their command lines (the pids file's path): in the
    // job's PID namespace the pids the runner sees are not the machine's.
    `const { spawn } = require("node:child_process");
spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)", process.argv[2] + ".child"], { stdio: "ignore" });
require("node:fs").writeFileSync(process.argv[2], "started");
setInterval(() => {}, 1000);
`,
  );
  const options = {
    repoDir: repo,
    runnerCommand: [process.execPath, runner, pids],
    gpus: 1,
    timeoutMs: 600_000,
    stateDir,
    onDone: () => Promise.resolve(),
    onError: () => undefined,
  };
  // The process that restarts: it never gets to conclude the job's check run (onDone false),
  // as a dead process would not. It is still alive here, so it is let finish (idle) before
  // the record is looked at, or its own clean-up races the next start's.
  const before = createLocalDispatcher({ ...options, onDone: () => Promise.resolve(false) });
  const spec: JobSpec = {
    schema: 1,
    id: "bench-7-aaaaaaa-000000",
    kind: "bench",
    repo: { owner: "octo", name: "kernels" },
    sha,
    tasks: [],
  };
  const github = { repo: { owner: "octo", repo: "kernels" } } as GitHub;
  await before.start({
    spec,
    github,
    workflow: "evokernel.yml",
    ref: "main",
    checkRun: { installationId: 1, id: 900 },
  });
  await vi.waitFor(() => readFile(pids, "utf8"), { timeout: 600_000, interval: 50 });
  const runnerPid = await onePid(pids);
  const childPid = await onePid(`${pids}.child`);
  started.push(runnerPid, childPid);
  expect(await alive(runnerPid)).toBe(true);

  // The app restarts: a new process (here a new dispatcher) on the same state folder.
  const after = createLocalDispatcher(options);
  const lost = await after.recover?.();
  expect(lost).toEqual([
    {
      jobId: spec.id,
      installationId: 1,
      repo: { owner: "octo", repo: "kernels" },
      checkRunId: 900,
      stage: "running",
    },
  ]);
  await vi.waitFor(
    async () => {
      expect(await alive(runnerPid)).toBe(false);
      expect(await alive(childPid)).toBe(false);
    },
    { timeout: 600_000, interval: 50 },
  );
  await before.idle?.();
  // Its record stays until its check run is concluded: a start that could not reach GitHub
  // leaves it to the next. Once concluded, nothing is left for a third start.
  expect((await createLocalDispatcher(options).recover?.())?.map((job) => job.jobId)).toEqual([
    spec.id,
  ]);
  await after.forget?.(spec.id);
  expect(await createLocalDispatcher(options).recover?.()).toEqual([]);
});

it("never kills a pid that is no longer a runner of its job", async () => {
  const { repo } = await repoWithCommit();
  const stateDir = join(dir, "state");
  await mkdir(stateDir);
  // The system gave the dead runner's pid to another process since.
  const other = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
    stdio: "ignore",
  });
  const pid = other.pid ?? 0;
  started.push(pid);
  await writeFile(
    join(stateDir, "bench-7-aaaaaaa-111111.json"),
    JSON.stringify({
      jobId: "bench-7-aaaaaaa-111111",
      installationId: 1,
      owner: "octo",
      repo: "kernels",
      checkRunId: 901,
      pid,
      specFile: join(tmpdir(), "evokernel-job-gone", "spec.json"),
      dir: join(tmpdir(), "evokernel-job-gone"),
    }),
  );
  const lost = await createLocalDispatcher({
    repoDir: repo,
    runnerCommand: ["true"],
    gpus: 1,
    timeoutMs: 600_000,
    stateDir,
    onDone: () => Promise.resolve(),
    onError: () => undefined,
  }).recover?.();
  expect(lost?.map((job) => job.checkRunId)).toEqual([901]);
  expect(await alive(pid)).toBe(true);
});

it("keeps a finished job's record, with what it came to, while its check run is not concluded", async () => {
  const { repo, sha } = await repoWithCommit();
  const stateDir = join(dir, "state");
  const options = {
    repoDir: repo,
    // A runner that fails at once, writing no result.
    runnerCommand: [process.execPath, "-e", "process.exit(3)", "--"],
    gpus: 1,
    timeoutMs: 600_000,
    stateDir,
    // GitHub was down: the app could not conclude the job's check run.
    onDone: () => Promise.resolve(false),
    onError: () => undefined,
  };
  // The process that restarts: it never gets to conclude the job's check run (onDone false),
  // as a dead process would not. It is still alive here, so it is let finish (idle) before
  // the record is looked at, or its own clean-up races the next start's.
  const before = createLocalDispatcher({ ...options, onDone: () => Promise.resolve(false) });
  await before.start({
    spec: {
      schema: 1,
      id: "bench-7-aaaaaaa-222222",
      kind: "bench",
      repo: { owner: "octo", name: "kernels" },
      sha,
      tasks: [],
    },
    github: { repo: { owner: "octo", repo: "kernels" } } as GitHub,
    workflow: "evokernel.yml",
    ref: "main",
    checkRun: { installationId: 1, id: 902 },
  });
  await before.idle?.();
  // The app restarts: the job is there, with the runner's failure to conclude it with.
  const lost = await createLocalDispatcher(options).recover?.();
  expect(lost).toEqual([
    expect.objectContaining({
      checkRunId: 902,
      stage: "failed",
      message: expect.stringContaining("the runner exited with 3") as unknown,
    }),
  ]);
});
