// What answers do the next time a kernel is judged, after a restart: a new app state (nothing
// in memory) reports a job (jobs/report.ts) against a state branch an earlier instance wrote
// (answers/store.ts), and the night lists the wrong marks (nightly/report-night.ts). GitHub
// is an in-memory stand-in behind the app's one GitHub interface.
import type { Logger } from "probot";
import { describe, expect, it } from "vitest";
import type { AppState } from "../../src/app/app-state.js";
import { changeAnswers } from "../../src/app/answers/store.js";
import type { CheckRunUpdate, GitHub, TreeEntry } from "../../src/app/github.js";
import { createEarlyRuns } from "../../src/app/early-runs.js";
import { createJobRegistry } from "../../src/app/job-registry.js";
import { reportResult } from "../../src/app/jobs/report.js";
import { reportNight } from "../../src/app/nightly/report-night.js";
import { createWorkQueue } from "../../src/app/queue.js";
import { createSeenSet } from "../../src/app/seen.js";
import { addAccept, addWrong, type WrongMark } from "../../src/shared/answers.js";
import { parseLedger } from "../../src/shared/nightly.js";
import { parseReviewResult, type ReviewResult } from "../../src/shared/review.js";
import { HEAD, reviewFixture } from "../helpers/app-harness.js";
import { gitBlobSha } from "../helpers/git-tree.js";

const SOFTMAX = "__global__ void softmax() { /* v2 */ }\n";
const LAYERNORM = "__global__ void layernorm() {}\n";

/** GitHub in memory: the state branch, the head commit's tree, and what the app wrote. */
function fakeGitHub(kernels: Record<string, string>) {
  const blobs = new Map<string, string>();
  let branch: { commit: string; files: Map<string, string> } | undefined;
  let commits = 0;
  const checkRuns: CheckRunUpdate[] = [];
  const comments: string[] = [];
  const issues: { marker: string; title: string; body: string }[] = [];
  const store = (text: string) => {
    const sha = gitBlobSha(text);
    blobs.set(sha, text);
    return sha;
  };
  // The head's tree: kernels/<name>/kernel.cu
  const folders = new Map<string, TreeEntry[]>();
  for (const [name, text] of Object.entries(kernels))
    folders.set(`tree-${name}`, [
      { name: "kernel.cu", mode: "100644", type: "blob", sha: store(text) },
    ]);
  const trees: Record<string, TreeEntry[]> = {
    [HEAD]: [{ name: "kernels", mode: "040000", type: "tree", sha: "tree-kernels" }],
    "tree-kernels": Object.keys(kernels).map((name) => ({
      name,
      mode: "040000",
      type: "tree",
      sha: `tree-${name}`,
    })),
    ...Object.fromEntries(folders),
  };
  const github = {
    repo: { owner: "octo", repo: "kernels" },
    getPull: () =>
      Promise.resolve({
        number: 7,
        headSha: HEAD,
        headRef: "faster-softmax",
        baseSha: "b".repeat(40),
        baseRef: "main",
        draft: false,
        state: "open",
        fork: false,
      }),
    upsertComment: (_: number, __: string, body: string) => {
      comments.push(body);
      return Promise.resolve();
    },
    updateCheckRun: (_: number, update: CheckRunUpdate) => {
      checkRuns.push(update);
      return Promise.resolve();
    },
    readTree: (sha: string) => Promise.resolve(trees[sha] ?? []),
    readBlob: (sha: string) => {
      const text = blobs.get(sha);
      return text === undefined
        ? Promise.reject(new Error(`no blob ${sha}`))
        : Promise.resolve(text);
    },
    readBranchFile: (_: string, path: string) =>
      Promise.resolve(
        branch === undefined ? undefined : { commit: branch.commit, text: branch.files.get(path) },
      ),
    writeBranchFiles: (
      _: string,
      parent: string | undefined,
      files: ({ path: string; content: string } | { path: string; sha: string })[],
    ) => {
      if (parent !== branch?.commit) return Promise.resolve(undefined);
      const next = new Map<string, string>();
      for (const file of files) {
        const text = "content" in file ? file.content : blobs.get(file.sha);
        if (text === undefined) throw new Error(`no blob ${"sha" in file ? file.sha : ""}`);
        store(text);
        next.set(file.path, text);
      }
      branch = { commit: `state${++commits}`, files: next };
      return Promise.resolve(branch.commit);
    },
    readConfig: () => Promise.resolve(null),
    defaultBranch: () => Promise.resolve("main"),
    listPullsByHead: () => Promise.resolve([]),
    upsertIssue: (marker: string, _: string, title: string, body: string) => {
      issues.push({ marker, title, body });
      return Promise.resolve(12);
    },
  };
  return {
    github: github as unknown as GitHub,
    checkRuns,
    comments,
    issues,
    branchFiles: () => branch?.files,
    commits: () => commits,
  };
}

function freshState(github: GitHub): AppState {
  return {
    queue: createWorkQueue(1, () => undefined),
    seen: createSeenSet(10),
    jobs: createJobRegistry(),
    earlyRuns: createEarlyRuns(),
    log: { info() {}, warn() {}, error() {}, debug() {} } as unknown as Logger,
    dispatcherFor: () => "none",
    dispatchers: [],
    githubFor: () => Promise.resolve(github),
    jobTimeoutMs: 3_600_000,
  };
}

/** The fixture's review: softmax slower than base, layernorm wrong (or left out). */
function review(options: { layernorm: boolean }): ReviewResult {
  const parsed = parseReviewResult(reviewFixture("review-7-aaaaaaa-123456"));
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const [softmax, layernorm] = parsed.result.tasks;
  if (softmax === undefined || layernorm === undefined) throw new Error("fixture changed");
  const slower = {
    ...softmax,
    timings: softmax.timings.map((config) => ({
      ...config,
      base: config.head,
      head: config.base,
      percentOfFloor: { base: config.percentOfFloor.head, head: config.percentOfFloor.base },
      speedup: 0.8,
      change: "slower" as const,
    })),
    speedup: { median: 0.8, lowerBound: 0.77, upperBound: 0.83, configs: 1 },
    regression: true,
    improvement: false,
    optimize: null,
    suggestion: null,
  };
  return { ...parsed.result, tasks: options.layernorm ? [slower, layernorm] : [slower] };
}

function job(github: GitHub) {
  return {
    spec: {
      schema: 1 as const,
      id: "review-7-aaaaaaa-123456",
      kind: "review" as const,
      repo: { owner: "octo", name: "kernels" },
      sha: HEAD,
      pr: 7,
      tasks: ["kernels/softmax", "kernels/layernorm"],
    },
    installationId: 1,
    repo: github.repo,
    checkRunId: 901,
    threshold: 3,
    deadline: Date.now() + 3_600_000,
  };
}

function mark(task: string, blob: string): WrongMark {
  return {
    task,
    blob,
    login: "maintainer",
    reason: "the reference is off at fp16",
    at: "2026-11-28T10:00:00.000Z",
    evidence: {
      pr: 5,
      sha: "e".repeat(40),
      checkRunId: 800,
      checkUrl: "https://github.com/octo/kernels/runs/800",
      runUrl: null,
      gpu: "NVIDIA H100 80GB HBM3",
      evokernel: "0.1.0",
      verdict: {
        task,
        name: task.split("/").pop() ?? task,
        outcome: "wrong",
        headline: "layernorm is wrong on 8192x8192",
        kernel: `${task}/kernel.cu`,
        reason: "mismatch",
        verifySeed: 42,
        benchSeed: null,
        speedup: null,
      },
    },
  };
}

describe("answers the next time a kernel is judged, after a restart", () => {
  it("a stored accept lets the same commit's regression pass again; a kernel marked wrong is noted", async () => {
    const fake = fakeGitHub({ softmax: SOFTMAX, layernorm: LAYERNORM });
    // An earlier instance stored the answers.
    await changeAnswers(
      fake.github,
      (answers) => {
        const accepted = addAccept(answers, {
          pr: 7,
          sha: HEAD,
          task: "kernels/softmax",
          login: "lead",
          reason: "trades speed for memory",
          at: "2026-11-28T10:00:00.000Z",
        });
        return addWrong(accepted.answers, mark("kernels/layernorm", gitBlobSha(LAYERNORM)));
      },
      "answers",
    );
    expect(fake.branchFiles()?.has("answers.json")).toBe(true);

    // A new app state reports a re-run of the job on the same commit.
    const github = fake.github;
    await reportResult(freshState(github), github, job(github), review({ layernorm: true }));
    const update = fake.checkRuns[0];
    // layernorm is still wrong: the accept of softmax cannot make the check pass.
    expect(update?.conclusion).toBe("failure");
    expect(update?.output?.summary).toContain(
      "regression accepted by @\u200Dlead: trades speed for memory",
    );
    expect(update?.output?.summary).toContain("Still failing: `layernorm`");
    expect(update?.output?.summary).toContain("**Marked wrong before**");
    expect(fake.comments[0]).toContain(
      "`layernorm`: @\u200Dmaintainer marked evokernel's verdict on this same kernel wrong on 2026-11-28",
    );
    // The buttons: a regression is still failing the check, and so is a verdict.
    expect(update?.actions?.map((action) => action.identifier)).toEqual([
      "evk-accept",
      "evk-wrong",
    ]);

    // Without layernorm, the accepted regression is all that failed: success, no Accept button.
    await reportResult(freshState(github), github, job(github), review({ layernorm: false }));
    expect(fake.checkRuns[1]).toMatchObject({
      conclusion: "success",
      output: { title: "Regression accepted by @lead: trades speed for memory" },
    });
    expect(fake.checkRuns[1]?.actions?.map((action) => action.identifier)).toEqual(["evk-wrong"]);
  });

  it("another kernel of a marked task (other content) gets no note; an accept on another commit does not hold", async () => {
    const fake = fakeGitHub({ softmax: SOFTMAX, layernorm: `${LAYERNORM}// changed\n` });
    await changeAnswers(
      fake.github,
      (answers) => {
        const accepted = addAccept(answers, {
          pr: 7,
          sha: "f".repeat(40),
          task: "kernels/softmax",
          login: "lead",
          reason: "older commit",
          at: "2026-11-28T10:00:00.000Z",
        });
        return addWrong(accepted.answers, mark("kernels/layernorm", gitBlobSha(LAYERNORM)));
      },
      "answers",
    );
    const github = fake.github;
    await reportResult(freshState(github), github, job(github), review({ layernorm: true }));
    expect(fake.checkRuns[0]?.conclusion).toBe("failure");
    expect(fake.checkRuns[0]?.output?.summary).not.toContain("accepted");
    expect(fake.checkRuns[0]?.output?.summary).not.toContain("Marked wrong before");
    expect(fake.comments[0]).not.toContain("Marked wrong before");
  });

  it("a state branch that cannot be read holds no verdict back", async () => {
    const fake = fakeGitHub({ softmax: SOFTMAX });
    const github = {
      ...fake.github,
      readBranchFile: () => Promise.reject(new Error("GitHub is down")),
    } as GitHub;
    await reportResult(freshState(github), github, job(github), review({ layernorm: false }));
    expect(fake.checkRuns[0]?.conclusion).toBe("failure");
  });
});

describe("the night's list of verdicts marked wrong", () => {
  it("is an issue written when the marks change, and not again while they do not", async () => {
    const fake = fakeGitHub({});
    await changeAnswers(
      fake.github,
      (answers) => addWrong(answers, mark("kernels/layernorm", gitBlobSha(LAYERNORM))),
      "answers",
    );
    const night = { ...review({ layernorm: false }), tasks: [] };
    const now = new Date("2026-11-29T03:00:00Z");
    const first = await reportNight(fake.github, night, { now });
    expect(first.wrongIssue).toBe(12);
    expect(fake.issues).toHaveLength(1);
    expect(fake.issues[0]?.title).toBe("evokernel: verdicts marked wrong");
    expect(fake.issues[0]?.body).toMatchSnapshot();
    // The ledger remembers what it listed, and keeps the answers beside it.
    const ledger = parseLedger(fake.branchFiles()?.get("nightly.json")).ledger;
    expect(ledger.wrongListed).toMatch(/^[0-9a-f]{16}$/);
    expect(fake.branchFiles()?.has("answers.json")).toBe(true);

    const second = await reportNight(fake.github, night, { now: new Date("2026-11-30T03:00:00Z") });
    expect(second.wrongIssue).toBeUndefined();
    expect(fake.issues).toHaveLength(1);
  });
});
