// The app in-process against strict nock: every request it makes is mocked, every mock is
// used, and every body a person reads (check runs, comments, the review, the dispatched job)
// is a snapshot. Payloads come from @octokit/webhooks-examples.
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { writeZip } from "../helpers/zip-writer.js";
import { headTree } from "../helpers/git-tree.js";
import {
  API,
  BOT_LOGIN,
  BASE,
  CONFIG_PATH,
  HEAD,
  NEW_HEAD,
  OWNER,
  REPO,
  commentPayload,
  kernelPatch,
  mockJobStart,
  mockNoAnswers,
  pullRequestPayload,
  requestedActionPayload,
  reviewFixture,
  stable,
  startHarness,
  strictNock,
  watchUnmatched,
  workflowRunPayload,
  type Harness,
} from "../helpers/app-harness.js";

const R = `/repos/${OWNER}/${REPO}`;
const CONFIG = "pullRequests: bench\nworkflow: evokernel.yml\n";
const KERNEL_FILES = [
  { filename: "kernels/softmax/kernel.cu", status: "modified", patch: kernelPatch() },
  { filename: "kernels/layernorm/kernel.cu", status: "modified", patch: "@@ -1 +1 @@\n-a\n+b" },
  { filename: "README.md", status: "modified", patch: "@@ -1 +1 @@\n-a\n+b" },
];

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

function pull(options: { head?: string; fork?: boolean; state?: string } = {}) {
  const repo = { full_name: `${OWNER}/${REPO}` };
  return {
    number: 7,
    state: options.state ?? "open",
    draft: false,
    head: {
      sha: options.head ?? HEAD,
      ref: "faster-softmax",
      repo: options.fork ? { full_name: `mallory/${REPO}` } : repo,
    },
    base: { sha: BASE, ref: "main", repo },
  };
}

function github(): nock.Scope {
  return nock(API);
}

function mockConfig(scope: nock.Scope, text = CONFIG): nock.Scope {
  return scope.get(CONFIG_PATH).reply(200, text, { "content-type": "text/plain; charset=utf-8" });
}

/** Starting a job (mockJobStart) on PR 7, its bodies recorded as checkCreate and checkLink. */
function mockStart(
  scope: nock.Scope,
  options: {
    id: number;
    sha?: string;
    name?: string;
    head?: string;
    fork?: boolean;
    link?: boolean;
    existing?: unknown[];
  },
): nock.Scope {
  return mockJobStart(scope, {
    id: options.id,
    ...(options.sha === undefined ? {} : { sha: options.sha }),
    ...(options.name === undefined ? {} : { name: options.name }),
    ...(options.existing === undefined ? {} : { existing: options.existing }),
    pull: pull({ head: options.head ?? options.sha ?? HEAD, fork: options.fork ?? false }),
    created: record("checkCreate"),
    ...(options.link === true ? { linked: record("checkLink") } : {}),
  });
}

/** A PR event that starts a job through Actions, with run 4242; returns the job id. */
async function openPullWithJob(): Promise<string> {
  const scope = mockConfig(github())
    .get(`${R}/pulls/7/files`)
    .query({ per_page: 100 })
    .reply(200, KERNEL_FILES)
    .post(`${R}/actions/workflows/evokernel.yml/dispatches`, record("dispatch"))
    .reply(200, {
      workflow_run_id: 4242,
      run_url: `${API}${R}/actions/runs/4242`,
      html_url: `https://github.com/${OWNER}/${REPO}/actions/runs/4242`,
    });
  mockStart(scope, { id: 900, link: true });
  await harness.receive("pull_request", pullRequestPayload("opened"));
  const dispatched = bodies.dispatch?.[0] as { inputs: { spec: string } };
  return (JSON.parse(dispatched.inputs.spec) as { id: string }).id;
}

describe("pull requests", () => {
  it("creates the job's check run, dispatches a review job on the head SHA, then links the run", async () => {
    const jobId = await openPullWithJob();
    expect(jobId).toMatch(/^review-7-aaaaaaa-[0-9a-f]{6}$/);
    const dispatch = bodies.dispatch?.[0] as {
      ref: string;
      return_run_details: boolean;
      inputs: { spec: string };
    };
    expect(dispatch.ref).toBe("main");
    expect(dispatch.return_run_details).toBe(true);
    expect(stable(JSON.parse(dispatch.inputs.spec))).toMatchSnapshot("job spec");
    expect(stable(bodies.checkCreate)).toMatchSnapshot("check run, created as the job's claim");
    expect(stable(bodies.checkLink)).toMatchSnapshot("check run, linked to the run");
  });

  it("stays quiet when no kernel task changed", async () => {
    mockConfig(github())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, [{ filename: "README.md", status: "modified" }]);
    await harness.receive("pull_request", pullRequestPayload("opened"));
  });

  it("reads every page of a large PR's files", async () => {
    const page1 = Array.from({ length: 100 }, (_, i) => ({
      filename: `docs/${i}.md`,
      status: "added",
    }));
    mockConfig(github())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, page1, { link: `<${API}${R}/pulls/7/files?per_page=100&page=2>; rel="next"` })
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100, page: 2 })
      .reply(200, [{ filename: "docs/last.md", status: "added" }]);
    await harness.receive("pull_request", pullRequestPayload("opened"));
  });

  it("does nothing on a draft", async () => {
    mockConfig(github());
    await harness.receive("pull_request", pullRequestPayload("opened", { draft: true }));
  });

  it("explains an invalid config in a failing check run", async () => {
    mockConfig(github(), "pullRequests: always\nbudjet: 3\n")
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ check_name: "evokernel", filter: "all", per_page: 100 })
      .reply(200, { total_count: 0, check_runs: [] })
      .post(`${R}/check-runs`, record("check"))
      .reply(201, { id: 901 });
    await harness.receive("pull_request", pullRequestPayload("opened"));
    expect(stable(bodies.check)).toMatchSnapshot();
  });

  it("runs nothing from a fork, and says how a maintainer can", async () => {
    mockConfig(github())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, KERNEL_FILES)
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ check_name: "evokernel", filter: "all", per_page: 100 })
      .reply(200, { total_count: 0, check_runs: [] })
      .post(`${R}/check-runs`, record("check"))
      .reply(201, { id: 902 });
    await harness.receive("pull_request", pullRequestPayload("opened", { fork: true }));
    expect(stable(bodies.check)).toMatchSnapshot();
  });

  it("posts a fork's notice once per head: a redelivery to another instance finds it", async () => {
    // another instance (or this app before a restart) already posted it: only a list
    mockConfig(github())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, KERNEL_FILES)
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ check_name: "evokernel", filter: "all", per_page: 100 })
      .reply(200, {
        total_count: 1,
        check_runs: [
          {
            id: 902,
            name: "evokernel",
            head_sha: HEAD,
            status: "completed",
            external_id: "notice:fork-waits",
            details_url: null,
            app: { id: 1 },
          },
        ],
      });
    const unmatched = watchUnmatched();
    await harness.receive("pull_request", pullRequestPayload("opened", { fork: true }));
    expect(unmatched()).toEqual([]);
    expect(bodies.check).toBeUndefined();
  });

  it("handles a redelivery once", async () => {
    mockConfig(github())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, [{ filename: "README.md", status: "modified" }]);
    const unmatched = watchUnmatched();
    await harness.receive("pull_request", pullRequestPayload("opened"), "same-delivery");
    await harness.receive("pull_request", pullRequestPayload("opened"), "same-delivery");
    // The second delivery asks GitHub nothing.
    expect(unmatched()).toEqual([]);
  });

  it("starts nothing for a redelivery another instance, or the app before a restart, handled", async () => {
    const jobId = await openPullWithJob();
    const check = bodies.checkLink?.[0] as { external_id: string };
    expect(check.external_id).toContain(jobId);
    // The same delivery again, to an instance that never saw it (its memory is its own).
    const other = await startHarness();
    mockConfig(github())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, KERNEL_FILES)
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ check_name: "evokernel", filter: "all", per_page: 100 })
      .reply(200, {
        total_count: 1,
        check_runs: [
          {
            id: 900,
            name: "evokernel",
            head_sha: HEAD,
            status: "in_progress",
            external_id: check.external_id,
            details_url: null,
          },
        ],
      });
    const unmatched = watchUnmatched();
    await other.receive("pull_request", pullRequestPayload("opened"));
    // No second dispatch, no second check run.
    expect(unmatched()).toEqual([]);
    expect(bodies.dispatch).toHaveLength(1);
  });

  it("two instances on one delivery at the same moment: the later check run stands down", async () => {
    // This instance's look found nothing, but a twin created the job's check run (900)
    // before this one's (901): the lowest id runs the job, this one dispatches nothing.
    const delivery = "delivery-twin";
    mockConfig(github())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, KERNEL_FILES)
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ check_name: "evokernel", filter: "all", per_page: 100 })
      .reply(200, { total_count: 0, check_runs: [] })
      .post(`${R}/check-runs`, record("checkCreate"))
      .reply(201, { id: 901 })
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ check_name: "evokernel", filter: "all", per_page: 100 })
      .reply(200, () => {
        const ours = bodies.checkCreate?.[0] as { external_id: string };
        return {
          total_count: 2,
          check_runs: [
            // The twin's: the same job id (the same delivery), the same external_id.
            {
              id: 900,
              name: "evokernel",
              head_sha: HEAD,
              status: "queued",
              external_id: ours.external_id,
            },
            {
              id: 901,
              name: "evokernel",
              head_sha: HEAD,
              status: "queued",
              external_id: ours.external_id,
            },
          ],
        };
      })
      .patch(`${R}/check-runs/901`, record("standDown"))
      .reply(200, { id: 901 });
    const unmatched = watchUnmatched();
    await harness.receive("pull_request", pullRequestPayload("opened"), delivery);
    expect(unmatched()).toEqual([]);
    expect(bodies.dispatch).toBeUndefined();
    expect(bodies.standDown).toMatchSnapshot();
  });

  it("two events for one head at the same moment: the later one's job stands down", async () => {
    // Another delivery (say `ready_for_review` beside `opened`) whose review job on the same
    // head and tasks a twin instance created first and runs: nothing starts twice.
    mockConfig(github())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, KERNEL_FILES)
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ check_name: "evokernel", filter: "all", per_page: 100 })
      .reply(200, { total_count: 0, check_runs: [] })
      .post(`${R}/check-runs`, record("checkCreate"))
      .reply(201, { id: 901 })
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ check_name: "evokernel", filter: "all", per_page: 100 })
      .reply(200, () => {
        const ours = (bodies.checkCreate?.[0] as { external_id: string }).external_id;
        const key = ours.slice(ours.indexOf("+"));
        return {
          total_count: 2,
          check_runs: [
            {
              id: 900,
              name: "evokernel",
              head_sha: HEAD,
              status: "in_progress",
              external_id: `review-7-aaaaaaa-0f0f0f@4141~${Math.floor(Date.now() / 1000) + 3600}${key}`,
            },
            { id: 901, name: "evokernel", head_sha: HEAD, status: "queued", external_id: ours },
          ],
        };
      })
      .patch(`${R}/check-runs/901`, record("standDown"))
      .reply(200, { id: 901 });
    const unmatched = watchUnmatched();
    await harness.receive("pull_request", pullRequestPayload("ready_for_review"));
    expect(unmatched()).toEqual([]);
    expect(bodies.dispatch).toBeUndefined();
    expect(bodies.standDown?.[0]).toMatchObject({
      name: "evokernel (duplicate)",
      conclusion: "skipped",
      output: { title: "Already running" },
    });
  });

  it("supersedes the old commit's job on a push: run cancelled, check run neutral", async () => {
    await openPullWithJob();
    github()
      .post(`${R}/actions/runs/4242/cancel`)
      .reply(202, {})
      .patch(`${R}/check-runs/900`, record("superseded"))
      .reply(200, { id: 900 })
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ per_page: 100 })
      .reply(200, {
        total_count: 2,
        check_runs: [
          { id: 900, name: "evokernel", head_sha: HEAD, status: "in_progress", external_id: "x" },
          // A job from before a restart: known only from its external_id.
          {
            id: 899,
            name: "evokernel bench",
            head_sha: HEAD,
            status: "queued",
            external_id: "bench-7-aaaaaaa-abcdef@4141",
          },
          { id: 898, name: "other-ci", head_sha: HEAD, status: "queued", external_id: null },
        ],
      })
      .post(`${R}/actions/runs/4141/cancel`)
      .reply(409, { message: "Cannot cancel a workflow run that is completed." })
      .patch(`${R}/check-runs/899`, record("superseded"))
      .reply(200, { id: 899 });
    mockConfig(github())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, [{ filename: "README.md", status: "modified" }]);
    await harness.receive(
      "pull_request",
      pullRequestPayload("synchronize", { head: NEW_HEAD, before: HEAD }),
    );
    expect(bodies.superseded).toMatchSnapshot();
  });

  it("marks an `opened` delivered after its PR's `synchronize` stale, whichever instance gets it", async () => {
    const scope = mockConfig(github())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, KERNEL_FILES)
      .post(`${R}/actions/workflows/evokernel.yml/dispatches`)
      .reply(200, { workflow_run_id: 4343, html_url: "https://github.com/o/r/actions/runs/4343" })
      // The push's old head: no job of the app's there to supersede.
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ per_page: 100 })
      .reply(200, { total_count: 0, check_runs: [] });
    mockStart(scope, { id: 901, sha: NEW_HEAD, link: true });
    await harness.receive(
      "pull_request",
      pullRequestPayload("synchronize", { head: NEW_HEAD, before: HEAD }),
    );
    expect(bodies.checkLink?.[0]).toMatchObject({ status: "in_progress" });
    // The PR's `opened`, for the head the push replaced, comes last, to another instance
    // (or this one after a restart), which never saw the push: GitHub's head decides.
    bodies = {};
    const other = await startHarness();
    mockStart(
      mockConfig(github())
        .get(`${R}/pulls/7/files`)
        .query({ per_page: 100 })
        .reply(200, KERNEL_FILES),
      { id: 902, head: NEW_HEAD },
    )
      .patch(`${R}/check-runs/902`, record("oldHead"))
      .reply(200, { id: 902 });
    const unmatched = watchUnmatched();
    await other.receive("pull_request", pullRequestPayload("opened"));
    expect(unmatched()).toEqual([]);
    expect(bodies.dispatch).toBeUndefined();
    expect(bodies.checkCreate?.[0]).toMatchObject({ head_sha: HEAD });
    expect(bodies.oldHead?.[0]).toMatchObject({
      status: "completed",
      conclusion: "neutral",
      output: { title: "Superseded", summary: expect.stringContaining("cccccc") as unknown },
    });
  });

  it("fails the check run with what to do when the workflow cannot be dispatched", async () => {
    const scope = mockConfig(github())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, KERNEL_FILES)
      .post(`${R}/actions/workflows/evokernel.yml/dispatches`)
      .reply(404, { message: "Not Found" })
      .patch(`${R}/check-runs/904`, record("check"))
      .reply(200, { id: 904 });
    mockStart(scope, { id: 904 });
    await harness.receive("pull_request", pullRequestPayload("opened"));
    expect(stable(bodies.check)).toMatchSnapshot();
  });
});

describe("results from a workflow run", () => {
  function mockArtifact(zip: Buffer) {
    github()
      .get(`${R}/actions/runs/4242/artifacts`)
      .query({ name: "evokernel-result", per_page: 100 })
      .reply(200, {
        total_count: 1,
        artifacts: [{ id: 77, name: "evokernel-result", expired: false }],
      })
      .get(`${R}/actions/artifacts/77/zip`)
      .reply(302, "", { location: "https://blob.example.test/artifact.zip" });
    nock("https://blob.example.test")
      .get("/artifact.zip")
      .reply(200, zip, { "content-type": "application/zip" });
  }

  it("posts the comment, one review with suggestions, the outside-the-diff branch and the check run", async () => {
    const jobId = await openPullWithJob();
    const review = reviewFixture(jobId) as { tasks: { suggestion: { before: string } | null }[] };
    mockArtifact(writeZip({ "evokernel-result.json": JSON.stringify(review) }));
    const scope = github().get(`${R}/pulls/7`).reply(200, pull());
    // The app checks the suggested path against the head commit's tree itself.
    headTree(HEAD, {
      "kernels/softmax/task.json": '{"kernel": "kernel.cu", "reference": "reference.py"}',
      "kernels/softmax/kernel.cu": review.tasks[0]?.suggestion?.before ?? "",
      "kernels/softmax/reference.py": "import torch\n",
    }).mockWalk(scope, R, ["kernels/softmax/kernel.cu"], ["kernels/softmax/task.json"]);
    scope
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .reply(200, [{ id: 1, body: "nice", user: { type: "User" } }])
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
      .reply(200, KERNEL_FILES)
      .get(`${R}/git/commits/${HEAD}`)
      .reply(200, { sha: HEAD, tree: { sha: "tree0" } })
      .post(`${R}/git/blobs`, record("blob"))
      .reply(201, { sha: "blob1" })
      .post(`${R}/git/trees`, record("tree"))
      .reply(201, { sha: "tree1" })
      .post(`${R}/git/commits`, record("commit"))
      .reply(201, { sha: "commit1" })
      .post(`${R}/git/refs`, record("ref"))
      .reply(201, { ref: "refs/heads/evokernel/7-aaaaaaa" })
      .get(`${R}/pulls/7/reviews`)
      .query({ per_page: 100 })
      .reply(200, [])
      .post(`${R}/pulls/7/reviews`, record("review"))
      .reply(200, { id: 3 })
      .patch(`${R}/check-runs/900`, record("check"))
      .reply(200, { id: 900 });
    // No answers yet: the state branch does not exist.
    mockNoAnswers(scope);
    await harness.receive("workflow_run", workflowRunPayload(4242, "failure"));
    expect(bodies.comment).toMatchSnapshot("comment");
    expect(stable(bodies.review)).toMatchSnapshot("review");
    expect([bodies.tree, bodies.commit, bodies.ref]).toMatchSnapshot("suggestion branch");
    expect((bodies.blob?.[0] as { content: string }).content).toContain("#define UNROLL 4");
    expect(bodies.check).toMatchSnapshot("check run");
  });

  it("edits the PR's one comment in place", async () => {
    const jobId = await openPullWithJob();
    const review = reviewFixture(jobId) as { tasks: { suggestion: unknown }[] };
    for (const task of review.tasks) task.suggestion = null;
    mockArtifact(writeZip({ "evokernel-result.json": JSON.stringify(review) }, "store"));
    github()
      .get(`${R}/pulls/7`)
      .reply(200, pull())
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .reply(200, [
        { id: 1, body: "<!-- evokernel:comment --> by someone else", user: { type: "User" } },
        // Another bot's comment carrying the marker is not the app's (403 on edit).
        {
          id: 2,
          body: "<!-- evokernel:comment --> copied",
          user: { type: "Bot", login: "other-app[bot]" },
        },
        {
          id: 3,
          body: "<!-- evokernel:comment -->\nold",
          user: { type: "Bot", login: "evokernel[bot]" },
        },
      ])
      .patch(`${R}/issues/comments/3`, record("comment"))
      .reply(200, { id: 3 })
      .patch(`${R}/check-runs/900`)
      .reply(200, { id: 900 });
    await harness.receive("workflow_run", workflowRunPayload(4242, "success"));
    expect((bodies.comment?.[0] as { body: string }).body).toContain("<!-- evokernel:comment -->");
  });

  it("fails the check run with a link when the run ends without a result", async () => {
    await openPullWithJob();
    github()
      .get(`${R}/actions/runs/4242/artifacts`)
      .query({ name: "evokernel-result", per_page: 100 })
      .reply(200, { total_count: 0, artifacts: [] })
      .patch(`${R}/check-runs/900`, record("check"))
      .reply(200, { id: 900 });
    await harness.receive("workflow_run", workflowRunPayload(4242, "failure"));
    expect(stable(bodies.check)).toMatchSnapshot();
  });

  it("refuses an artifact that does not match the schema", async () => {
    await openPullWithJob();
    mockArtifact(
      writeZip({
        "evokernel-result.json": JSON.stringify({ schema: 1, kind: "review", run: "rm -rf /" }),
      }),
    );
    github().patch(`${R}/check-runs/900`, record("check")).reply(200, { id: 900 });
    await harness.receive("workflow_run", workflowRunPayload(4242, "success"));
    expect(JSON.stringify(bodies.check)).toContain("does not match the review result schema");
  });

  it("after a restart, finds the job's check run from the result and the external_id", async () => {
    const jobId = "review-7-aaaaaaa-123456";
    mockConfig(github());
    const review = reviewFixture(jobId) as { tasks: { suggestion: unknown }[] };
    expect(review.tasks.length).toBe(2);
    // No suggestions: what is left to post is the comment, which a stale commit never gets.
    for (const task of review.tasks) task.suggestion = null;
    mockArtifact(writeZip({ "r.json": JSON.stringify(review) }));
    github()
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
            details_url: "https://github.com/octo/kernels/actions/runs/4242",
          },
        ],
      })
      .get(`${R}/pulls/7`)
      .reply(200, pull({ head: NEW_HEAD }))
      .get(`${R}/git/ref/heads%2Fevokernel-state`)
      .reply(404, { message: "Not Found" })
      .patch(`${R}/check-runs/905`, record("check"))
      .reply(200, { id: 905 });
    const unmatched = watchUnmatched();
    await harness.receive("workflow_run", workflowRunPayload(4242, "success"));
    expect(unmatched()).toEqual([]);
    // The head moved on: the PR's comment (the head's results) is not overwritten with a
    // stale commit's, no review lands on a stale diff, but the check run has its verdict.
    expect((bodies.check?.[0] as { conclusion: string }).conclusion).toBe("failure");
  });

  it("after a restart, matches a check run without a run id only to the run its run-name names", async () => {
    const jobId = "review-7-aaaaaaa-123456";
    mockConfig(github());
    mockArtifact(writeZip({ "r.json": JSON.stringify(reviewFixture(jobId)) }));
    github()
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ per_page: 100 })
      .reply(200, {
        total_count: 1,
        check_runs: [
          {
            id: 906,
            name: "evokernel",
            head_sha: HEAD,
            status: "in_progress",
            // Dispatched on GHES, the run never found: no run id in external_id.
            external_id: `${jobId}~${Math.floor(Date.now() / 1000) + 3600}`,
            details_url: null,
          },
        ],
      });
    const unmatched = watchUnmatched();
    // Run 4242 was dispatched for another job; its artifact names this one.
    await harness.receive(
      "workflow_run",
      workflowRunPayload(4242, "success", "evokernel review review-9-ccccccc-000000"),
    );
    expect(unmatched()).toEqual([]);
  });

  it("after a restart, takes no other app's check run for its job", async () => {
    harness = await startHarness({ appId: 1 });
    const jobId = "review-7-aaaaaaa-123456";
    mockConfig(github());
    mockArtifact(writeZip({ "r.json": JSON.stringify(reviewFixture(jobId)) }));
    github()
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ per_page: 100 })
      .reply(200, {
        total_count: 1,
        check_runs: [
          {
            id: 908,
            name: "evokernel",
            head_sha: HEAD,
            status: "in_progress",
            external_id: `${jobId}@4242`,
            details_url: null,
            // Our name and external_id, another app's check run.
            app: { id: 2 },
          },
        ],
      });
    const unmatched = watchUnmatched();
    await harness.receive("workflow_run", workflowRunPayload(4242, "success"));
    expect(unmatched()).toEqual([]);
  });

  it("finds the job by the result's id when GitHub gave no run details", async () => {
    const scope = mockConfig(github())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, KERNEL_FILES)
      .post(`${R}/actions/workflows/evokernel.yml/dispatches`, record("dispatch"))
      .reply(204);
    mockStart(scope, { id: 907, link: true });
    await harness.receive("pull_request", pullRequestPayload("opened"));
    expect((bodies.checkLink?.[0] as { details_url?: string }).details_url).toBeUndefined();
    const spec = JSON.parse((bodies.dispatch?.[0] as { inputs: { spec: string } }).inputs.spec) as {
      id: string;
    };
    const review = reviewFixture(spec.id) as { tasks: { suggestion: unknown }[] };
    for (const task of review.tasks) task.suggestion = null;
    mockConfig(github())
      .get(`${R}/actions/runs/4343/artifacts`)
      .query({ name: "evokernel-result", per_page: 100 })
      .reply(200, {
        total_count: 1,
        artifacts: [{ id: 78, name: "evokernel-result", expired: false }],
      })
      .get(`${R}/actions/artifacts/78/zip`)
      .reply(200, writeZip({ "result.json": JSON.stringify(review) }), {
        "content-type": "application/zip",
      })
      .get(`${R}/pulls/7`)
      .reply(200, pull())
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .reply(200, [])
      .post(`${R}/issues/7/comments`)
      .reply(201, { id: 2 })
      // After creating it the app lists again (another instance may have raced it).
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .reply(200, [
        { id: 2, body: "<!-- evokernel:comment -->", user: { type: "Bot", login: BOT_LOGIN } },
      ])
      .patch(`${R}/check-runs/907`, record("check"))
      .reply(200, { id: 907 });
    // The run's run-name names the job: only that run may claim it. Its path as GitHub's
    // REST description shows it, with the ref after the file: still the configured workflow.
    const run = workflowRunPayload(4343, "success", `evokernel review ${spec.id}`) as {
      workflow_run: { path: string };
    };
    run.workflow_run.path = ".github/workflows/evokernel.yml@main";
    await harness.receive("workflow_run", run);
    expect((bodies.check?.[0] as { details_url: string }).details_url).toBe(
      "https://github.com/octo/kernels/actions/runs/4343",
    );
  });

  it("lets no other run claim a job dispatched without run details, whatever its result says", async () => {
    const scope = mockConfig(github())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, KERNEL_FILES)
      .post(`${R}/actions/workflows/evokernel.yml/dispatches`, record("dispatch"))
      .reply(204);
    mockStart(scope, { id: 907, link: true });
    await harness.receive("pull_request", pullRequestPayload("opened"));
    const spec = JSON.parse((bodies.dispatch?.[0] as { inputs: { spec: string } }).inputs.spec) as {
      id: string;
    };
    // Another job's run (its run-name says so) uploads a result naming this job.
    mockConfig(github())
      .get(`${R}/actions/runs/4344/artifacts`)
      .query({ name: "evokernel-result", per_page: 100 })
      .reply(200, {
        total_count: 1,
        artifacts: [{ id: 79, name: "evokernel-result", expired: false }],
      })
      .get(`${R}/actions/artifacts/79/zip`)
      .reply(200, writeZip({ "result.json": JSON.stringify(reviewFixture(spec.id)) }), {
        "content-type": "application/zip",
      });
    const unmatched = watchUnmatched();
    await harness.receive(
      "workflow_run",
      workflowRunPayload(4344, "success", "evokernel review review-3-bbbbbbb-000000"),
    );
    // Nothing read or posted for the job, its check run untouched.
    expect(unmatched()).toEqual([]);
  });

  it("fails a job whose run never reports, with a link, and cancels the run", async () => {
    // The deadline's clock is faked: on a busy machine a real 30 ms could pass before the run
    // is linked, and the job would time out before it has a run to cancel.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      harness = await startHarness({ jobTimeoutMs: 30_000 });
      await openPullWithJob();
      github()
        .post(`${R}/actions/runs/4242/cancel`)
        .reply(202, {})
        .patch(`${R}/check-runs/900`, record("check"))
        .reply(200, { id: 900 });
      expect(nock.isDone()).toBe(false);
      await vi.advanceTimersByTimeAsync(30_000);
      await vi.waitFor(() => expect(nock.isDone()).toBe(true), { timeout: 600_000, interval: 20 });
    } finally {
      vi.useRealTimers();
    }
    expect(stable(bodies.check)).toMatchSnapshot();
  });

  it("ignores runs of other workflows", async () => {
    for (const path of [".github/workflows/ci.yml", ".github/workflows/ci.yml@main"]) {
      mockConfig(github());
      const payload = workflowRunPayload(5555, "success") as { workflow_run: { path: string } };
      payload.workflow_run.path = path;
      await harness.receive("workflow_run", payload);
    }
  });
});

describe("commands", () => {
  function mockWriter(login = "maintainer", permission = "write") {
    return github().get(`${R}/collaborators/${login}/permission`).reply(200, { permission });
  }

  /** GitHub resolving a short commit name (the sha media type answers the SHA as text). */
  function mockResolve(scope: nock.Scope, name: string, full: string): nock.Scope {
    return scope
      .get(`${R}/commits/${name}`)
      .matchHeader("accept", /application\/vnd\.github\.(v3\.)?sha/)
      .reply(200, full, { "content-type": "application/vnd.github.sha; charset=utf-8" });
  }

  it("answers someone without write access, and runs nothing", async () => {
    github()
      .get(`${R}/collaborators/stranger/permission`)
      .reply(404, { message: "Not Found" })
      .post(`${R}/issues/7/comments`, record("reply"))
      .reply(201, { id: 2 });
    await harness.receive(
      "issue_comment",
      commentPayload("/optimize softmax", { login: "stranger" }),
    );
    expect(bodies.reply).toMatchSnapshot();
  });

  it("answers /help and an unknown command with the help", async () => {
    mockWriter()
      .post(`${R}/issues/comments/501/reactions`, { content: "+1" })
      .reply(201, {})
      .post(`${R}/issues/7/comments`, record("help"))
      .reply(201, { id: 2 });
    await harness.receive("issue_comment", commentPayload("/help"));
    mockWriter().post(`${R}/issues/7/comments`, record("unknown")).reply(201, { id: 3 });
    await harness.receive("issue_comment", commentPayload("/deploy", { id: 502 }));
    expect(bodies.help).toMatchSnapshot("help");
    expect(bodies.unknown).toMatchSnapshot("unknown");
  });

  it("ignores bots and prose", async () => {
    const unmatched = watchUnmatched();
    await harness.receive("issue_comment", commentPayload("/bench", { bot: true }));
    await harness.receive("issue_comment", commentPayload("thanks, looks good"));
    // Not even a permission check: a bot's command is no command.
    expect(unmatched()).toEqual([]);
  });

  it("binds /optimize to the head SHA at the command; the same command runs once at a time, across instances", async () => {
    const command = `/optimize softmax --budget 12 --proposer tuner @${HEAD.slice(0, 7)}`;
    const scope = mockResolve(
      mockWriter()
        .get(`${R}/pulls/7`)
        .reply(200, pull({ fork: true })),
      "aaaaaaa",
      HEAD,
    )
      .post(`${R}/issues/comments/501/reactions`, { content: "rocket" })
      .reply(201, {})
      .post(`${R}/actions/workflows/evokernel.yml/dispatches`, record("dispatch"))
      .reply(204);
    mockStart(scope, { id: 906, name: "evokernel optimize", fork: true, link: true });
    mockConfig(github());
    await harness.receive("issue_comment", commentPayload(command));
    const spec = JSON.parse(
      (bodies.dispatch?.[0] as { inputs: { spec: string } }).inputs.spec,
    ) as Record<string, unknown>;
    expect(stable(spec)).toMatchSnapshot("optimize spec");
    expect(spec.sha).toBe(HEAD);

    // The same comment redelivered under a new delivery id: nothing.
    await harness.receive("issue_comment", commentPayload(command));

    // The same command on the same commit from another comment, heard by another instance
    // while the job runs: GitHub's open check run says so; a reply, no second job.
    const running = {
      id: 906,
      name: "evokernel optimize",
      head_sha: HEAD,
      status: "in_progress",
      external_id: (bodies.checkLink?.[0] as { external_id: string }).external_id,
      details_url: "https://github.com/octo/kernels/actions/runs/4242",
    };
    const other = await startHarness();
    const again = (id: number, checkRuns: unknown[]) =>
      mockWriter()
        .get(`${R}/pulls/7`)
        .reply(200, pull({ fork: true }))
        .get(`${R}/commits/${HEAD}/check-runs`)
        .query({ check_name: "evokernel optimize", filter: "all", per_page: 100 })
        .reply(200, { total_count: checkRuns.length, check_runs: checkRuns })
        .post(`${R}/issues/comments/${id}/reactions`, { content: "eyes" })
        .reply(201, {});
    again(503, [running])
      .post(`${R}/issues/7/comments`, record("alreadyRunning"))
      .reply(201, { id: 9 });
    mockConfig(github());
    const unmatched = watchUnmatched();
    await other.receive(
      "issue_comment",
      commentPayload(`/optimize @${HEAD} --proposer tuner softmax --budget 12`, { id: 503 }),
    );
    expect(unmatched()).toEqual([]);
    expect(bodies.dispatch).toHaveLength(1);
    expect(bodies.alreadyRunning).toMatchSnapshot("the same command while it runs");

    // Once it has finished, asking again runs it again.
    const finished = { ...running, status: "completed" };
    const rerun = mockWriter()
      .get(`${R}/pulls/7`)
      .reply(200, pull({ fork: true }))
      .post(`${R}/issues/comments/504/reactions`, { content: "rocket" })
      .reply(201, {})
      .post(`${R}/actions/workflows/evokernel.yml/dispatches`, record("dispatch"))
      .reply(204);
    mockStart(rerun, {
      id: 908,
      name: "evokernel optimize",
      fork: true,
      link: true,
      existing: [finished],
    });
    mockConfig(github());
    await other.receive(
      "issue_comment",
      commentPayload(`/optimize @${HEAD} --proposer tuner softmax --budget 12`, { id: 504 }),
    );
    expect(bodies.dispatch).toHaveLength(2);
  });

  it("runs a fork's code only for the commit the command names, while it is the head", async () => {
    mockWriter()
      .get(`${R}/pulls/7`)
      .reply(200, pull({ fork: true }))
      .post(`${R}/issues/7/comments`, record("unnamed"))
      .reply(201, { id: 4 });
    await harness.receive("issue_comment", commentPayload("/bench softmax"));
    expect(bodies.unnamed).toMatchSnapshot("a fork's command without a commit");
    mockResolve(
      mockWriter()
        .get(`${R}/pulls/7`)
        .reply(200, pull({ fork: true, head: NEW_HEAD })),
      "aaaaaaa",
      HEAD,
    )
      .post(`${R}/issues/7/comments`, record("moved"))
      .reply(201, { id: 5 });
    await harness.receive(
      "issue_comment",
      commentPayload(`/bench softmax @${HEAD.slice(0, 7)}`, { id: 504 }),
    );
    expect(bodies.moved).toMatchSnapshot("the named commit is no longer the head");
  });

  it("starts nothing for a command another instance, or the app before a restart, started", async () => {
    const scope = mockWriter()
      .get(`${R}/pulls/7`)
      .reply(200, pull())
      .post(`${R}/issues/comments/601/reactions`, { content: "rocket" })
      .reply(201, {})
      .post(`${R}/actions/workflows/evokernel.yml/dispatches`, record("dispatch"))
      .reply(204);
    mockStart(scope, { id: 907, name: "evokernel bench", link: true });
    mockConfig(github());
    await harness.receive("issue_comment", commentPayload("/bench softmax", { id: 601 }));
    const check = bodies.checkLink?.[0] as { external_id: string };
    // The same comment again, to an instance that never saw it (its memory is its own).
    const other = await startHarness();
    mockWriter()
      .get(`${R}/pulls/7`)
      .reply(200, pull())
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ check_name: "evokernel bench", filter: "all", per_page: 100 })
      .reply(200, {
        total_count: 1,
        check_runs: [
          {
            id: 907,
            name: "evokernel bench",
            head_sha: HEAD,
            status: "queued",
            external_id: check.external_id,
            details_url: null,
          },
        ],
      });
    mockConfig(github());
    const unmatched = watchUnmatched();
    await other.receive("issue_comment", commentPayload("/bench softmax", { id: 601 }));
    // No second dispatch, no second check run, no reply.
    expect(unmatched()).toEqual([]);
    expect(bodies.dispatch).toHaveLength(1);
    expect(bodies.checkCreate).toHaveLength(1);
  });

  it("runs nothing when a fork's head moved between the command and the dispatch", async () => {
    const scope = mockResolve(
      mockWriter()
        .get(`${R}/pulls/7`)
        .reply(200, pull({ fork: true })),
      "aaaaaaa",
      HEAD,
    )
      .post(`${R}/issues/comments/501/reactions`, { content: "rocket" })
      .reply(201, {})
      .patch(`${R}/check-runs/903`, record("check"))
      .reply(200, { id: 903 });
    mockStart(scope, { id: 903, name: "evokernel bench", fork: true, head: NEW_HEAD });
    mockConfig(github());
    await harness.receive("issue_comment", commentPayload(`/bench softmax @${HEAD.slice(0, 7)}`));
    expect(bodies.dispatch).toBeUndefined();
    expect(stable(bodies.check)).toMatchSnapshot();
  });

  it("says so when no task changed and none was named", async () => {
    mockWriter()
      .get(`${R}/pulls/7`)
      .reply(200, pull())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, [{ filename: "README.md", status: "modified" }])
      .post(`${R}/issues/7/comments`, record("reply"))
      .reply(201, { id: 2 });
    mockConfig(github());
    await harness.receive("issue_comment", commentPayload("/bench"));
    expect(bodies.reply).toMatchSnapshot();
  });

  it("/cancel stops the PR's jobs", async () => {
    await openPullWithJob();
    mockWriter()
      .get(`${R}/pulls/7`)
      .reply(200, pull())
      .post(`${R}/actions/runs/4242/cancel`)
      .reply(202, {})
      .patch(`${R}/check-runs/900`, record("check"))
      .reply(200, { id: 900 })
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ per_page: 100 })
      .reply(200, { total_count: 0, check_runs: [] })
      .post(`${R}/issues/comments/501/reactions`, { content: "+1" })
      .reply(201, {});
    await harness.receive("issue_comment", commentPayload("/cancel"));
    expect(stable(bodies.check)).toMatchSnapshot();
  });
});

describe("the Apply button", () => {
  it("fast-forwards the PR's branch to the suggestion branch", async () => {
    github()
      .get(`${R}/collaborators/maintainer/permission`)
      .reply(200, { permission: "admin" })
      .get(`${R}/pulls/7`)
      .reply(200, pull())
      .get(`${R}/git/ref/heads%2Fevokernel%2F7-aaaaaaa`)
      .reply(200, { object: { sha: "commit1" } })
      .patch(`${R}/git/refs/heads%2Ffaster-softmax`, { sha: "commit1", force: false })
      .reply(200, {})
      .post(`${R}/issues/7/comments`, record("comment"))
      .reply(201, { id: 2 });
    await harness.receive("check_run", requestedActionPayload("review-7-aaaaaaa-123456@4242"));
    expect(bodies.comment).toMatchSnapshot();
  });

  it("opens a PR into the branch when it moved", async () => {
    github()
      .get(`${R}/collaborators/maintainer/permission`)
      .reply(200, { permission: "write" })
      .get(`${R}/pulls/7`)
      .reply(200, pull({ head: NEW_HEAD }))
      .get(`${R}/git/ref/heads%2Fevokernel%2F7-aaaaaaa`)
      .reply(200, { object: { sha: "commit1" } })
      .post(`${R}/pulls`, record("pull"))
      .reply(201, { html_url: "https://github.com/octo/kernels/pull/8" })
      .post(`${R}/issues/7/comments`, record("comment"))
      .reply(201, { id: 2 });
    await harness.receive("check_run", requestedActionPayload("review-7-aaaaaaa-123456@4242"));
    expect([bodies.pull, bodies.comment]).toMatchSnapshot();
  });
});

describe("Re-run on a check run", () => {
  function rerunPayload(externalId: string) {
    const payload = requestedActionPayload(externalId) as Record<string, unknown>;
    delete payload.requested_action;
    return { ...payload, action: "rerequested" };
  }

  it("starts the same kind of job again on the PR's head", async () => {
    const scope = github()
      .get(`${R}/collaborators/maintainer/permission`)
      .reply(200, { permission: "write" })
      .get(`${R}/pulls/7`)
      .reply(200, pull())
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, KERNEL_FILES)
      .post(`${R}/actions/workflows/evokernel.yml/dispatches`, record("dispatch"))
      .reply(200, {
        workflow_run_id: 4444,
        html_url: "https://github.com/octo/kernels/actions/runs/4444",
      });
    mockStart(scope, { id: 910, name: "evokernel bench", link: true });
    mockConfig(github());
    await harness.receive("check_run", rerunPayload("bench-7-aaaaaaa-123456@4242"));
    const spec = JSON.parse(
      (bodies.dispatch?.[0] as { inputs: { spec: string } }).inputs.spec,
    ) as Record<string, unknown>;
    expect(spec).toMatchObject({ kind: "bench", sha: HEAD, pr: 7, requestedBy: "maintainer" });
  });

  it("does nothing for a commit that is no longer the head", async () => {
    github()
      .get(`${R}/collaborators/maintainer/permission`)
      .reply(200, { permission: "admin" })
      .get(`${R}/pulls/7`)
      .reply(200, pull({ head: NEW_HEAD }));
    await harness.receive("check_run", rerunPayload("review-7-aaaaaaa-123456@4242"));
  });

  it("ignores other apps' check runs", async () => {
    const payload = rerunPayload("whatever") as unknown as { check_run: { name: string } };
    payload.check_run.name = "build";
    await harness.receive("check_run", payload);
  });
});
