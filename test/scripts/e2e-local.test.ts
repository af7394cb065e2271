// scripts/e2e-local.mjs (the app end to end on a GPU machine) run for real on the CPU: the
// bundled app, the stand-in, and test/helpers/fake-job-runner.mjs in place of the runner
// (it writes the recorded result for whatever job it is given). One run covers the three
// phases: the PR's check run, a `/bench` comment's check run and the edited comment, and
// the nightly run that opens its pull request; summary.json says so. A phase the app never
// answers makes the script exit 1 and says which. The issue_comment payload has GitHub's shape.
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleApp } from "../../scripts/bundle.mjs";
import { issueCommentEvent } from "../helpers/github-standin.mjs";
import { issueCommentEventSchema } from "../../src/app/handlers/payloads.js";
import { suggestionBefore } from "../helpers/pr-repo.js";

const run = promisify(execFile);
const script = fileURLToPath(new URL("../../scripts/e2e-local.mjs", import.meta.url));
const fakeRunner = fileURLToPath(new URL("../helpers/fake-job-runner.mjs", import.meta.url));
const fakeResult = fileURLToPath(new URL("../fixtures/app/review-result.json", import.meta.url));

interface Phase {
  name: string;
  completed: boolean;
  timedOut: boolean;
  skipped?: string;
  checkRuns: { name: string; headSha: string; conclusion: string | null; title: string | null }[];
  comment?: { edits: number; firstLines: string[] } | null;
  reactions?: string[];
  reported?: boolean;
  night?: { pull: string; proposed: { task: string }[] } | null;
  pulls?: { number: number; head: string; title: string; firstLines: string[] }[];
  branch?: { files: string[] } | null;
}
interface Summary {
  head: string;
  phases: Phase[];
  unknownRoutes: string[];
  ok: boolean;
}

let dir: string;
let app: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "evokernel-e2e-local-test-"));
  app = await bundleApp(join(dir, "app.mjs"));
  // main: softmax is the kernel the recorded result's suggestion was made against (so the
  // night's suggestion applies to main); the PR changes both tasks the result reports.
  await mkdir(join(dir, "kernels/softmax"), { recursive: true });
  await mkdir(join(dir, "kernels/layernorm"), { recursive: true });
  await writeFile(join(dir, "kernels/softmax/kernel.cu"), suggestionBefore());
  await writeFile(join(dir, "kernels/softmax/task.json"), '{"kernel": "kernel.cu"}\n');
  await writeFile(join(dir, "kernels/layernorm/kernel.cu"), "// layernorm, base\n");
  await writeFile(join(dir, "kernels/layernorm/task.json"), '{"kernel": "kernel.cu"}\n');
  await writeFile(join(dir, "softmax.cu"), "#define BLOCK_SIZE 128\n");
  await writeFile(join(dir, "layernorm.cu"), "// layernorm, head\n");
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function e2eLocal(args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [script, ...args], {
      cwd: dir,
      env: { ...process.env, EVOKERNEL_FAKE_RESULT: fakeResult },
    });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

describe("e2e-local.mjs", () => {
  it("runs the PR, a /bench command and the nightly run, and sums them up", async () => {
    const out = join(dir, "out");
    const { code, output } = await e2eLocal([
      ...["--out", out, "--app", app, "--runner", fakeRunner, "--kernels", join(dir, "kernels")],
      ...["--change", `kernels/softmax/kernel.cu=${join(dir, "softmax.cu")}`],
      ...["--change", `kernels/layernorm/kernel.cu=${join(dir, "layernorm.cu")}`],
      ...["--command", "/bench softmax layernorm", "--nightly", "--tick-s", "1"],
    ]);
    expect(code, output).toBe(0);
    const summary = JSON.parse(await readFile(join(out, "summary.json"), "utf8")) as Summary;
    expect(summary.unknownRoutes).toEqual([]);
    expect(summary.ok).toBe(true);
    expect(summary.phases.map((phase) => [phase.name, phase.completed])).toEqual([
      ["pr", true],
      ["command /bench softmax layernorm", true],
      ["nightly", true],
    ]);
    const [pr, bench, nightly] = summary.phases as [Phase, Phase, Phase];
    // The recorded result: layernorm wrong, softmax faster.
    const verdict = "2 kernels: 1 wrong, 1 improvement";
    expect(pr.checkRuns).toEqual([
      {
        name: "evokernel",
        headSha: summary.head,
        status: "completed",
        conclusion: "failure",
        title: verdict,
      },
    ]);
    expect(pr.comment?.firstLines[0]).toBe("<!-- evokernel:comment -->");
    expect(pr.comment?.firstLines.join("\n")).toContain("`layernorm` is wrong");
    // /bench: its own check run, and the PR's one comment edited in place.
    expect(bench.checkRuns).toEqual([
      {
        name: "evokernel bench",
        headSha: summary.head,
        status: "completed",
        conclusion: "failure",
        title: verdict,
      },
    ]);
    expect(bench.reactions).toEqual(["rocket"]);
    expect(bench.comment?.edits).toBe(1);
    expect(
      await readFile(join(out, "command-1-bench-softmax-layernorm/comment.md"), "utf8"),
    ).toContain("`layernorm` is wrong");
    // The night: an optimize job on main, whose softmax win opens the nightly PR.
    expect(nightly.checkRuns.map((run) => [run.name, run.conclusion])).toEqual([
      ["evokernel optimize", "failure"],
    ]);
    expect(nightly.reported).toBe(true);
    expect(nightly.night).toEqual({
      pull: "opened",
      proposed: [{ task: "kernels/softmax", speedup: 1.25 }],
    });
    expect(nightly.pulls?.map((pull) => [pull.head, pull.title])).toEqual([
      ["evokernel/nightly", "evokernel: nightly kernel tuning"],
    ]);
    expect(nightly.branch?.files).toEqual(["kernels/softmax/kernel.cu"]);
    const ledger = JSON.parse(await readFile(join(out, "nightly/ledger.json"), "utf8")) as {
      nights: unknown[];
    };
    expect(ledger.nights).toHaveLength(1);
  });

  it("exits 1 and names the phase when the app never answers", async () => {
    // An "app" that says where it listens (as the app does, over IPC to its starter) and
    // answers every request, doing nothing.
    const silent = join(dir, "silent-app.mjs");
    await writeFile(
      silent,
      [
        'import { createServer } from "node:http";',
        "const server = createServer((req, res) => { req.resume(); res.end(); });",
        'server.listen(0, "127.0.0.1", () =>',
        '  process.send({ evokernel: "listening", port: server.address().port }));',
        'process.on("SIGTERM", () => process.exit(0));',
      ].join("\n"),
    );
    const out = join(dir, "out-silent");
    const { code, output } = await e2eLocal([
      ...["--out", out, "--app", silent, "--runner", fakeRunner, "--kernels", join(dir, "kernels")],
      ...["--change", `kernels/softmax/kernel.cu=${join(dir, "softmax.cu")}`],
      ...["--command", "/bench", "--timeout-min", "0.001", "--grace-s", "0"],
    ]);
    expect(code, output).toBe(1);
    expect(output).toContain("NOT COMPLETED: pr, command /bench");
    const summary = JSON.parse(await readFile(join(out, "summary.json"), "utf8")) as Summary;
    expect(summary.ok).toBe(false);
    expect(summary.phases.map((phase) => [phase.name, phase.completed, phase.timedOut])).toEqual([
      ["pr", false, true],
      ["command /bench", false, false],
    ]);
    expect(summary.phases[1]?.skipped).toContain("did not complete");
  });
});

describe("issueCommentEvent", () => {
  it("has every field of GitHub's issue_comment.created example, and the app reads it", () => {
    const require = createRequire(import.meta.url);
    const examples = require("@octokit/webhooks-examples/api.github.com/index.json") as {
      name: string;
      examples: Record<string, unknown>[];
    }[];
    const example = examples
      .find((entry) => entry.name === "issue_comment")
      ?.examples.find((payload) => payload.action === "created" && payload.installation);
    expect(example).toBeDefined();
    const payload = issueCommentEvent({ number: 1, body: "/bench softmax", commentId: 7 });
    const keys = (value: unknown) => Object.keys(value as object).sort();
    expect(keys(payload)).toEqual(expect.arrayContaining(keys(example)));
    const parts = ["issue", "comment", "repository", "organization", "sender", "installation"];
    for (const part of parts) {
      expect(keys(payload[part]), part).toEqual(expect.arrayContaining(keys(example?.[part])));
    }
    const userOf = (value: unknown) => (value as { user: unknown }).user;
    expect(keys(userOf(payload.comment))).toEqual(
      expect.arrayContaining(keys(userOf(example?.comment))),
    );
    // On a pull request: the issue carries GitHub's pull_request links.
    expect(keys((payload.issue as { pull_request: unknown }).pull_request)).toEqual([
      "diff_url",
      "html_url",
      "merged_at",
      "patch_url",
      "url",
    ]);
    const parsed = issueCommentEventSchema.parse(payload);
    expect(parsed.comment).toMatchObject({ id: 7, body: "/bench softmax", user: { type: "User" } });
    expect(parsed.issue.pull_request).toBeDefined();
  });
});
