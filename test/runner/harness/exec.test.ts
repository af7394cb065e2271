// The one process seam: what a child may see of our environment, and that a timeout takes
// the child's whole process group with it.
import { describe, expect, it } from "vitest";
import { childEnv, runProcess } from "../../../runner/src/harness/exec.js";

const SECRETS = {
  GITHUB_TOKEN: "ghs_secret",
  ANTHROPIC_API_KEY: "sk-ant-secret",
  ACTIONS_RUNTIME_TOKEN: "actions-secret",
  ACTIONS_ID_TOKEN_REQUEST_URL: "https://example.invalid/token",
  AWS_SECRET_ACCESS_KEY: "aws-secret",
  EVOKERNEL_API_KEY: "evk-secret",
  EVOKERNEL_GITHUB_TOKEN: "evk-token",
  EVOKERNEL_DB_PASSWORD: "evk-password",
  EVOKERNEL_WEBHOOK_URL: "https://hooks.example.invalid/secret-path",
  OPENAI_API_KEY: "sk-openai-secret",
  DATABASE_URL: "postgres://user:secret@db/evk",
  NPM_CONFIG_USERCONFIG: "/root/.npmrc",
};

const parent: NodeJS.ProcessEnv = {
  ...process.env,
  ...SECRETS,
  EVOKERNEL_GPU_MEM_FRACTION: "0.5",
  CUDA_VISIBLE_DEVICES: "0",
};

describe("childEnv", () => {
  const env = childEnv(parent, "/cache/evk");

  it("passes no secret and nothing outside the allowlist", () => {
    for (const name of Object.keys(SECRETS)) expect(env).not.toHaveProperty(name);
    for (const value of Object.values(env)) expect(value).not.toMatch(/secret|token|password/);
  });

  it("keeps what the harness and CUDA need", () => {
    expect(env["PATH"]).toBe(process.env["PATH"]);
    expect(env["CUDA_VISIBLE_DEVICES"]).toBe("0");
    expect(env["EVOKERNEL_GPU_MEM_FRACTION"]).toBe("0.5");
  });

  it("sets no PYTHONPATH (the harness starts isolated) and keeps caches in the evokernel cache", () => {
    expect(env).not.toHaveProperty("PYTHONPATH");
    expect(env["TORCH_EXTENSIONS_DIR"]).toBe("/cache/evk/torch_extensions");
    expect(env["EVOKERNEL_CACHE"]).toBe("/cache/evk");
    expect(env["PYTHONUNBUFFERED"]).toBe("1");
    expect(env["PYTHONDONTWRITEBYTECODE"]).toBe("1");
  });
});

describe("runProcess", () => {
  it("gives a child started through the env builder no secret", async () => {
    const script = "import os, json; print(json.dumps(dict(os.environ)))";
    const ran = await runProcess("python3", ["-c", script], {
      env: childEnv(parent),
      timeoutMs: 60_000,
    });
    expect(ran.exitCode, ran.output).toBe(0);
    const seen = JSON.parse(ran.output) as Record<string, string>;
    for (const name of Object.keys(SECRETS)) expect(seen).not.toHaveProperty(name);
    expect(JSON.stringify(seen)).not.toMatch(/secret/);
    expect(seen["EVOKERNEL_GPU_MEM_FRACTION"]).toBe("0.5");
  });

  it("kills the whole process group on timeout", async () => {
    const started = performance.now();
    // The grandchild holds the output pipe open: only a group kill ends this quickly.
    const ran = await runProcess("sh", ["-c", "sleep 30 & sleep 30"], {
      env: childEnv(),
      timeoutMs: 300,
    });
    expect(ran.timedOut).toBe(true);
    expect(ran.signal).toBe("SIGKILL");
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it("keeps only the tail of a long output", async () => {
    const ran = await runProcess("sh", ["-c", "yes 0123456789 | head -c 1000000; echo END"], {
      env: childEnv(),
      timeoutMs: 30_000,
    });
    expect(ran.exitCode).toBe(0);
    expect(ran.output.length).toBeLessThanOrEqual(64 * 1024);
    expect(ran.output.trimEnd().endsWith("END")).toBe(true);
  });

  it("reports a program that does not exist instead of throwing", async () => {
    const ran = await runProcess("/nonexistent/evokernel-program", [], { env: childEnv() });
    expect(ran.exitCode).toBeNull();
    expect(ran.output).toMatch(/ENOENT|not found|nonexistent/i);
  });
});
