// The nightly tuning run against strict nock (every request mocked, every mock used): the
// scheduler claiming windows (two instances racing, a restart catching up), and the night's
// report creating, updating, skipping and rebuilding the one pull request, never proposing
// a turned-down kernel again, and keeping the drift issue. Every body is a snapshot.
import { execFileSync } from "node:child_process";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createGitHub, type GitHub, type InstalledRepo } from "../../src/app/github.js";
import { evokernelOctokit } from "../../src/app/octokit.js";
import { sourceHash } from "../../src/app/nightly/night.js";
import { reportNight } from "../../src/app/nightly/report-night.js";
import { createNightlyScheduler, type NightStart } from "../../src/app/nightly-scheduler.js";
import { isNightlyJob, nightlySpec } from "../../src/app/nightly/spec.js";
import { renderNightlyPull } from "../../src/report/nightly.js";
import { parseConfig } from "../../src/shared/config.js";
import { historyPaths } from "../../src/shared/history.js";
import { EMPTY_LEDGER, type Ledger, parseLedger } from "../../src/shared/nightly.js";
import type { ReviewResult, TaskReview } from "../../src/shared/review.js";
import {
  API,
  CONFIG_PATH,
  OWNER,
  REPO,
  startHarness,
  strictNock,
  workflowRunPayload,
} from "../helpers/app-harness.js";
import { writeZip } from "../helpers/zip-writer.js";
import { optimizeResult, passedTask, timing } from "../helpers/review-fixtures.js";
import { headTree } from "../helpers/git-tree.js";

const R = `/repos/${OWNER}/${REPO}`;
const SHA = "d".repeat(40);
const MOVED = "e".repeat(40);
const CONFIG = 'nightly:\n  schedule: "0 3 * * *"\n  threshold: 5\n';
const STATE_REF_PATH = `${R}/git/ref/heads%2Fevokernel-state`;
const BRANCH_REF = `${R}/git/ref/heads%2Fevokernel%2Fnightly`;
const PULLS_QUERY = {
  head: `${OWNER}:evokernel/nightly`,
  state: "all",
  sort: "created",
  direction: "desc",
  per_page: 20,
};

let mocks: { done(): void };
let bodies: Record<string, unknown[]>;

beforeEach(() => {
  mocks = strictNock();
  bodies = {};
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

function gitHub(): GitHub {
  const Octokit = evokernelOctokit({ throttle: false, retry: false });
  return createGitHub(new Octokit({ auth: "test" }), { owner: OWNER, repo: REPO });
}

const spread = (ms: number, noise = 0.02) => ({
  medianMs: ms,
  p20Ms: ms * (1 - noise),
  p80Ms: ms * (1 + noise),
});

const H100 = { gpu: "NVIDIA H100 80GB HBM3", driver: "580.159.04", cuda: "13.0", torch: "2.11.0" };

/** A task whose current kernel ran `headMs` (beside eager 2 ms, torch.compile `compileMs`). */
function timed(name: string, headMs: number, compileMs = 1.5): TaskReview {
  return passedTask(name, [
    timing("8192x8192", null, null, { head: spread(headMs), compile: spread(compileMs) }),
  ]);
}

/** A task whose optimize run found `source`, `speedup` faster (lower bound `lowerBound`). */
function won(name: string, source: string, speedup: number, lowerBound: number): TaskReview {
  return {
    ...timed(name, 0.5),
    optimize: (() => {
      const result = optimizeResult({
        speedup: { baseline: speedup, lowerBound, eager: 5, compile: 3.75 },
        win: lowerBound > 1,
      });
      // The win's own records: verified on every configuration, its best kernel the source.
      const verified = ["8192x8192", "32768x1024", "odd-4097x5003", "tall-12289x999"];
      return {
        ...result,
        verification: {
          ...result.verification,
          configs: verified.map((config) => ({
            name: config,
            heldout: config.startsWith("tall"),
            ok: true,
            reason: null,
          })),
        },
        best: result.best === null ? null : { ...result.best, source },
      };
    })(),
    suggestion: { path: `kernels/${name}/kernel.cu`, before: "// old\n", after: source },
  };
}

function nightReview(
  tasks: TaskReview[],
  options: { sha?: string; night?: string; device?: Partial<typeof H100> } = {},
): ReviewResult {
  const sha = options.sha ?? SHA;
  const config = parseConfig({ nightly: {} });
  if (!config.ok) throw new Error("config");
  return {
    schema: 1,
    kind: "review",
    job: {
      ...nightlySpec({ owner: OWNER, repo: REPO }, config.config, sha),
      id: "optimize-nightly-ddddddd-000000",
    },
    threshold: 3,
    tasks,
    device: { ...H100, ...options.device, python: "3.12.3", evokernel: "0.1.0" },
    startedAt: "2026-11-23T03:00:00.000Z",
    finishedAt: options.night ?? "2026-11-23T03:40:00.000Z",
  };
}

function ledger(extra: Partial<Ledger>): Ledger {
  return { ...EMPTY_LEDGER, ...extra };
}

function proposal(task: string, source: string, night = "2026-11-22T03:40:00.000Z") {
  return {
    task: `kernels/${task}`,
    path: `kernels/${task}/kernel.cu`,
    hash: sourceHash(source),
    beforeMs: 0.5,
    afterMs: 0.4,
    speedup: 1.25,
    lowerBound: 1.2,
    eager: 5,
    compile: 3.75,
    night,
    source,
  };
}

/** The reads every night makes: config, repository, ledger, the PRs from the branch. */
function mockReads(
  options: { stored?: Ledger; pulls?: unknown[]; config?: string } = {},
): nock.Scope {
  const scope = nock(API)
    .get(CONFIG_PATH)
    .reply(200, options.config ?? CONFIG, { "content-type": "text/plain; charset=utf-8" })
    .get(R)
    .reply(200, { default_branch: "main" });
  if (options.stored === undefined) {
    scope.get(STATE_REF_PATH).reply(404, { message: "Not Found" });
  } else {
    scope
      .get(STATE_REF_PATH)
      .reply(200, { object: { sha: "state1" } })
      .get(`${R}/contents/nightly.json`)
      .query({ ref: "state1" })
      .reply(200, {
        encoding: "base64",
        content: Buffer.from(JSON.stringify(options.stored)).toString("base64"),
      })
      // The state branch's files, for the history written beside the ledger (none yet).
      .get(`${R}/git/trees/state1`)
      .reply(200, {
        sha: "roottree",
        tree: [{ path: "nightly.json", mode: "100644", type: "blob", sha: "ledgerblob" }],
      });
  }
  return scope
    .get(`${R}/pulls`)
    .query(PULLS_QUERY)
    .reply(200, options.pulls ?? []);
}

/** The kernels committed on `parent` and the branch created (or, when it exists, moved). */
function mockCommit(scope: nock.Scope, parent: string, files: number, exists: boolean): void {
  scope.get(`${R}/git/commits/${parent}`).reply(200, { sha: parent, tree: { sha: "basetree" } });
  for (let i = 0; i < files; i++)
    scope.post(`${R}/git/blobs`, record("blob")).reply(201, { sha: `blob${i}` });
  scope
    .post(`${R}/git/trees`, record("tree"))
    .reply(201, { sha: "tree1" })
    .post(`${R}/git/commits`, record("commit"))
    .reply(201, { sha: "nightcommit" });
  if (exists) {
    scope
      .post(`${R}/git/refs`, { ref: "refs/heads/evokernel/nightly", sha: "nightcommit" })
      .reply(422, { message: "Reference already exists" })
      .patch(`${R}/git/refs/heads%2Fevokernel%2Fnightly`, { sha: "nightcommit", force: true })
      .reply(200, {});
  } else {
    scope
      .post(`${R}/git/refs`, { ref: "refs/heads/evokernel/nightly", sha: "nightcommit" })
      .reply(201, {});
  }
}

/** The ledger written back: a tree with nightly.json, a commit on the last, the ref moved. */
function mockLedgerWrite(scope: nock.Scope, stored: boolean): void {
  scope
    .post(`${R}/git/trees`, record("ledgerTree"))
    .reply(201, { sha: "statetree" })
    .post(`${R}/git/commits`, record("ledgerCommit"))
    .reply(201, { sha: "state2" });
  if (stored) {
    scope
      .patch(`${R}/git/refs/heads%2Fevokernel-state`, { sha: "state2", force: false })
      .reply(200, {});
  } else {
    scope
      .post(`${R}/git/refs`, { ref: "refs/heads/evokernel-state", sha: "state2" })
      .reply(201, {});
  }
}

/** The ledger written back: nightly.json of the state branch's new tree. */
function writtenLedger(): Ledger {
  const tree = bodies.ledgerTree?.[0] as { tree: { path: string; content?: string }[] };
  return parseLedger(tree.tree.find((entry) => entry.path === "nightly.json")?.content).ledger;
}

const SOFTMAX = "// softmax, BLOCK_SIZE 512\n";
const LAYERNORM = "// layernorm, two rows a warp\n";

describe("the nightly pull request", () => {
  it("is created with the verified wins beyond the threshold, as the app's commits", async () => {
    const scope = mockReads();
    mockCommit(scope, SHA, 1, false);
    scope.post(`${R}/pulls`, record("pull")).reply(201, {
      number: 31,
      state: "open",
      html_url: `https://github.com/${OWNER}/${REPO}/pull/31`,
    });
    mockLedgerWrite(scope, false);
    const review = nightReview([
      won("softmax", SOFTMAX, 1.25, 1.2),
      // A win, but within the configured 5%: not proposed.
      won("rmsnorm", "// rmsnorm\n", 1.06, 1.03),
      timed("layernorm", 0.8),
    ]);
    const report = await reportNight(gitHub(), review, {
      now: new Date(review.finishedAt),
      runUrl: "https://github.com/octo/kernels/actions/runs/77",
    });
    expect(report).toEqual({ pull: "opened", pr: 31, proposed: 1, drifted: 0 });
    expect(bodies.blob).toEqual([{ content: SOFTMAX, encoding: "utf-8" }]);
    expect(bodies.tree).toEqual([
      {
        base_tree: "basetree",
        tree: [{ path: "kernels/softmax/kernel.cu", mode: "100644", type: "blob", sha: "blob0" }],
      },
    ]);
    expect(bodies.commit).toMatchSnapshot("commit");
    const pull = bodies.pull?.[0] as { head: string; base: string; title: string; body: string };
    expect(pull.head).toBe("evokernel/nightly");
    expect(pull.base).toBe("main");
    expect(pull.body).toMatchSnapshot("PR body");
    const written = writtenLedger();
    expect(written.branch).toEqual({ base: SHA, pr: 31 });
    expect(written.proposals.map((entry) => entry.task)).toEqual(["kernels/softmax"]);
    // Bounded state: the source is a blob of its own on the state branch, named by git's
    // object id in nightly.json, which holds no source.
    const stateTree = (bodies.ledgerTree?.[0] as { tree: { path: string; content?: string }[] })
      .tree;
    const hash = sourceHash(SOFTMAX);
    // Beside the ledger, in the same commit: every timed task's history and chart, the
    // history's index and its page.
    const paths = stateTree.map((entry) => entry.path);
    expect(paths.slice(0, 2)).toEqual(["nightly.json", `sources/${hash}`]);
    expect(paths.slice(2)).toEqual([
      ...["softmax", "rmsnorm", "layernorm"].flatMap((task) => {
        const { json, svg } = historyPaths(`kernels/${task}`);
        return [json, svg];
      }),
      "history/index.json",
      "history/index.html",
    ]);
    const softmax = stateTree.find((entry) => entry.path === historyPaths("kernels/softmax").json);
    expect(JSON.parse(softmax?.content ?? "null")).toEqual({
      schema: 1,
      task: "kernels/softmax",
      entries: [
        {
          kind: "nightly",
          at: "2026-11-23T03:40:00.000Z",
          sha: SHA,
          pr: null,
          gpu: H100.gpu,
          configs: [
            {
              name: "8192x8192",
              kernelMs: 0.5,
              eagerMs: 2,
              compileMs: 1.5,
              floorMs: 0.25,
            },
          ],
        },
      ],
    });
    expect(stateTree[1]?.content).toBe(SOFTMAX);
    expect(stateTree[0]?.content).not.toContain('"source"');
    expect(written.proposals[0]?.sourceBlob).toBe(
      execFileSync("git", ["hash-object", "--stdin"], { input: SOFTMAX, encoding: "utf8" }).trim(),
    );
    expect(written.timings?.tasks.map((entry) => entry.task)).toEqual([
      "kernels/softmax",
      "kernels/rmsnorm",
      "kernels/layernorm",
    ]);
    expect(bodies.ledgerCommit).toEqual([
      {
        message: "evokernel nightly 2026-11-23T03:40:00.000Z: opened, 1 proposed, 0 drifted",
        tree: "statetree",
        parents: [],
      },
    ]);
  });

  it("is updated in place with a commit on top when the default branch has not moved", async () => {
    const stored = ledger({
      branch: { base: SHA, pr: 31 },
      proposals: [proposal("softmax", SOFTMAX)],
      nights: [
        {
          at: "2026-11-22T03:40:00.000Z",
          sha: SHA,
          runner: H100,
          proposed: [{ task: "kernels/softmax", speedup: 1.25 }],
          timed: 2,
          drifted: 0,
          pull: "opened",
        },
      ],
    });
    const scope = mockReads({
      stored,
      pulls: [
        {
          number: 31,
          state: "open",
          merged_at: null,
          html_url: "https://github.com/octo/kernels/pull/31",
        },
      ],
    });
    scope.get(BRANCH_REF).reply(200, { object: { sha: "branchhead" } });
    mockCommit(scope, "branchhead", 1, true);
    scope.patch(`${R}/pulls/31`, record("pullUpdate")).reply(200, {});
    mockLedgerWrite(scope, true);
    const review = nightReview([
      // The same kernel again: already on the branch, not committed twice.
      won("softmax", SOFTMAX, 1.24, 1.19),
      won("layernorm", LAYERNORM, 1.4, 1.3),
    ]);
    const report = await reportNight(gitHub(), review, { now: new Date(review.finishedAt) });
    expect(report).toEqual({ pull: "updated", pr: 31, proposed: 1, drifted: 0 });
    expect(bodies.blob).toEqual([{ content: LAYERNORM, encoding: "utf-8" }]);
    expect((bodies.commit?.[0] as { parents: string[] }).parents).toEqual(["branchhead"]);
    const update = bodies.pullUpdate?.[0] as { body: string };
    expect(update.body).toMatchSnapshot("PR body, updated");
    expect(writtenLedger().proposals.map((entry) => entry.task)).toEqual([
      "kernels/softmax",
      "kernels/layernorm",
    ]);
  });

  it("is left as it is when nothing improved", async () => {
    const stored = ledger({
      branch: { base: SHA, pr: 31 },
      proposals: [proposal("softmax", SOFTMAX)],
      timings: { at: "2026-11-22T03:40:00.000Z", runner: H100, tasks: [] },
    });
    const scope = mockReads({
      stored,
      pulls: [
        {
          number: 31,
          state: "open",
          merged_at: null,
          html_url: "https://github.com/octo/kernels/pull/31",
        },
      ],
    });
    mockLedgerWrite(scope, true);
    const review = nightReview([timed("softmax", 0.4), won("layernorm", LAYERNORM, 1.02, 0.98)]);
    const report = await reportNight(gitHub(), review, { now: new Date(review.finishedAt) });
    expect(report).toEqual({ pull: "unchanged", pr: 31, proposed: 0, drifted: 0 });
    expect(writtenLedger().nights.map((night) => night.pull)).toEqual(["unchanged"]);
  });

  it("is rebuilt on the default branch when that moved, force-moving the branch", async () => {
    const stored = ledger({
      branch: { base: SHA, pr: 31 },
      proposals: [proposal("softmax", SOFTMAX)],
    });
    const scope = mockReads({
      stored,
      pulls: [
        {
          number: 31,
          state: "open",
          merged_at: null,
          html_url: "https://github.com/octo/kernels/pull/31",
        },
      ],
    });
    mockCommit(scope, MOVED, 1, true);
    scope.patch(`${R}/pulls/31`, record("pullUpdate")).reply(200, {});
    mockLedgerWrite(scope, true);
    const review = nightReview([won("layernorm", LAYERNORM, 1.4, 1.3), timed("softmax", 0.5)], {
      sha: MOVED,
    });
    const report = await reportNight(gitHub(), review, { now: new Date(review.finishedAt) });
    expect(report).toEqual({ pull: "rebuilt", pr: 31, proposed: 1, drifted: 0 });
    expect((bodies.commit?.[0] as { parents: string[] }).parents).toEqual([MOVED]);
    expect((bodies.pullUpdate?.[0] as { body: string }).body).toMatchSnapshot("PR body, rebuilt");
    expect(writtenLedger().branch).toEqual({ base: MOVED, pr: 31 });
    expect(writtenLedger().proposals.map((entry) => entry.task)).toEqual(["kernels/layernorm"]);
  });

  it("never proposes a kernel again after its PR was closed unmerged", async () => {
    const stored = ledger({
      branch: { base: SHA, pr: 31 },
      proposals: [proposal("softmax", SOFTMAX)],
    });
    const scope = mockReads({
      stored,
      pulls: [
        {
          number: 31,
          state: "closed",
          merged_at: null,
          html_url: "https://github.com/octo/kernels/pull/31",
        },
      ],
    });
    mockLedgerWrite(scope, true);
    const review = nightReview([won("softmax", SOFTMAX, 1.25, 1.2)]);
    const report = await reportNight(gitHub(), review, { now: new Date(review.finishedAt) });
    expect(report).toEqual({ pull: "none", proposed: 0, drifted: 0 });
    const written = writtenLedger();
    expect(written.rejected).toEqual([sourceHash(SOFTMAX)]);
    expect(written.branch).toBeNull();
    expect(written.proposals).toEqual([]);
  });

  it("opens a new PR after a close for a different kernel, never two open", async () => {
    const stored = ledger({ rejected: [sourceHash(SOFTMAX)] });
    const scope = mockReads({
      stored,
      pulls: [
        {
          number: 31,
          state: "closed",
          merged_at: null,
          html_url: "https://github.com/octo/kernels/pull/31",
        },
      ],
    });
    mockCommit(scope, SHA, 1, true);
    scope.post(`${R}/pulls`, record("pull")).reply(201, {
      number: 32,
      state: "open",
      html_url: "https://github.com/octo/kernels/pull/32",
    });
    mockLedgerWrite(scope, true);
    const review = nightReview([
      won("softmax", SOFTMAX, 1.3, 1.25),
      won("layernorm", LAYERNORM, 1.4, 1.3),
    ]);
    const report = await reportNight(gitHub(), review, { now: new Date(review.finishedAt) });
    expect(report).toEqual({ pull: "opened", pr: 32, proposed: 1, drifted: 0 });
    expect(bodies.blob).toEqual([{ content: LAYERNORM, encoding: "utf-8" }]);
  });
});

describe("the drift watch", () => {
  const lastNight = {
    at: "2026-11-22T03:40:00.000Z",
    runner: H100,
    tasks: [
      {
        task: "kernels/softmax",
        configs: [
          { name: "8192x8192", kernel: spread(0.5), eager: spread(2), compile: spread(1.5) },
        ],
      },
      {
        task: "kernels/layernorm",
        configs: [{ name: "8192x8192", kernel: spread(0.8), eager: spread(2), compile: spread(1) }],
      },
    ],
  };

  it("keeps an issue updated when a runner upgrade moved kernels and nothing is proposed", async () => {
    const scope = mockReads({ stored: ledger({ timings: lastNight }) });
    scope
      .get(`${R}/issues`)
      .query({ labels: "evokernel", state: "open", per_page: 100 })
      .reply(200, [
        { number: 12, body: "someone else's issue" },
        { number: 13, body: "<!-- evokernel:drift -->\nlast time" },
      ])
      .patch(`${R}/issues/13`, record("issue"))
      .reply(200, {});
    mockLedgerWrite(scope, true);
    const review = nightReview([timed("softmax", 0.6), timed("layernorm", 0.8, 0.6)], {
      device: { driver: "590.10", torch: "2.12.0" },
    });
    const report = await reportNight(gitHub(), review, { now: new Date(review.finishedAt) });
    expect(report).toEqual({ pull: "none", proposed: 0, drifted: 2, issue: 13 });
    const issue = bodies.issue?.[0] as { title: string; body: string };
    expect(issue.title).toBe("evokernel: kernel drift on the GPU runner");
    expect(issue.body).toMatchSnapshot("drift issue body");
  });

  it("opens the issue when there is none, and says nothing without a runner change", async () => {
    const scope = mockReads({ stored: ledger({ timings: lastNight }) });
    scope
      .get(`${R}/issues`)
      .query({ labels: "evokernel", state: "open", per_page: 100 })
      .reply(200, [])
      .post(`${R}/issues`, record("issueCreate"))
      .reply(201, { number: 14 });
    mockLedgerWrite(scope, true);
    const upgraded = nightReview([timed("softmax", 0.6)], { device: { cuda: "13.1" } });
    expect(await reportNight(gitHub(), upgraded, { now: new Date(upgraded.finishedAt) })).toEqual({
      pull: "none",
      proposed: 0,
      drifted: 1,
      issue: 14,
    });
    expect((bodies.issueCreate?.[0] as { labels: string[] }).labels).toEqual(["evokernel"]);

    // The same slowdown on the same runner is the kernel's own business: no drift.
    const again = mockReads({ stored: ledger({ timings: lastNight }) });
    mockLedgerWrite(again, true);
    bodies = {};
    const same = nightReview([timed("softmax", 0.6)]);
    expect(await reportNight(gitHub(), same, { now: new Date(same.finishedAt) })).toEqual({
      pull: "none",
      proposed: 0,
      drifted: 0,
    });
  });

  it("goes into the PR body when there is a PR", async () => {
    const stored = ledger({
      branch: { base: SHA, pr: 31 },
      proposals: [proposal("softmax", SOFTMAX)],
      timings: lastNight,
    });
    const scope = mockReads({
      stored,
      pulls: [
        {
          number: 31,
          state: "open",
          merged_at: null,
          html_url: "https://github.com/octo/kernels/pull/31",
        },
      ],
    });
    scope.patch(`${R}/pulls/31`, record("pullUpdate")).reply(200, {});
    mockLedgerWrite(scope, true);
    const review = nightReview([timed("softmax", 0.5), timed("layernorm", 0.8, 0.6)], {
      device: { torch: "2.12.0" },
    });
    const report = await reportNight(gitHub(), review, { now: new Date(review.finishedAt) });
    expect(report).toEqual({ pull: "unchanged", pr: 31, proposed: 0, drifted: 1 });
    expect((bodies.pullUpdate?.[0] as { body: string }).body).toMatchSnapshot("PR body with drift");
  });
});

describe("the nightly scheduler", () => {
  const REPOS: InstalledRepo[] = [
    { installationId: 1, repo: { owner: OWNER, repo: REPO }, defaultBranch: "main" },
  ];

  /** An instance of the app; `clock.now` moves its time, `listed` counts repository listings. */
  function scheduler(
    now: string | { now: string },
    started: NightStart[],
    seen = new Set<string>(),
    listed = { count: 0 },
  ) {
    const clock = typeof now === "string" ? { now } : now;
    return createNightlyScheduler({
      listRepos: () => {
        listed.count++;
        return Promise.resolve(REPOS);
      },
      githubFor: () => Promise.resolve(gitHub()),
      start: (night) => {
        started.push(night);
        return Promise.resolve();
      },
      now: () => new Date(clock.now),
      graceMs: 6 * 3_600_000,
      first: (key) => !seen.has(key) && Boolean(seen.add(key)),
      onError: (label, error) => {
        throw new Error(label, { cause: error });
      },
    });
  }

  /**
   * One instance's tick: config, the default branch, then the claim on the state branch
   * (created here: `claim` is GitHub's answer, 422 when another instance created it first),
   * or, with `claimed`, a state branch that already records the window.
   */
  function mockTick(claim: 201 | 422 | "claimed"): void {
    const scope = nock(API)
      .get(CONFIG_PATH)
      .reply(200, CONFIG, { "content-type": "text/plain; charset=utf-8" })
      .get(`${R}/git/ref/heads%2Fmain`)
      .reply(200, { object: { sha: SHA } });
    if (claim === "claimed") {
      scope
        .get(STATE_REF_PATH)
        .reply(200, { object: { sha: "state1" } })
        .get(`${R}/contents/nightly.json`)
        .query({ ref: "state1" })
        .reply(200, {
          encoding: "base64",
          content: Buffer.from(
            JSON.stringify({ ...EMPTY_LEDGER, claimed: "2026-11-23T03:00:00.000Z" }),
          ).toString("base64"),
        });
      return;
    }
    scope
      .get(STATE_REF_PATH)
      .reply(404, { message: "Not Found" })
      .post(`${R}/git/trees`, record("claimTree"))
      .reply(201, { sha: "claimtree" })
      .post(`${R}/git/commits`, record("claimCommit"))
      .reply(201, { sha: "claim1" })
      .post(`${R}/git/refs`, { ref: "refs/heads/evokernel-state", sha: "claim1" })
      .reply(claim, claim === 201 ? {} : { message: "Reference already exists" });
    // The loser reads what the winner wrote: another ledger, so no second try.
    if (claim === 422)
      scope
        .get(STATE_REF_PATH)
        .reply(200, { object: { sha: "claim1" } })
        .get(`${R}/contents/nightly.json`)
        .query({ ref: "claim1" })
        .reply(200, {
          encoding: "base64",
          content: Buffer.from(
            JSON.stringify({ ...EMPTY_LEDGER, claimed: "2026-11-23T03:00:00.000Z" }),
          ).toString("base64"),
        });
  }

  it("lets exactly one of two instances claim a window", async () => {
    mockTick(201);
    mockTick(422);
    const started: NightStart[] = [];
    const [a, b] = await Promise.all([
      scheduler("2026-11-23T03:00:20Z", started).tick(),
      scheduler("2026-11-23T03:00:40Z", started).tick(),
    ]);
    expect([...(a ?? []), ...(b ?? [])]).toEqual([
      "octo/kernels@evokernel/nightly/2026-11-23T03-00Z",
    ]);
    expect(started).toHaveLength(1);
    expect(started[0]?.sha).toBe(SHA);
    const spec = nightlySpec({ owner: OWNER, repo: REPO }, started[0]!.config, SHA);
    expect(isNightlyJob(spec)).toBe(true);
    expect({ ...spec, id: "RANDOM" }).toMatchSnapshot("night job spec");
  });

  it("catches up a window missed while the app was down, once per instance", async () => {
    mockTick(201);
    const started: NightStart[] = [];
    const clock = { now: "2026-11-23T05:17:00Z" };
    const listed = { count: 0 };
    const instance = scheduler(clock, started, new Set(), listed);
    expect(await instance.tick()).toEqual(["octo/kernels@evokernel/nightly/2026-11-23T03-00Z"]);
    // The next minute: repositories and config from memory, the claimed window left alone.
    clock.now = "2026-11-23T05:18:00Z";
    expect(await instance.tick()).toEqual([]);
    // Ten minutes on, both are read again; the window is still this instance's done one.
    clock.now = "2026-11-23T05:28:00Z";
    nock(API).get(CONFIG_PATH).reply(200, CONFIG, { "content-type": "text/plain; charset=utf-8" });
    expect(await instance.tick()).toEqual([]);
    expect(listed.count).toBe(2);
    expect(started).toHaveLength(1);
  });

  it("does not run a window twice across a restart: the state branch records it", async () => {
    mockTick("claimed");
    const started: NightStart[] = [];
    expect(await scheduler("2026-11-23T05:30:00Z", started).tick()).toEqual([]);
    expect(started).toEqual([]);
  });

  it("runs nothing where nightly is not configured, or outside the grace period", async () => {
    nock(API)
      .get(CONFIG_PATH)
      .reply(200, "pullRequests: bench\n", { "content-type": "text/plain; charset=utf-8" })
      .get(CONFIG_PATH)
      .reply(200, CONFIG, { "content-type": "text/plain; charset=utf-8" });
    const started: NightStart[] = [];
    expect(await scheduler("2026-11-23T03:00:00Z", started).tick()).toEqual([]);
    expect(await scheduler("2026-11-23T10:00:00Z", started).tick()).toEqual([]);
    expect(started).toEqual([]);
  });
});

describe("a night's result, through the app", () => {
  it("is reported on its check run by the path /optimize takes, then the PR is opened", async () => {
    const harness = await startHarness();
    const review = nightReview([won("softmax", SOFTMAX, 1.25, 1.2), timed("layernorm", 0.8)]);
    const jobId = review.job.id;
    nock(API)
      .get(CONFIG_PATH)
      .reply(200, CONFIG, { "content-type": "text/plain; charset=utf-8" })
      .get(`${R}/actions/runs/4343/artifacts`)
      .query({ name: "evokernel-result", per_page: 100 })
      .reply(200, {
        total_count: 1,
        artifacts: [{ id: 78, name: "evokernel-result", expired: false }],
      })
      .get(`${R}/actions/artifacts/78/zip`)
      .reply(302, "", { location: "https://blob.example.test/night.zip" })
      // After a restart: the job is found from its check run's external_id.
      .get(`${R}/commits/${SHA}/check-runs`)
      .query({ per_page: 100 })
      .reply(200, {
        total_count: 1,
        check_runs: [
          {
            id: 950,
            name: "evokernel optimize",
            head_sha: SHA,
            status: "in_progress",
            external_id: `${jobId}@4343`,
            details_url: "https://github.com/octo/kernels/actions/runs/4343",
          },
        ],
      })
      .patch(`${R}/check-runs/950`, record("check"))
      .reply(200, { id: 950 });
    nock("https://blob.example.test")
      .get("/night.zip")
      .reply(200, writeZip({ "evokernel-result.json": JSON.stringify(review) }), {
        "content-type": "application/zip",
      });
    const scope = mockReads();
    // The app checks the suggested kernel against the head commit's tree before it counts.
    headTree(SHA, {
      "kernels/softmax/task.json": '{"kernel": "kernel.cu"}',
      "kernels/softmax/kernel.cu": "// old\n",
    }).mockWalk(scope, R, ["kernels/softmax/kernel.cu"], ["kernels/softmax/task.json"]);
    mockCommit(scope, SHA, 1, false);
    scope.post(`${R}/pulls`, record("pull")).reply(201, {
      number: 40,
      state: "open",
      html_url: "https://github.com/octo/kernels/pull/40",
    });
    mockLedgerWrite(scope, false);
    await harness.receive("workflow_run", workflowRunPayload(4343, "success"));
    const check = bodies.check?.[0] as { conclusion: string; output: { title: string } };
    expect(check.conclusion).toBe("success");
    expect(check.output.title).toMatchSnapshot("night check run title");
    const pull = bodies.pull?.[0] as { body: string };
    expect(pull.body).toContain(
      "[last night's run](https://github.com/octo/kernels/actions/runs/4343)",
    );
  });
});

describe("the PR body", () => {
  it("fits GitHub's 65,536 characters by showing fewer nights, newest first", () => {
    const tasks = Array.from({ length: 40 }, (_, i) => `kernels/a-rather-long-task-name-${i}`);
    const nights = Array.from({ length: 90 }, (_, i) => ({
      at: new Date(Date.UTC(2026, 7, 1 + i, 3, 40)).toISOString(),
      sha: SHA,
      runner: H100,
      proposed: tasks.map((task) => ({ task, speedup: 1.1 })),
      timed: 40,
      drifted: 0,
      pull: "updated" as const,
    }));
    const body = renderNightlyPull({
      defaultBranch: "main",
      base: SHA,
      proposals: [proposal("softmax", SOFTMAX)],
      nights,
      drift: [],
      runnerChanges: [],
      threshold: 3,
      rejected: 2,
    });
    expect(body.length).toBeLessThanOrEqual(65_536);
    expect(body).toContain("| 2026-10-29 03:40 |");
    expect(body).toMatch(/\d+ earlier nights left out/);
    expect(body).toContain("2 kernels turned down earlier are not proposed again.");
  });
});
