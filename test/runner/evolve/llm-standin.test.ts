// The LLM path end to end without a GPU or an API key: `optimize --proposer llm` through the
// CLI, against the scripted stand-in for Anthropic's Messages API
// (test/fixtures/llm-standin/server.mjs) and the stand-in harness
// (test/helpers/fake-gpu-harness.mjs), then lab/check-llm-run.mjs on what the run wrote.
// The GPU machine runs the same scripts with the real harness (lab/gpu-llm-standin.sh).
import { execa } from "execa";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { repo, runCli } from "../../helpers/cli.js";

const fixtures = fileURLToPath(new URL("../../fixtures/llm-standin/", import.meta.url));
const fakeHarness = fileURLToPath(new URL("../../helpers/fake-gpu-harness.mjs", import.meta.url));
const checker = join(repo, "lab", "check-llm-run.mjs");

type Script = {
  task: string;
  config: string;
  replies: { status?: number; file?: string; expect?: Record<string, unknown> }[];
};
type Check = { ok: boolean; what: string };
type Outputs = { script: string; requests: string; archive: string; result: string; best: string };

/** Starts the stand-in; resolves once it listens, with its URL. */
async function startStandin(script: string, requests: string) {
  const child = execa(
    process.execPath,
    [join(fixtures, "server.mjs"), "--script", script, "--requests", requests],
    { reject: false },
  );
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once("line", resolve);
    child.once("exit", () => reject(new Error("the stand-in exited before it listened")));
  });
  const ready = JSON.parse(line) as { ready: boolean; url: string };
  return { url: ready.url, child };
}

type Standin = Awaited<ReturnType<typeof startStandin>>["child"];

async function stop(child: Standin) {
  child.kill("SIGTERM");
  const ended = await child;
  return ended.exitCode;
}

/** lab/check-llm-run.mjs on a run's files: its checks, and that its exit code agrees. */
async function checkOutputs(files: Outputs): Promise<Check[]> {
  const checked = await execa(
    process.execPath,
    [
      ...[checker, "--script", files.script, "--requests", files.requests],
      ...["--archive", files.archive, "--result", files.result, "--best", files.best, "--json"],
    ],
    { reject: false },
  );
  const report = JSON.parse(checked.stdout) as { ok: boolean; checks: Check[] };
  expect(checked.exitCode).toBe(report.ok ? 0 : 1);
  return report.checks;
}

/**
 * Runs optimize on `name`'s script against the stand-in, checks the outputs, and hands them
 * to `more` before they are removed.
 */
async function runTask(
  name: string,
  more?: (files: Outputs, dir: string) => Promise<void>,
): Promise<{ checks: Check[]; stderr: string; exit: number }> {
  const scriptPath = join(fixtures, `${name}.json`);
  const script = JSON.parse(await readFile(scriptPath, "utf8")) as Script;
  const dir = await mkdtemp(join(tmpdir(), `evokernel-llm-${name}-`));
  try {
    const out = join(dir, "out");
    const files: Outputs = {
      script: scriptPath,
      requests: join(dir, "requests.jsonl"),
      archive: join(dir, "archive.jsonl"),
      result: join(out, "result.json"),
      best: join(out, "best.cu"),
    };
    const standin = await startStandin(scriptPath, files.requests);
    const proposals = script.replies.filter((reply) => reply.status === undefined).length;
    const run = await runCli(
      [
        ...["optimize", script.task, "--proposer", "llm", "--config", script.config],
        ...["--candidates", String(proposals), "--parallel", "1", "--seed", "1"],
        ...["--archive", files.archive, "--out", out],
      ],
      {
        env: {
          ANTHROPIC_API_KEY: "sk-ant-standin-not-a-key",
          ANTHROPIC_BASE_URL: standin.url,
          EVOKERNEL_PYTHON: fakeHarness,
          EVOKERNEL_SANDBOX: "off",
          EVOKERNEL_CACHE: dir,
        },
      },
    );
    expect(await stop(standin.child)).toBe(0);
    const checks = await checkOutputs(files);
    await more?.(files, dir);
    return { checks, stderr: run.stderr, exit: run.exitCode };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe("optimize --proposer llm against the scripted Messages API", () => {
  it.each(["softmax", "rmsnorm", "row_sum", "layernorm"])(
    "%s: every reply ends as its record, prompts and money as documented, the best wins",
    async (name) => {
      const { checks, stderr, exit } = await runTask(name);
      const failed = checks.filter((check) => !check.ok).map((check) => check.what);
      expect(failed, stderr).toEqual([]);
      expect(checks.length).toBeGreaterThan(20);
      expect(exit, stderr).toBe(0);
    },
    60_000,
  );

  it("the checker fails a run that does not match its script", async () => {
    const failures = await new Promise<string[][]>((resolve, reject) => {
      runTask("softmax", async (files, dir) => {
        const failed = async (changed: Partial<Outputs>) =>
          (await checkOutputs({ ...files, ...changed })).filter((c) => !c.ok).map((c) => c.what);
        const script = JSON.parse(await readFile(files.script, "utf8")) as Script;
        const noCode = script.replies.findIndex(
          (reply) => reply.expect?.["unusable"] === "no-code",
        );
        const edited = script.replies.map((reply, index) =>
          index === noCode ? { ...reply, expect: { unusable: "truncated" } } : reply,
        );
        // written beside the fixtures' folders, so that its "file" replies still resolve
        const scriptCopy = join(fixtures, `.tampered-${process.pid}.json`);
        await writeFile(scriptCopy, JSON.stringify({ ...script, replies: edited }));
        const archive = (await readFile(files.archive, "utf8"))
          .replace(/"outputTokens":412,/, '"outputTokens":413,')
          .replace(/"usd":0\.015155/, '"usd":0.0151');
        await writeFile(join(dir, "archive-tampered.jsonl"), archive);
        const result = JSON.parse(await readFile(files.result, "utf8")) as {
          run: { config: string };
        };
        await writeFile(
          join(dir, "result-free.json"),
          JSON.stringify({ ...result, run: { ...result.run, config: "free" } }),
        );
        try {
          resolve([
            await failed({ script: scriptCopy }),
            await failed({ archive: join(dir, "archive-tampered.jsonl") }),
            await failed({ result: join(dir, "result-free.json") }),
          ]);
        } finally {
          await rm(scriptCopy, { force: true });
        }
      }).catch(reject);
    });
    const [script, archive, config] = failures;
    expect(script).toEqual([
      expect.stringMatching(/recorded as unusable \(truncated\); got no-code/),
    ]);
    expect(archive).toEqual([expect.stringMatching(/candidate 1: usage .* is the scripted/)]);
    expect(config?.filter((what) => what.includes("free shows no profile")).length).toBe(8);
    expect(config?.every((what) => /free shows no (profile|insights)/.test(what))).toBe(true);
  });
});
