// A maintainer's answers to a verdict through the app, on the wire: `/evokernel accept` and
// `/evokernel wrong` comments and the check run's buttons (GitHub's own payloads, strict
// nock). Each protection has a test that fails without it: write permission, a fork's PR
// bound to the named commit, the same answer twice (one record, one update), escaping of
// the reason, and a restart (a new app instance reads what the last one stored on the
// state branch).
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseAnswers, type Answers } from "../../src/shared/answers.js";
import { parseLedger } from "../../src/shared/nightly.js";
import { parseReviewResult, type ReviewResult } from "../../src/shared/review.js";
import { answerCheckRun, readVerdictBlock, verdictDataOf } from "../../src/report/answers.js";
import { renderCheckRun } from "../../src/report/index.js";
import {
  API,
  commentPayload,
  HEAD,
  NEW_HEAD,
  OWNER,
  REPO,
  requestedActionPayload,
  reviewFixture,
  startHarness,
  strictNock,
  type Harness,
} from "../helpers/app-harness.js";
import { gitBlobSha, headTree } from "../helpers/git-tree.js";

const R = `/repos/${OWNER}/${REPO}`;
const STATE_REF = `${R}/git/ref/heads%2Fevokernel-state`;
const KERNEL = "__global__ void softmax() {}\n";

let mocks: { done(): void };
let harness: Harness;

beforeEach(async () => {
  mocks = strictNock({ failOnUnmatched: true });
  harness = await startHarness();
});

afterEach(() => {
  mocks.done();
});

function github(): nock.Scope {
  return nock(API);
}

function pull(options: { fork?: boolean; head?: string } = {}) {
  const repo = { full_name: `${OWNER}/${REPO}` };
  return {
    number: 7,
    state: "open",
    draft: false,
    head: {
      sha: options.head ?? HEAD,
      ref: "faster-softmax",
      repo: options.fork ? { full_name: `mallory/${REPO}` } : repo,
    },
    base: { sha: "b".repeat(40), ref: "main", repo },
  };
}

/** The fixture's review with softmax slower than base (and, with `wrong`, layernorm wrong). */
function slowerReview(options: { wrong?: boolean } = {}): ReviewResult {
  const parsed = parseReviewResult(reviewFixture("review-7-aaaaaaa-123456"));
  if (!parsed.ok) throw new Error(parsed.errors.join("; "));
  const review = parsed.result;
  const [softmax, layernorm] = review.tasks;
  if (softmax === undefined || layernorm === undefined) throw new Error("fixture changed");
  const timings = softmax.timings.map((config) => ({
    ...config,
    base: config.head,
    head: config.base,
    percentOfFloor: { base: config.percentOfFloor.head, head: config.percentOfFloor.base },
    speedup: 0.8,
    change: "slower" as const,
  }));
  const slower = {
    ...softmax,
    timings,
    speedup: { median: 0.8, lowerBound: 0.77, upperBound: 0.83, configs: 1 },
    regression: true,
    improvement: false,
    optimize: null,
    suggestion: null,
  };
  return { ...review, tasks: options.wrong === true ? [slower, layernorm] : [slower] };
}

/** The check run as the report leaves it: the verdict block, then the judged summary. */
function reportedCheckRun(review: ReviewResult, id = 900) {
  const output = renderCheckRun(review, 3);
  const answered = answerCheckRun(verdictDataOf(review, 3, output), output.summary, {
    accepts: [],
    wrong: [],
  });
  return {
    id,
    name: "evokernel",
    head_sha: HEAD,
    status: "completed",
    conclusion: answered.conclusion as string,
    external_id: "review-7-aaaaaaa-123456@4242",
    details_url: "https://github.com/octo/kernels/actions/runs/4242",
    html_url: `https://github.com/octo/kernels/runs/${id}`,
    app: { id: 1 },
    output: { title: answered.title, summary: answered.summary },
  };
}

type Run = ReturnType<typeof reportedCheckRun>;

/**
 * The `evokernel-state` branch in memory, served as GitHub's git data and contents APIs
 * serve it: reads and writes are mocked one by one, so a test counts them.
 */
class StateBranch {
  commit: string | undefined;
  files = new Map<string, string>();
  writes = 0;

  answers(): Answers {
    return parseAnswers(this.files.get("answers.json")).answers;
  }

  /** What readLedger and readAnswers ask: the ref, nightly.json, the answers' blob. */
  mockRead(scope: nock.Scope): void {
    if (this.commit === undefined) {
      scope.get(STATE_REF).reply(404, { message: "Not Found" });
      return;
    }
    scope.get(STATE_REF).reply(200, { object: { sha: this.commit } });
    const ledger = this.files.get("nightly.json") ?? "";
    scope
      .get(`${R}/contents/nightly.json`)
      .query({ ref: this.commit })
      .reply(200, { content: Buffer.from(ledger).toString("base64"), encoding: "base64" });
    const blob = parseLedger(ledger).ledger.answersBlob;
    const answers = this.files.get("answers.json");
    if (blob !== undefined && answers !== undefined) {
      expect(gitBlobSha(answers)).toBe(blob);
      scope
        .get(`${R}/git/blobs/${blob}`)
        .reply(200, { content: Buffer.from(answers).toString("base64"), encoding: "base64" });
    }
  }

  /** A write: the tree (its files kept), a commit on the branch's head, the ref moved. */
  mockWrite(scope: nock.Scope): void {
    const created = this.commit === undefined;
    const next = `state${this.writes + 1}`;
    scope
      .post(
        `${R}/git/trees`,
        (body: { tree: { path: string; content?: string; sha?: string }[] }) => {
          const files = new Map<string, string>();
          for (const entry of body.tree) {
            const known = [...this.files.values()].find((text) => gitBlobSha(text) === entry.sha);
            files.set(entry.path, entry.content ?? known ?? "");
          }
          this.files = files;
          return true;
        },
      )
      .reply(201, { sha: `tree-${next}` })
      .post(`${R}/git/commits`, (body: { parents: string[] }) => {
        expect(body.parents).toEqual(created ? [] : [this.commit]);
        return true;
      })
      .reply(201, { sha: next });
    const moved = () => {
      this.commit = next;
      this.writes++;
      return [created ? 201 : 200, {}] as [number, nock.Body];
    };
    if (created)
      scope.post(`${R}/git/refs`, { ref: "refs/heads/evokernel-state", sha: next }).reply(moved);
    else
      scope
        .patch(`${R}/git/refs/heads%2Fevokernel-state`, { sha: next, force: false })
        .reply(moved);
  }
}

function mockWriter(scope: nock.Scope, permission = "write", login = "maintainer"): nock.Scope {
  return scope.get(`${R}/collaborators/${login}/permission`).reply(200, { permission });
}

function mockRuns(scope: nock.Scope, runs: readonly Run[], sha = HEAD): nock.Scope {
  return scope
    .get(`${R}/commits/${sha}/check-runs`)
    .query({ per_page: 100 })
    .reply(200, { total_count: runs.length, check_runs: runs });
}

/** The check run's update, recorded; the run given is changed as GitHub would change it. */
function mockUpdate(scope: nock.Scope, run: Run, updates: Record<string, unknown>[]): nock.Scope {
  return scope
    .patch(`${R}/check-runs/${run.id}`, (body: Record<string, unknown>) => {
      updates.push(body);
      const output = body.output as { title: string; summary: string };
      run.conclusion = body.conclusion as string;
      run.output = { title: output.title, summary: output.summary };
      return true;
    })
    .reply(200, { id: run.id });
}

function mockReaction(scope: nock.Scope, commentId: number): nock.Scope {
  return scope
    .post(`${R}/issues/comments/${commentId}/reactions`, { content: "+1" })
    .reply(201, {});
}

function replies(scope: nock.Scope, into: string[]): nock.Scope {
  return scope
    .post(`${R}/issues/7/comments`, (body: { body: string }) => {
      into.push(body.body);
      return true;
    })
    .reply(201, { id: 2 });
}

describe("/evokernel accept", () => {
  it("lets the regression pass: one record on the state branch, the check run concluded success with who and why", async () => {
    const state = new StateBranch();
    const run = reportedCheckRun(slowerReview());
    expect(run.conclusion).toBe("failure");
    const updates: Record<string, unknown>[] = [];
    const scope = mockWriter(github()).get(`${R}/pulls/7`).reply(200, pull());
    mockRuns(scope, [run]);
    state.mockRead(scope);
    state.mockWrite(scope);
    mockUpdate(scope, run, updates);
    mockReaction(scope, 501);
    await harness.receive(
      "issue_comment",
      commentPayload("/evokernel accept softmax uses half the memory, see the design doc"),
    );
    expect(state.writes).toBe(1);
    expect(state.answers().accepts).toMatchObject([
      {
        pr: 7,
        sha: HEAD,
        task: "kernels/softmax",
        login: "maintainer",
        reason: "uses half the memory, see the design doc",
      },
    ]);
    expect(updates).toHaveLength(1);
    expect(updates[0]).toMatchObject({
      status: "completed",
      conclusion: "success",
      output: {
        title: "Regression accepted by @maintainer: uses half the memory, see the design doc",
      },
    });
    const summary = (updates[0]?.output as { summary: string }).summary;
    expect(summary).toContain(
      "regression accepted by @\u200Dmaintainer: uses half the memory, see the design doc",
    );
    // What was judged stays below the answers.
    expect(summary).toContain("Slower means the PR's p20 is over base's p80");
  });

  it("refuses someone without write access: a reply, nothing read or stored", async () => {
    const said: string[] = [];
    replies(mockWriter(github(), "read", "maintainer"), said);
    await harness.receive("issue_comment", commentPayload("/evokernel accept softmax fine by me"));
    expect(said).toEqual([
      "@maintainer answering evokernel's verdicts (accept a regression, mark a verdict wrong) needs write access to this repository; ask a maintainer.",
    ]);
  });

  it("on a fork's PR answers only the commit it names, while that is the head", async () => {
    const said: string[] = [];
    const scope = mockWriter(github())
      .get(`${R}/pulls/7`)
      .reply(200, pull({ fork: true }));
    replies(scope, said);
    await harness.receive(
      "issue_comment",
      commentPayload("/evokernel accept softmax fine", { id: 601 }),
    );
    expect(said[0]).toContain("this pull request comes from a fork, so an answer names the commit");
    expect(said[0]).toContain(`/evokernel accept softmax @${HEAD} <reason>`);

    // The head moved after the maintainer read it: nothing is answered.
    const moved = mockWriter(github())
      .get(`${R}/pulls/7`)
      .reply(200, pull({ fork: true, head: NEW_HEAD }));
    replies(moved, said);
    await harness.receive(
      "issue_comment",
      commentPayload(`/evokernel accept softmax @${HEAD} fine`, { id: 602 }),
    );
    expect(said[1]).toContain(`the head of this pull request is \`${NEW_HEAD}\` now`);

    // Named and still the head: answered.
    const state = new StateBranch();
    const run = reportedCheckRun(slowerReview());
    const updates: Record<string, unknown>[] = [];
    const named = mockWriter(github())
      .get(`${R}/pulls/7`)
      .reply(200, pull({ fork: true }));
    mockRuns(named, [run]);
    state.mockRead(named);
    state.mockWrite(named);
    mockUpdate(named, run, updates);
    mockReaction(named, 603);
    await harness.receive(
      "issue_comment",
      commentPayload(`/evokernel accept softmax @${HEAD} fine`, { id: 603 }),
    );
    expect(updates[0]).toMatchObject({ conclusion: "success" });
  });

  it("the same answer twice is one record and one update, also after a restart", async () => {
    const state = new StateBranch();
    const run = reportedCheckRun(slowerReview());
    const updates: Record<string, unknown>[] = [];
    const first = mockWriter(github()).get(`${R}/pulls/7`).reply(200, pull());
    mockRuns(first, [run]);
    state.mockRead(first);
    state.mockWrite(first);
    mockUpdate(first, run, updates);
    mockReaction(first, 701);
    await harness.receive(
      "issue_comment",
      commentPayload("/evokernel accept softmax ok", { id: 701 }),
    );

    // A new instance (a restart: nothing in memory) hears the same answer from another comment.
    harness = await startHarness();
    const again = mockWriter(github()).get(`${R}/pulls/7`).reply(200, pull());
    mockRuns(again, [run]);
    state.mockRead(again);
    mockReaction(again, 702);
    await harness.receive(
      "issue_comment",
      commentPayload("/evokernel accept softmax ok", { id: 702 }),
    );
    expect(state.writes).toBe(1);
    expect(state.answers().accepts).toHaveLength(1);
    expect(updates).toHaveLength(1);
  });

  it("escapes the reason where it lands: no mention, link, HTML or heading of its own", async () => {
    const state = new StateBranch();
    const run = reportedCheckRun(slowerReview());
    const updates: Record<string, unknown>[] = [];
    const scope = mockWriter(github()).get(`${R}/pulls/7`).reply(200, pull());
    mockRuns(scope, [run]);
    state.mockRead(scope);
    state.mockWrite(scope);
    mockUpdate(scope, run, updates);
    mockReaction(scope, 501);
    const hostile =
      "# ok @octo/team <img src=x onerror=alert(1)> [click](https://evil.example) --> | `x` " +
      "y".repeat(400);
    await harness.receive("issue_comment", commentPayload(`/evokernel accept softmax ${hostile}`));
    const stored = state.answers().accepts[0]?.reason ?? "";
    expect([...stored].length).toBe(300);
    expect(stored.endsWith("…")).toBe(true);
    const summary = (updates[0]?.output as { summary: string }).summary;
    const line = summary.split("\n").find((entry) => entry.includes("regression accepted")) ?? "";
    expect(line).toContain("\\# ok @\u200Docto/team \\<img src=x onerror=alert(1)\\>");
    expect(line).toContain("\\[click\\](https\\://evil.example)");
    expect(line).not.toMatch(/@octo/);
    expect(line).not.toMatch(/(?<!\\)<img/);
    // The verdict block still reads after the answer (no text closed its comment).
    expect(readVerdictBlock(summary)?.tasks.map((verdict) => verdict.task)).toEqual([
      "kernels/softmax",
    ]);
  });

  it("accepts only a regression, and says what to do about another verdict", async () => {
    const said: string[] = [];
    const run = reportedCheckRun(slowerReview({ wrong: true }));
    const scope = mockWriter(github()).get(`${R}/pulls/7`).reply(200, pull());
    mockRuns(scope, [run]);
    replies(scope, said);
    await harness.receive("issue_comment", commentPayload("/evokernel accept layernorm fine"));
    expect(said[0]).toContain("`layernorm` is not a regression on `aaaaaaa`");
    expect(said[0]).toContain("`/evokernel wrong kernels/layernorm <reason>`");
  });
});

describe("/evokernel wrong", () => {
  it("records the verdict with the run's evidence, keyed by the kernel's content", async () => {
    const state = new StateBranch();
    const run = reportedCheckRun(slowerReview({ wrong: true }));
    const updates: Record<string, unknown>[] = [];
    const scope = mockWriter(github()).get(`${R}/pulls/7`).reply(200, pull());
    mockRuns(scope, [run]);
    headTree(HEAD, { "kernels/layernorm/kernel.cu": KERNEL }).mockWalk(scope, R, [
      "kernels/layernorm/kernel.cu",
    ]);
    state.mockRead(scope);
    state.mockWrite(scope);
    mockUpdate(scope, run, updates);
    mockReaction(scope, 501);
    await harness.receive(
      "issue_comment",
      commentPayload("/evokernel wrong layernorm the reference itself is off at fp16"),
    );
    expect(state.answers().wrong).toMatchObject([
      {
        task: "kernels/layernorm",
        blob: gitBlobSha(KERNEL),
        login: "maintainer",
        reason: "the reference itself is off at fp16",
        evidence: {
          pr: 7,
          sha: HEAD,
          checkRunId: 900,
          checkUrl: "https://github.com/octo/kernels/runs/900",
          runUrl: "https://github.com/octo/kernels/actions/runs/4242",
          gpu: "NVIDIA H100 80GB HBM3",
          verdict: {
            task: "kernels/layernorm",
            outcome: "wrong",
            kernel: "kernels/layernorm/kernel.cu",
          },
        },
      },
    ]);
    // The conclusion stands (a mark is not an accept); the check run says it was marked.
    expect(updates[0]).toMatchObject({ conclusion: "failure" });
    expect((updates[0]?.output as { summary: string }).summary).toContain(
      "`layernorm`: verdict marked wrong by @\u200Dmaintainer: the reference itself is off at fp16",
    );
  });
});

describe("the check run's buttons", () => {
  it("Accept lets the check run's regressions pass with a fixed reason", async () => {
    const state = new StateBranch();
    const run = reportedCheckRun(slowerReview());
    const updates: Record<string, unknown>[] = [];
    const scope = mockWriter(github()).get(`${R}/check-runs/900`).reply(200, run);
    state.mockRead(scope);
    state.mockWrite(scope);
    mockUpdate(scope, run, updates);
    await harness.receive(
      "check_run",
      requestedActionPayload("review-7-aaaaaaa-123456@4242", "evk-accept"),
    );
    expect(state.answers().accepts).toMatchObject([
      { task: "kernels/softmax", reason: "accepted from the check run" },
    ]);
    expect(updates[0]).toMatchObject({
      conclusion: "success",
      output: { title: "Regression accepted by @maintainer: accepted from the check run" },
    });
  });

  it("refuses a press by someone without write access", async () => {
    const said: string[] = [];
    replies(mockWriter(github(), "triage"), said);
    await harness.receive(
      "check_run",
      requestedActionPayload("review-7-aaaaaaa-123456@4242", "evk-accept"),
    );
    expect(said[0]).toContain("needs write access");
  });

  it("Wrong asks for the command when several verdicts failed", async () => {
    const said: string[] = [];
    const run = reportedCheckRun(slowerReview({ wrong: true }));
    replies(mockWriter(github()).get(`${R}/check-runs/900`).reply(200, run), said);
    await harness.receive(
      "check_run",
      requestedActionPayload("review-7-aaaaaaa-123456@4242", "evk-wrong"),
    );
    expect(said[0]).toContain("this check run has several failing verdicts");
    expect(said[0]).toContain("`/evokernel wrong kernels/softmax <reason>`");
    expect(said[0]).toContain("`/evokernel wrong kernels/layernorm <reason>`");
  });
});
