// The history on the state branch, against an in-memory branch that behaves as GitHub's git
// API does (a commit holds exactly the files it names; a ref moves only as a fast-forward):
// a PR's timings kept at its review and moved into the task's history at its merge (not
// when closed, not for a commit other than the one merged), every other file of the branch
// carried; a writer that lost the race retries; and the night's ledger write carries the
// history, retrying over a history write but never over another instance's ledger.
import nock from "nock";
import { describe, expect, it } from "vitest";
import type { BranchFile, GitHub, TreeEntry } from "../../src/app/github.js";
import { recordPullClosed, recordPullReview } from "../../src/app/history.js";
import { claimWindow, gitBlobSha, readLedger, writeLedger } from "../../src/app/state-branch.js";
import {
  addPending,
  EMPTY_INDEX,
  historyPaths,
  parseHistoryIndex,
  parseTaskHistory,
  reviewTimings,
  serializeHistory,
} from "../../src/shared/history.js";
import { EMPTY_LEDGER, serializeLedger } from "../../src/shared/nightly.js";
import type { ReviewResult } from "../../src/shared/review.js";
import {
  API,
  HEAD as HARNESS_HEAD,
  OWNER,
  REPO,
  pullRequestPayload,
  startHarness,
  strictNock,
} from "../helpers/app-harness.js";
import { passedTask, timing } from "../helpers/review-fixtures.js";

const HEAD = "h".repeat(40);
const spread = (ms: number) => ({ medianMs: ms, p20Ms: ms * 0.98, p80Ms: ms * 1.02 });

/** An in-memory repository with one state branch, through the GitHub interface's git calls. */
function stateRepo() {
  const blobs = new Map<string, string>();
  const commits = new Map<string, Map<string, string>>();
  const refs = new Map<string, string>();
  let counter = 0;
  /** Runs before a ref moves: another writer's turn. */
  const before: (() => Promise<void>)[] = [];

  function entriesOf(files: Map<string, string>, folder: string): TreeEntry[] {
    const prefix = folder === "" ? "" : `${folder}/`;
    const seen = new Map<string, TreeEntry>();
    for (const [path, sha] of files) {
      if (!path.startsWith(prefix)) continue;
      const [name, ...rest] = path.slice(prefix.length).split("/");
      if (name === undefined) continue;
      seen.set(
        name,
        rest.length === 0
          ? { name, mode: "100644", type: "blob", sha }
          : { name, mode: "040000", type: "tree", sha: `tree:${commitOf(files)}:${prefix}${name}` },
      );
    }
    return [...seen.values()];
  }
  function commitOf(files: Map<string, string>): string {
    for (const [sha, tree] of commits) if (tree === files) return sha;
    throw new Error("no commit");
  }

  const github = {
    repo: { owner: "octo", repo: "kernels" },
    branchHead: (branch: string) => Promise.resolve(refs.get(branch)),
    readTree(treeish: string) {
      if (treeish.startsWith("tree:")) {
        const [, commit, folder] = treeish.split(":");
        return Promise.resolve(entriesOf(commits.get(commit ?? "")!, folder ?? ""));
      }
      return Promise.resolve(entriesOf(commits.get(treeish)!, ""));
    },
    readBlob: (sha: string) => Promise.resolve(blobs.get(sha)!),
    readBranchFile(branch: string, path: string) {
      const commit = refs.get(branch);
      if (commit === undefined) return Promise.resolve(undefined);
      const sha = commits.get(commit)!.get(path);
      return Promise.resolve({ commit, text: sha === undefined ? undefined : blobs.get(sha) });
    },
    async writeBranchFiles(
      branch: string,
      parent: string | undefined,
      files: readonly BranchFile[],
      _message: string,
    ) {
      const tree = new Map<string, string>();
      for (const file of files) {
        if ("content" in file) {
          const sha = gitBlobSha(file.content);
          blobs.set(sha, file.content);
          tree.set(file.path, sha);
        } else if (file.tree === true) {
          const [, commit, folder] = file.sha.split(":");
          for (const [path, sha] of commits.get(commit ?? "")!)
            if (path.startsWith(`${folder}/`)) tree.set(path, sha);
        } else {
          if (!blobs.has(file.sha)) throw new Error(`no blob ${file.sha}`);
          tree.set(file.path, file.sha);
        }
      }
      const sha = `c${++counter}`;
      commits.set(sha, tree);
      const turn = before.shift();
      if (turn) await turn();
      if (refs.get(branch) !== parent) return undefined;
      refs.set(branch, sha);
      return sha;
    },
  };
  const files = (): Map<string, string> => {
    const head = refs.get("evokernel-state");
    return head === undefined ? new Map<string, string>() : commits.get(head)!;
  };
  return {
    github: github as unknown as GitHub,
    before,
    paths: () => [...files().keys()].sort(),
    text: (path: string) => {
      const sha = files().get(path);
      return sha === undefined ? undefined : blobs.get(sha);
    },
  };
}

function review(sha: string, kernelMs: number): ReviewResult {
  const task = passedTask("softmax", [
    timing("8192x8192", null, null, {
      head: spread(kernelMs),
      eager: spread(2),
      compile: spread(1.5),
    }),
  ]);
  return {
    schema: 1,
    kind: "review",
    job: {
      schema: 1,
      id: "review-7",
      kind: "review",
      repo: { owner: "octo", name: "kernels" },
      sha,
      pr: 7,
      tasks: [TASK],
    },
    threshold: 3,
    tasks: [task],
    device: {
      gpu: "NVIDIA H100 80GB HBM3",
      driver: "580",
      cuda: "13.0",
      torch: "2.11.0",
      python: "3.12",
      evokernel: "0.1.0",
    },
    startedAt: "2026-11-20T10:00:00.000Z",
    finishedAt: "2026-11-20T10:20:00.000Z",
  } satisfies ReviewResult;
}

const TASK = "kernels/softmax";

describe("a pull request's timings", () => {
  it("wait for the merge, then join the task's history with its chart and the page, the ledger carried", async () => {
    const repo = stateRepo();
    // a night already wrote the ledger and a source
    await writeLedger(
      repo.github,
      { ...EMPTY_LEDGER, claimed: "2026-11-20T03:00:00.000Z" },
      { commit: undefined },
      "night",
    );
    const ledger = repo.text("nightly.json");
    expect(await recordPullReview(repo.github, 7, review(HEAD, 0.9))).toEqual([]);
    // a later push, reviewed again: the latest review is what waits
    expect(await recordPullReview(repo.github, 7, review(HEAD, 0.5))).toEqual([]);
    expect(repo.paths()).toEqual(["history/index.json", "nightly.json"]);
    expect(parseHistoryIndex(repo.text("history/index.json")).index.pulls).toHaveLength(1);

    await recordPullClosed(repo.github, 7, { at: "2026-11-21T09:00:00.000Z", headSha: HEAD });
    const { json, svg } = historyPaths(TASK);
    expect(repo.paths()).toEqual(
      ["history/index.html", "history/index.json", json, svg, "nightly.json"].sort(),
    );
    expect(repo.text("nightly.json")).toBe(ledger);
    const history = parseTaskHistory(TASK, repo.text(json)).history;
    expect(history.entries).toEqual([
      {
        kind: "pr",
        at: "2026-11-21T09:00:00.000Z",
        sha: HEAD,
        pr: 7,
        gpu: "NVIDIA H100 80GB HBM3",
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
    ]);
    expect(repo.text(svg)).toMatch(/^<svg/);
    expect(repo.text("history/index.html")).toContain(`<img src="${svg.slice(8)}"`);
    const index = parseHistoryIndex(repo.text("history/index.json")).index;
    expect(index.pulls).toEqual([]);
    expect(index.tasks).toEqual([{ task: TASK, runs: 1, latest: "2026-11-21T09:00:00.000Z" }]);

    // The next PR's comment links the chart; a merge redelivered records nothing twice.
    const links = await recordPullReview(repo.github, 8, {
      ...review("f".repeat(40), 0.4),
    });
    expect(links).toEqual([
      { task: TASK, url: `https://github.com/octo/kernels/blob/evokernel-state/${svg}` },
    ]);
    await recordPullClosed(repo.github, 7, { at: "2026-11-21T09:00:00.000Z", headSha: HEAD });
    expect(parseTaskHistory(TASK, repo.text(json)).history.entries).toHaveLength(1);
  });

  it("are forgotten when the PR is closed, or merged at a commit they do not describe", async () => {
    const repo = stateRepo();
    await recordPullReview(repo.github, 7, review(HEAD, 0.5));
    await recordPullReview(repo.github, 8, review(HEAD, 0.5));
    await recordPullClosed(repo.github, 7, null);
    await recordPullClosed(repo.github, 8, {
      at: "2026-11-21T09:00:00.000Z",
      headSha: "x".repeat(40),
    });
    expect(repo.paths()).toEqual(["history/index.json"]);
    expect(parseHistoryIndex(repo.text("history/index.json")).index).toEqual({
      schema: 1,
      tasks: [],
      pulls: [],
    });
  });

  it("are written again on top of another writer that moved the branch first", async () => {
    const repo = stateRepo();
    await recordPullReview(repo.github, 7, review(HEAD, 0.5));
    // PR 8's review lands while PR 7's merge is being written
    repo.before.push(async () => {
      await recordPullReview(repo.github, 8, review("f".repeat(40), 0.6));
    });
    await recordPullClosed(repo.github, 7, { at: "2026-11-21T09:00:00.000Z", headSha: HEAD });
    const index = parseHistoryIndex(repo.text("history/index.json")).index;
    expect(index.pulls.map((pull) => pull.pr)).toEqual([8]);
    expect(index.tasks.map((task) => task.task)).toEqual([TASK]);
  });
});

describe("the nightly ledger beside the history", () => {
  it("carries the history folder, and writes again over a history write but not over another ledger", async () => {
    const repo = stateRepo();
    await recordPullReview(repo.github, 7, review(HEAD, 0.5));
    await recordPullClosed(repo.github, 7, { at: "2026-11-21T09:00:00.000Z", headSha: HEAD });
    const before = repo.paths();
    // A claim carries the history; a PR's review landing in between is no conflict.
    repo.before.push(async () => {
      await recordPullReview(repo.github, 9, review("9".repeat(40), 0.5));
    });
    expect(await claimWindow(repo.github, "2026-11-22T03:00:00.000Z")).toBe(true);
    expect(repo.paths()).toEqual([...before, "nightly.json"].sort());
    expect(parseHistoryIndex(repo.text("history/index.json")).index.pulls.map((p) => p.pr)).toEqual(
      [9],
    );
    // Another instance's claim in between: that is a conflict.
    const stored = await readLedger(repo.github);
    repo.before.push(async () => {
      expect(await claimWindow(repo.github, "2026-11-23T03:00:00.000Z")).toBe(true);
    });
    expect(
      await writeLedger(
        repo.github,
        { ...stored.ledger, claimed: "2026-11-23T03:00:00.000Z" },
        stored,
        "the other",
      ),
    ).toBe(false);
    expect(repo.text("nightly.json")).toBe(
      serializeLedger({ ...EMPTY_LEDGER, claimed: "2026-11-23T03:00:00.000Z" }),
    );
    expect(repo.paths()).toContain(historyPaths(TASK).svg);
  });
});

describe("a merged pull request, through the app", () => {
  it("moves its kept timings into the task's history on the state branch, as one commit", async () => {
    const mocks = strictNock({ failOnUnmatched: true });
    const harness = await startHarness();
    try {
      const R = `/repos/${OWNER}/${REPO}`;
      const kept = serializeHistory(
        addPending(EMPTY_INDEX, {
          pr: 7,
          sha: HARNESS_HEAD,
          at: "2026-11-20T10:20:00.000Z",
          gpu: "NVIDIA H100 80GB HBM3",
          tasks: [{ task: TASK, configs: reviewTimings(review(HEAD, 0.5))[0]!.configs }],
        }),
      );
      const trees: { tree: { path: string; sha?: string; mode: string; content?: string }[] }[] =
        [];
      nock(API)
        // no job of the PR's to cancel
        .get(`${R}/commits/${HARNESS_HEAD}/check-runs`)
        .query({ per_page: 100 })
        .reply(200, { total_count: 0, check_runs: [] })
        .get(`${R}/git/ref/heads%2Fevokernel-state`)
        .reply(200, { object: { sha: "state1" } })
        .get(`${R}/git/trees/state1`)
        .reply(200, {
          sha: "root",
          tree: [
            { path: "nightly.json", mode: "100644", type: "blob", sha: "ledgerblob" },
            { path: "sources", mode: "040000", type: "tree", sha: "sourcestree" },
            { path: "history", mode: "040000", type: "tree", sha: "historytree" },
          ],
        })
        .get(`${R}/git/trees/historytree`)
        .reply(200, {
          sha: "historytree",
          tree: [{ path: "index.json", mode: "100644", type: "blob", sha: "indexblob" }],
        })
        .get(`${R}/git/blobs/indexblob`)
        .reply(200, { encoding: "base64", content: Buffer.from(kept).toString("base64") })
        .post(`${R}/git/trees`, (body: (typeof trees)[number]) => Boolean(trees.push(body)))
        .reply(201, { sha: "newtree" })
        .post(`${R}/git/commits`, {
          message: "evokernel history: #7 merged",
          tree: "newtree",
          parents: ["state1"],
        })
        .reply(201, { sha: "state2" })
        .patch(`${R}/git/refs/heads%2Fevokernel-state`, { sha: "state2", force: false })
        .reply(200, {});
      const payload = pullRequestPayload("closed") as { pull_request: Record<string, unknown> };
      payload.pull_request = {
        ...payload.pull_request,
        state: "closed",
        merged: true,
        merged_at: "2026-11-21T09:00:00Z",
      };
      await harness.receive("pull_request", payload);
      const tree = trees[0]?.tree ?? [];
      const { json, svg } = historyPaths(TASK);
      expect(tree.map((entry) => entry.path).sort()).toEqual(
        ["history/index.html", "history/index.json", json, svg, "nightly.json", "sources"].sort(),
      );
      // the ledger and the sources carried as they are
      expect(tree.find((entry) => entry.path === "sources")).toMatchObject({
        mode: "040000",
        sha: "sourcestree",
      });
      expect(tree.find((entry) => entry.path === "nightly.json")?.sha).toBe("ledgerblob");
      const history = parseTaskHistory(TASK, tree.find((entry) => entry.path === json)?.content);
      expect(history.history.entries.map((entry) => [entry.kind, entry.pr, entry.at])).toEqual([
        ["pr", 7, "2026-11-21T09:00:00Z"],
      ]);
      expect(tree.find((entry) => entry.path === svg)?.content).toMatch(/^<svg/);
    } finally {
      mocks.done();
    }
  });
});
