// Every string the app posts from a job is redacted of every secret the app holds (issue
// 34.1): a runner that read the app's key, webhook secret or the LLM's key cannot publish it
// through the job's check run. The redactor alone, then a real local job whose runner prints
// the secrets and fails, ended the one way every job ends (jobs/finish.ts endJob).
import { execa } from "execa";
import { generateKeyPairSync } from "node:crypto";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "probot";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { AppState } from "../../src/app/app-state.js";
import { createLocalDispatcher } from "../../src/app/dispatch/local.js";
import type { GitHub } from "../../src/app/github.js";
import { createEarlyRuns } from "../../src/app/early-runs.js";
import { armDeadline, endJob } from "../../src/app/jobs/finish.js";
import { createJobRegistry } from "../../src/app/job-registry.js";
import { createWorkQueue } from "../../src/app/queue.js";
import { createRedactor, REDACTED, secretValues } from "../../src/app/redact.js";
import { createSeenSet } from "../../src/app/seen.js";
import type { JobSpec } from "../../src/shared/job.js";

const KEY = generateKeyPairSync("rsa", { modulusLength: 1024 })
  .privateKey.export({ type: "pkcs8", format: "pem" })
  .toString();
const KEY_LINE = KEY.split("\n")[3] ?? "";
const WEBHOOK_SECRET = "webhook-secret-5f1c2a";
const CLIENT_SECRET = "0123456789abcdef0123456789abcdef01234567";
const LLM_KEY = "sk-ant-api03-" + "x".repeat(40);
const ENV = {
  PRIVATE_KEY: KEY.replace(/\n/g, "\\n"),
  WEBHOOK_SECRET,
  GITHUB_CLIENT_SECRET: CLIENT_SECRET,
  ANTHROPIC_API_KEY: LLM_KEY,
  APP_ID: "12345",
  PATH: "/usr/bin:/bin",
};

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-redact-"));
  // A local job's runner runs as a user of its own (60998 where the app is root): it reads
  // the clone and the runner here, and writes its markers.
  await chmod(dir, 0o1777);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function leaksIn(text: string): string[] {
  return Object.entries({ KEY, KEY_LINE, WEBHOOK_SECRET, CLIENT_SECRET, LLM_KEY })
    .filter(([, value]) => text.includes(value))
    .map(([name]) => name);
}

describe("the redactor", () => {
  const redact = createRedactor(secretValues(ENV));

  it("replaces every secret value the app holds, whole or in part", () => {
    const log = [
      `key: ${KEY}`,
      `one line of it: ${KEY_LINE}`,
      `as .env holds it: ${ENV.PRIVATE_KEY}`,
      `webhook ${WEBHOOK_SECRET} client ${CLIENT_SECRET} llm ${LLM_KEY}`,
    ].join("\n");
    const out = redact.text(log);
    expect(leaksIn(out)).toEqual([]);
    expect(out).toContain(REDACTED);
    // What is not a secret stays.
    expect(out).toContain("webhook");
    expect(redact.text("APP_ID 12345 and a path /usr/bin")).toBe(
      "APP_ID 12345 and a path /usr/bin",
    );
  });

  it("replaces secrets by their shape though it was not given them (tokens minted at run time)", () => {
    const bare = createRedactor([]);
    const token = "ghs_" + "A1b2".repeat(9);
    expect(bare.text(`token ${token} key ${KEY}`)).toBe(`token ${REDACTED} key ${REDACTED}\n`);
  });

  it("redacts every string in a result, keeping its shape", () => {
    const result = { job: { id: "bench-7" }, notes: [`saw ${WEBHOOK_SECRET}`], n: 3, ok: true };
    expect(redact.deep(result)).toEqual({
      job: { id: "bench-7" },
      notes: [`saw ${REDACTED}`],
      n: 3,
      ok: true,
    });
  });

  it("reads the key from PRIVATE_KEY_PATH and a .pem file where Probot would", async () => {
    await writeFile(join(dir, "app.private-key.pem"), KEY);
    expect(secretValues({}, dir)).toContain(KEY);
    expect(secretValues({ PRIVATE_KEY_PATH: join(dir, "app.private-key.pem") })).toContain(KEY);
  });
});

describe("a local job's output, as the app posts it", () => {
  /** A local job whose runner got hold of the secrets (how is beside the point) and prints them. */
  async function leakyJob(then: string) {
    const repo = join(dir, "repo");
    await execa("git", ["init", "-q", "-b", "main", repo]);
    await writeFile(join(repo, "k.cu"), "//\n");
    await execa("git", ["-C", repo, "add", "."]);
    await execa("git", [
      "-C",
      repo,
      "-c",
      "user.email=t@e",
      "-c",
      "user.name=t",
      "commit",
      "-qm",
      "x",
    ]);
    const sha = (await execa("git", ["-C", repo, "rev-parse", "HEAD"])).stdout.trim();
    const loot = join(dir, "loot.txt");
    await writeFile(
      loot,
      `${KEY}\n${ENV.PRIVATE_KEY}\n${WEBHOOK_SECRET} ${CLIENT_SECRET} ${LLM_KEY}\n`,
    );
    const spec: JobSpec = {
      schema: 1,
      id: "bench-7-aaaaaaa-0000aa",
      kind: "bench",
      repo: { owner: "octo", name: "kernels" },
      sha,
      tasks: [],
    };
    const posted: string[] = [];
    const github = {
      repo: { owner: "octo", repo: "kernels" },
      updateCheckRun: (_: number, update: unknown) => {
        posted.push(JSON.stringify(update));
        return Promise.resolve();
      },
    } as unknown as GitHub;
    const state: AppState = {
      queue: createWorkQueue(1, () => undefined),
      seen: createSeenSet(10),
      jobs: createJobRegistry(),
      earlyRuns: createEarlyRuns(),
      log: { info() {}, warn() {}, error() {}, debug() {} } as unknown as Logger,
      dispatcherFor: () => "none",
      dispatchers: [],
      githubFor: () => Promise.resolve(github),
      jobTimeoutMs: 3_600_000,
      redact: createRedactor(secretValues(ENV)),
    };
    const job = {
      spec,
      installationId: 1,
      repo: github.repo,
      checkRunId: 900,
      threshold: 0.05,
      deadline: Date.now() + 3_600_000,
    };
    state.jobs.add(job);
    const local = createLocalDispatcher({
      repoDir: repo,
      runnerCommand: ["sh", "-c", `cat ${loot}; ${then}`, "runner"],
      gpus: 1,
      timeoutMs: 600_000,
      onDone: (_, outcome) => endJob(state, github, job, outcome, "local"),
      onError: () => undefined,
    });
    await local.start({ spec, github, workflow: "evokernel.yml", ref: "main" });
    return { state: { ...state, dispatchers: [local] }, job, local, posted };
  }

  function summaryOf(posted: string[]): string {
    expect(posted).toHaveLength(1);
    return (JSON.parse(posted[0] ?? "{}") as { output: { summary: string } }).output.summary;
  }

  it("carries none of the app's secrets, though the runner printed them all", async () => {
    const { local, posted } = await leakyJob("exit 1");
    await local.idle?.();
    const summary = summaryOf(posted);
    expect(summary).toContain("the runner exited with 1");
    expect(summary).toContain(REDACTED);
    expect(leaksIn(summary)).toEqual([]);
  });

  it("carries none of them when the job is stopped at its deadline, saying where it stood", async () => {
    const { state, job, local, posted } = await leakyJob("exec sleep 1000");
    await vi.waitFor(() => expect(local.whereIs?.(job.spec.id)).toContain("BEGIN"), {
      timeout: 600_000,
      interval: 20,
    });
    job.deadline = Date.now();
    armDeadline(state, job);
    await vi.waitFor(() => expect(posted).toHaveLength(1), { timeout: 600_000, interval: 20 });
    await local.idle?.();
    const summary = summaryOf(posted);
    expect(summary).toMatch(
      /^No result came back within 60 minutes: the runner on this machine \(GPU 0\) was still working/,
    );
    expect(summary).toContain("EVOKERNEL_JOB_TIMEOUT_MIN");
    expect(summary).toContain(REDACTED);
    expect(leaksIn(summary)).toEqual([]);
  });
});
