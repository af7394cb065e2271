// Issue 16.2: the environment of every process that handles a pull request's code is an
// allowlist. The local backend gave its runner the app's environment minus names that look
// secret (…SECRET, …TOKEN, PASSWORD), so ANTHROPIC_API_KEY, OPENAI_API_KEY, DATABASE_URL and
// AWS keys went through; now only the names in src/shared/environment.ts do, and a harness
// child (where the candidate runs) never gets a key at all.
import { execa } from "execa";
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createLocalDispatcher } from "../../src/app/dispatch/local.js";
import type { GitHub } from "../../src/app/github.js";
import type { JobSpec } from "../../src/shared/job.js";
import { runnerEnv } from "../../src/shared/environment.js";
import { jobUsesLlm } from "../../src/shared/job.js";
import { childEnv } from "../../runner/src/harness/exec.js";

// Secrets of the app and of other services an operator's machine may hold.
const SECRETS: Record<string, string> = {
  PRIVATE_KEY: "-----BEGIN RSA PRIVATE KEY-----canary",
  WEBHOOK_SECRET: "canary-webhook",
  GITHUB_TOKEN: "ghs_canary",
  OPENAI_API_KEY: "sk-canary",
  DATABASE_URL: "postgres://u:canary@db/x",
  AWS_ACCESS_KEY_ID: "AKIACANARY",
  AWS_SECRET_ACCESS_KEY: "canary",
  EVOKERNEL_PRIVATE_KEY: "canary",
  EVOKERNEL_FAKE_API_KEY: "canary",
  NODE_OPTIONS: "--require /tmp/evil.js",
  LD_PRELOAD: "/tmp/evil.so",
  PYTHONPATH: "/tmp/pr",
};
const NEEDED = {
  PATH: "/usr/bin:/bin",
  HOME: "/home/app",
  EVOKERNEL_PYTHON: "/usr/bin/python3",
  EVOKERNEL_GPU_LOCKS: "/run/evokernel",
  EVOKERNEL_FAKE_SPEED: "1.5",
};
const LLM = { ANTHROPIC_API_KEY: "sk-ant-canary", ANTHROPIC_BASE_URL: "http://127.0.0.1:1" };

describe("environments, by allowlist", () => {
  it("the runner gets the machine's basics, its settings and the LLM's key, no other secret", () => {
    const env = runnerEnv({ ...SECRETS, ...NEEDED, ...LLM }, { llm: true });
    expect(env).toEqual({ ...NEEDED, ...LLM });
  });

  it("a runner of a job without the LLM proposer gets no LLM key", () => {
    const env = runnerEnv({ ...SECRETS, ...NEEDED, ...LLM }, { llm: false });
    expect(env).toEqual(NEEDED);
  });

  it("only a job that searches with a proposer other than the tuner runs the LLM", () => {
    const base = { kind: "review" } as const;
    expect(jobUsesLlm(base)).toBe(false);
    expect(jobUsesLlm({ kind: "bench" })).toBe(false);
    expect(jobUsesLlm({ kind: "verify" })).toBe(false);
    expect(jobUsesLlm({ kind: "review", optimize: true, proposer: "tuner" })).toBe(false);
    expect(jobUsesLlm({ kind: "optimize", proposer: "tuner" })).toBe(false);
    expect(jobUsesLlm({ kind: "review", optimize: true })).toBe(true);
    expect(jobUsesLlm({ kind: "optimize", proposer: "auto" })).toBe(true);
    expect(jobUsesLlm({ kind: "optimize", proposer: "llm" })).toBe(true);
  });

  it("a harness child gets no key at all, the LLM's included", () => {
    const env = childEnv({ ...SECRETS, ...NEEDED, ...LLM }, "/cache");
    for (const name of [...Object.keys(SECRETS), ...Object.keys(LLM), "EVOKERNEL_PYTHON"]) {
      expect(env, name).not.toHaveProperty(name);
    }
    expect(env).toMatchObject({ PATH: NEEDED.PATH, EVOKERNEL_GPU_LOCKS: "/run/evokernel" });
  });
});

describe("the local backend's runner", () => {
  let dir: string;
  const saved = { ...process.env };
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "evk-runner-env-"));
    // A local job's runner runs as a user of its own (60998 where the app is root): it reads
    // the clone and the runner here, and writes its markers.
    await chmod(dir, 0o1777);
    Object.assign(process.env, SECRETS, LLM);
  });
  afterEach(async () => {
    for (const name of Object.keys(process.env)) {
      if (!(name in saved)) Reflect.deleteProperty(process.env, name);
    }
    Object.assign(process.env, saved);
    await rm(dir, { recursive: true, force: true });
  });

  /** The environment a local job's runner was started with. */
  async function runnerEnvOf(spec: Omit<JobSpec, "sha">): Promise<Record<string, string>> {
    const repo = join(dir, "repo");
    await execa("git", ["init", "-q", "-b", "main", repo]);
    await writeFile(join(repo, "kernel.cu"), "// kernel\n");
    const git = (...args: string[]) => execa("git", ["-C", repo, ...args]);
    await git("add", ".");
    await git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "x");
    const sha = (await git("rev-parse", "HEAD")).stdout.trim();
    const seen = join(dir, "env.json");
    let finished: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (finished = resolve));
    const local = createLocalDispatcher({
      repoDir: repo,
      // Stands in for the runner: writes down the environment it was given.
      runnerCommand: [
        process.execPath,
        "-e",
        `require("fs").writeFileSync(${JSON.stringify(seen)}, JSON.stringify(process.env))`,
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
    await local.start({
      spec: { ...spec, sha },
      github: {} as GitHub,
      workflow: "evokernel.yml",
      ref: "main",
    });
    await done;
    return JSON.parse(await readFile(seen, "utf8")) as Record<string, string>;
  }

  const job = { schema: 1 as const, repo: { owner: "octo", name: "kernels" }, tasks: [] };

  it("starts with none of the app's or other services' secrets in its environment", async () => {
    const env = await runnerEnvOf({ ...job, id: "optimize-x-aaaaaaa-000000", kind: "optimize" });
    for (const name of Object.keys(SECRETS)) expect(env, name).not.toHaveProperty(name);
    // An optimize job runs the LLM proposer: it alone gets the key.
    expect(env["ANTHROPIC_API_KEY"]).toBe(LLM.ANTHROPIC_API_KEY);
    expect(env["CUDA_VISIBLE_DEVICES"]).toBe("0");
  });

  it("gives a bench job, or a search by the tuner, no LLM key", async () => {
    const specs: Omit<JobSpec, "sha">[] = [
      { ...job, id: "bench-x-aaaaaaa-000001", kind: "bench" },
      { ...job, id: "review-x-aaaaaaa-000002", kind: "review" },
      { ...job, id: "optimize-x-aaaaaaa-000003", kind: "optimize", proposer: "tuner" },
    ];
    for (const spec of specs) {
      const env = await runnerEnvOf(spec);
      expect(env, spec.id).not.toHaveProperty("ANTHROPIC_API_KEY");
      expect(env, spec.id).not.toHaveProperty("ANTHROPIC_BASE_URL");
      await rm(join(dir, "repo"), { recursive: true, force: true });
    }
  });
});
