// Chaos against the loopback GitHub (issue 17.8): the bundled app as shipped, a real process
// talking to test/helpers/github-standin.mjs, with the local backend in a real git repository.
// The app is killed in the middle of a job and started again; GitHub answers 502s, a
// secondary rate limit and a request that hangs while a job is reported; two app processes
// get the same deliveries at the same moment, the push's before the PR's `opened`, and the
// same command in two comments. Each time every check run ends and nothing is posted twice.
import { once } from "node:events";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, expect, it, vi } from "vitest";
import { hostPidsWith } from "../helpers/host-pids.js";
import { bundleApp } from "../../scripts/bundle.mjs";
import {
  generateAppKey,
  pullRequestEvent,
  sendWebhook,
  startApp,
  startStandin,
  type AppProcess,
  type Standin,
} from "../helpers/github-standin.mjs";
import { kernelPatch } from "../helpers/app-harness.js";
import { git, makePrRepo } from "../helpers/pr-repo.js";

const SECRET = "chaos-secret";
const KEY = generateAppKey();
let dir: string;
let entry: string;
let repo: string;
let head: string;
let base: string;
let standin: Standin | undefined;
const apps: AppProcess[] = [];
const pids: number[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "evokernel-chaos-"));
  // A local job's runner runs as a user of its own (60998 where the app is root): it reads
  // the clone and the runner here, and writes its markers.
  await chmod(dir, 0o1777);
  ({ repo, base, head } = await makePrRepo(dir));
  entry = await bundleApp(join(dir, "app.mjs"));
});

afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
  for (const pid of pids.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone.
    }
  }
  await standin?.close();
  standin = undefined;
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function pulls() {
  return {
    7: {
      head,
      base,
      headRef: "faster",
      files: [
        { filename: "kernels/softmax/kernel.cu", status: "modified", patch: kernelPatch() },
        // The recorded result reports layernorm too: the job's plan must name it.
        {
          filename: "kernels/layernorm/kernel.cu",
          status: "modified",
          patch: "@@ -1 +1 @@\n-a\n+b",
        },
      ],
    },
  };
}

async function start(env: Record<string, string>): Promise<AppProcess> {
  if (!standin) throw new Error("no stand-in");
  const app = await startApp({
    entry,
    standin,
    secret: SECRET,
    privateKey: KEY,
    env: { EVOKERNEL_LOCAL_REPO: repo, ...env },
    log: process.env.CHAOS_LOG === "1",
  });
  apps.push(app);
  return app;
}

/** Alive: a process, not a zombie waiting for its parent. */
/** The one live process with an argument equal to `marker`, other than `unshare` around it. */
async function onePid(marker: string): Promise<number> {
  return vi.waitFor(
    async () => {
      const found: number[] = [];
      for (const pid of await hostPidsWith(marker)) {
        const args = (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0");
        if (args.includes(marker) && args[0] !== "unshare") found.push(pid);
      }
      const [pid, ...more] = found;
      if (pid === undefined || more.length > 0) throw new Error(`not one process with ${marker}`);
      return pid;
    },
    { timeout: 600_000, interval: 50 },
  );
}

async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  if (stat === undefined) return false;
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] !== "Z";
}

it("a job running when the app is killed fails when it starts again, its runner stopped", async () => {
  standin = await startStandin({
    repoDir: repo,
    config: "pullRequests: bench\ndispatch: local\n",
    pulls: pulls(),
  });
  const written = join(dir, "pids.json");
  // A runner that takes long: a child of its own, then it says it started and runs on. Both
  // are found from outside by their command lines (the pids file's path): in the job's PID
  // namespace the pids they see are not the machine's.
  const runner = join(dir, "long-runner.cjs");
  await writeFile(
    runner,
    `const { spawn } = require("node:child_process");
spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)", process.argv[2] + ".child"], { stdio: "ignore" });
require("node:fs").writeFileSync(process.argv[2], "started");
setInterval(() => {}, 1000);
`,
  );
  const env = {
    EVOKERNEL_RUNNER_CMD: JSON.stringify([process.execPath, runner, written]),
    EVOKERNEL_LOCAL_STATE: join(dir, "state"),
    EVOKERNEL_THROTTLE: "off",
  };
  const first = await start(env);
  const payload = pullRequestEvent({ number: 7, head, base, headRef: "faster" });
  expect((await sendWebhook(first.url, SECRET, "pull_request", payload, "chaos-1")).status).toBe(
    200,
  );
  await vi.waitFor(() => readFile(written, "utf8"), { timeout: 600_000, interval: 100 });
  const runnerPid = await onePid(written);
  const childPid = await onePid(`${written}.child`);
  pids.push(runnerPid, childPid);

  // Killed mid-job: nothing of the app runs any more, its runner does (an orphan).
  first.child.kill("SIGKILL");
  await once(first.child, "exit");
  // Gone: nothing to stop after the test (stop() waits for an exit that came already).
  apps.splice(apps.indexOf(first), 1);
  expect(await alive(runnerPid)).toBe(true);
  expect(standin.checkRuns).toHaveLength(1);
  expect(standin.checkRuns[0]?.status).not.toBe("completed");

  await start(env);
  await standin.waitFor(
    () => standin?.checkRuns[0]?.status === "completed",
    600_000,
    "the lost job's check run to end",
  );
  expect(standin.checkRuns[0]).toMatchObject({
    conclusion: "failure",
    output: { summary: expect.stringContaining("evokernel restarted") as unknown },
  });
  await vi.waitFor(
    async () => {
      expect(await alive(runnerPid)).toBe(false);
      expect(await alive(childPid)).toBe(false);
    },
    { timeout: 600_000, interval: 100 },
  );
  expect(standin.unknown()).toEqual([]);
});

it("reports once, and ends its check run, through 502s, a secondary limit and a hung request", async () => {
  standin = await startStandin({
    repoDir: repo,
    config: "pullRequests: bench\ndispatch: local\n",
    pulls: pulls(),
  });
  const R = "/repos/octo/kernels";
  standin.faults.push(
    // Creating the PR's comment: two 502s, retried (plugin-retry).
    { method: "POST", path: new RegExp(`^${R}/issues/7/comments$`), status: 502, times: 2 },
    // The review: a secondary rate limit, waited out (plugin-throttling).
    {
      method: "POST",
      path: new RegExp(`^${R}/pulls/7/reviews$`),
      status: 403,
      headers: { "retry-after": "1" },
      message: "You have exceeded a secondary rate limit. Please wait a few minutes.",
      times: 1,
    },
    // The check run's verdict: no answer at all, cut by the app's own time limit and retried.
    { method: "PATCH", path: new RegExp(`^${R}/check-runs/\\d+$`), times: 1 },
  );
  const app = await start({
    EVOKERNEL_RUNNER_CMD: JSON.stringify([
      process.execPath,
      fileURLToPath(new URL("../helpers/fake-job-runner.mjs", import.meta.url)),
    ]),
    EVOKERNEL_FAKE_RESULT: fileURLToPath(
      new URL("../fixtures/app/review-result.json", import.meta.url),
    ),
    EVOKERNEL_LOCAL_STATE: join(dir, "state-2"),
    // The hung request is cut after this (the default is 20 s).
    EVOKERNEL_GITHUB_TIMEOUT_S: "10",
  });
  const payload = pullRequestEvent({ number: 7, head, base, headRef: "faster" });
  expect((await sendWebhook(app.url, SECRET, "pull_request", payload, "chaos-2")).status).toBe(200);
  await standin.waitFor(
    () => standin?.checkRuns[0]?.status === "completed",
    600_000,
    "the check run to end",
  );
  // Every planted fault was hit, and the work went through all the same, once.
  expect(standin.faults.map((fault) => fault.times)).toEqual([0, 0, 0]);
  expect(standin.comments).toHaveLength(1);
  expect(standin.reviews).toHaveLength(1);
  expect(standin.checkRuns).toHaveLength(1);
  expect(standin.checkRuns[0]).toMatchObject({
    conclusion: "failure",
    output: { title: "2 kernels: 1 wrong, 1 improvement" },
  });
  expect(standin.unknown()).toEqual([]);
});

it("two instances get the same deliveries at once, a push's before `opened`: one job, one comment, nothing stale", async () => {
  // A push on top of the PR's head: GitHub's PR now points at it.
  git(repo, "checkout", "-q", "faster");
  await writeFile(join(repo, "NOTES.md"), "a push after the PR was opened\n");
  git(repo, "add", ".");
  git(repo, "commit", "-q", "-m", "push");
  const pushed = git(repo, "rev-parse", "HEAD");
  git(repo, "checkout", "-q", "main");
  const pull = pulls()[7];
  standin = await startStandin({
    repoDir: repo,
    config: "pullRequests: bench\ndispatch: local\n",
    pulls: { 7: { ...pull, head: pushed } },
  });
  const env = (state: string) => ({
    EVOKERNEL_RUNNER_CMD: JSON.stringify([
      process.execPath,
      fileURLToPath(new URL("../helpers/fake-job-runner.mjs", import.meta.url)),
    ]),
    EVOKERNEL_FAKE_RESULT: fileURLToPath(
      new URL("../fixtures/app/review-result.json", import.meta.url),
    ),
    EVOKERNEL_LOCAL_STATE: join(dir, state),
  });
  const twins = await Promise.all([start(env("twin-1")), start(env("twin-2"))]);
  const push = pullRequestEvent({
    number: 7,
    head: pushed,
    base,
    headRef: "faster",
    action: "synchronize",
    before: head,
  });
  const opened = pullRequestEvent({ number: 7, head, base, headRef: "faster" });
  // Each delivery to both instances at the same moment; the push's arrives first.
  for (const [payload, id] of [
    [push, "chaos-push"],
    [opened, "chaos-opened"],
  ] as const) {
    const answers = await Promise.all(
      twins.map((app) => sendWebhook(app.url, SECRET, "pull_request", payload, id)),
    );
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
  }
  const named = (sha: string) =>
    standin?.checkRuns.filter((run) => run.head_sha === sha && run.name === "evokernel") ?? [];
  await standin.waitFor(
    () =>
      named(pushed).some((run) => run.status === "completed") &&
      named(head).some((run) => run.status === "completed") &&
      (standin?.checkRuns.every((run) => run.status === "completed") ?? false) &&
      standin?.comments.length === 1,
    600_000,
    "the job on the pushed head to be reported, every check run ended",
  );
  for (const app of apps.splice(0)) await app.stop();

  // One job on the PR's head, its verdict on its one check run.
  expect(named(pushed)).toHaveLength(1);
  expect(named(pushed)[0]).toMatchObject({
    conclusion: "failure",
    output: { title: "2 kernels: 1 wrong, 1 improvement" },
  });
  // The replaced head's `opened`: superseded, whichever instance took it; no job ran there.
  expect(named(head)).toHaveLength(1);
  expect(named(head)[0]).toMatchObject({
    conclusion: "neutral",
    output: { title: "Superseded" },
  });
  // A twin's check run for a request the other instance took: out of the name, skipped.
  for (const run of standin.checkRuns.filter((run) => run.name !== "evokernel"))
    expect(run).toMatchObject({ name: "evokernel (duplicate)", conclusion: "skipped" });
  expect(standin.comments).toHaveLength(1);
  expect(standin.reviews).toHaveLength(1);
  expect(standin.reviews[0]).toMatchObject({ commit_id: pushed });
  expect(standin.unknown()).toEqual([]);
});

it("two instances get the same command in two comments at once: one job, one reply that it runs", async () => {
  standin = await startStandin({
    repoDir: repo,
    config: "pullRequests: off\ndispatch: local\n",
    pulls: pulls(),
  });
  // The runner waits for the test's word, so the job is surely running when both comments
  // have been handled, however loaded the machine.
  const gate = join(dir, "gate");
  const gated = join(dir, "gated-runner.cjs");
  await writeFile(
    gated,
    `const { spawnSync } = require("node:child_process");
const { existsSync } = require("node:fs");
const [gate, runner, ...args] = process.argv.slice(2);
(function wait() {
  if (!existsSync(gate)) return void setTimeout(wait, 50);
  process.exit(spawnSync(process.execPath, [runner, ...args], { stdio: "inherit" }).status ?? 1);
})();
`,
  );
  const env = (state: string) => ({
    EVOKERNEL_RUNNER_CMD: JSON.stringify([
      process.execPath,
      gated,
      gate,
      fileURLToPath(new URL("../helpers/fake-job-runner.mjs", import.meta.url)),
    ]),
    EVOKERNEL_FAKE_RESULT: fileURLToPath(
      new URL("../fixtures/app/review-result.json", import.meta.url),
    ),
    EVOKERNEL_LOCAL_STATE: join(dir, state),
  });
  const twins = await Promise.all([start(env("cmd-1")), start(env("cmd-2"))]);
  const comment = (id: number) => ({
    action: "created",
    installation: { id: 1 },
    repository: {
      name: "kernels",
      full_name: "octo/kernels",
      owner: { login: "octo", type: "Organization" },
      default_branch: "main",
    },
    issue: { number: 7, pull_request: { url: "https://github.invalid/octo/kernels/pull/7" } },
    comment: { id, body: "/bench", user: { login: "maintainer", type: "User" } },
    sender: { login: "maintainer", type: "User" },
  });
  const answers = await Promise.all(
    twins.map((app, at) =>
      sendWebhook(app.url, SECRET, "issue_comment", comment(801 + at), `chaos-comment-${at}`),
    ),
  );
  expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
  const bench = () => standin?.checkRuns.filter((run) => run.name === "evokernel bench") ?? [];
  const replies = () =>
    standin?.comments.filter((c) => String(c.body).includes("already running")) ?? [];
  await standin.waitFor(
    () => replies().length === 1 && bench().length === 1,
    600_000,
    "one job and one reply that it runs",
  );
  await writeFile(gate, "");
  // The job's check run ends either way; a job that failed says why here at once, rather
  // than after the wait for its comment runs out.
  await standin.waitFor(
    () =>
      bench()[0]?.status === "completed" &&
      (standin?.checkRuns.every((run) => run.status === "completed") ?? false),
    600_000,
    "the job's check run to end",
  );
  expect(bench()[0]?.output).toMatchObject({ title: "2 kernels: 1 wrong, 1 improvement" });
  await standin.waitFor(() => standin?.comments.length === 2, 600_000, "the job's comment");
  for (const app of apps.splice(0)) await app.stop();

  expect(bench()).toHaveLength(1);
  expect(bench()[0]).toMatchObject({
    conclusion: "failure",
    output: { title: "2 kernels: 1 wrong, 1 improvement" },
  });
  for (const run of standin.checkRuns.filter((run) => run.name !== "evokernel bench"))
    expect(run).toMatchObject({ name: "evokernel bench (duplicate)", conclusion: "skipped" });
  expect(replies()).toHaveLength(1);
  expect(standin.comments).toHaveLength(2);
  expect(standin.reviews).toHaveLength(1);
  expect(standin.unknown()).toEqual([]);
});
