// Every check run the app opens ends (issue 17.2): a report that fails half-way concludes the
// check run with the reason; when even that fails the job stays on the books and is
// concluded later; deadlines live in the check run's external_id, and a restarted app
// concludes its own runs past theirs (and never another app's). Strict nock throughout.
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { externalIdOf, parseExternalId } from "../../src/app/job-registry.js";
import { writeZip } from "../helpers/zip-writer.js";
import {
  API,
  BASE,
  BOT_LOGIN,
  CONFIG_PATH,
  HEAD,
  OWNER,
  REPO,
  mockHistoryKept,
  mockJobStart,
  mockNoAnswers,
  pullRequestPayload,
  reviewFixture,
  startHarness,
  strictNock,
  workflowRunPayload,
  type Harness,
} from "../helpers/app-harness.js";

const R = `/repos/${OWNER}/${REPO}`;
let mocks: { done(): void };
let harness: Harness;
let bodies: unknown[];

beforeEach(() => {
  mocks = strictNock({ failOnUnmatched: true });
  bodies = [];
});

afterEach(() => {
  mocks.done();
});

function record(body: nock.Body): boolean {
  bodies.push(body);
  return true;
}

function openPull() {
  return {
    number: 7,
    state: "open",
    head: { sha: HEAD, ref: "x", repo: { full_name: `${OWNER}/${REPO}` } },
    base: { sha: BASE, ref: "main", repo: { full_name: `${OWNER}/${REPO}` } },
  };
}

async function openPullWithJob(): Promise<string> {
  let spec = "";
  nock(API)
    .get(CONFIG_PATH)
    .reply(200, "pullRequests: bench\n", { "content-type": "text/plain; charset=utf-8" })
    .get(`${R}/pulls/7/files`)
    .query({ per_page: 100 })
    // Both tasks the result fixture holds: the app checks a result names only planned tasks.
    .reply(200, [
      { filename: "kernels/softmax/kernel.cu", status: "modified", patch: "@@ -1 +1 @@" },
      { filename: "kernels/layernorm/kernel.cu", status: "modified", patch: "@@ -1 +1 @@" },
    ])
    .post(
      `${R}/actions/workflows/evokernel.yml/dispatches`,
      (body: { inputs: { spec: string } }) => {
        spec = body.inputs.spec;
        return true;
      },
    )
    .reply(200, { workflow_run_id: 4242, html_url: "https://github.com/o/r/actions/runs/4242" });
  mockJobStart(nock(API), { id: 900, pull: openPull(), linked: () => undefined });
  await harness.receive("pull_request", pullRequestPayload("opened"));
  return (JSON.parse(spec) as { id: string }).id;
}

function mockResult(jobId: string): void {
  const review = reviewFixture(jobId) as { tasks: { suggestion: unknown }[] };
  for (const task of review.tasks) task.suggestion = null;
  mockNoAnswers(nock(API))
    .get(`${R}/actions/runs/4242/artifacts`)
    .query({ name: "evokernel-result", per_page: 100 })
    .reply(200, {
      total_count: 1,
      artifacts: [{ id: 77, name: "evokernel-result", expired: false }],
    })
    .get(`${R}/actions/artifacts/77/zip`)
    .reply(200, writeZip({ "r.json": JSON.stringify(review) }), {
      "content-type": "application/zip",
    })
    .get(`${R}/pulls/7`)
    .reply(200, {
      number: 7,
      state: "open",
      head: { sha: HEAD, ref: "x", repo: { full_name: `${OWNER}/${REPO}` } },
      base: { sha: BASE, ref: "main", repo: { full_name: `${OWNER}/${REPO}` } },
    })
    // Keeping the timings for the history (logged, not fatal) and posting the comment
    // fail: GitHub has an outage.
    .get(`${R}/git/ref/heads%2Fevokernel-state`)
    .reply(502, { message: "Server Error" })
    .get(`${R}/issues/7/comments`)
    .query({ per_page: 100 })
    .reply(502, { message: "Server Error" });
}

describe("a job's check run always ends", () => {
  it("concludes the check run with the reason when reporting fails half-way", async () => {
    harness = await startHarness();
    const jobId = await openPullWithJob();
    mockResult(jobId);
    nock(API).patch(`${R}/check-runs/900`, record).reply(200, { id: 900 });
    // Without it the check run stays in progress: this PATCH is never sent (unused mock).
    await harness.receive("workflow_run", workflowRunPayload(4242, "success"));
    expect(bodies[0]).toMatchObject({ status: "completed", conclusion: "failure" });
    expect(JSON.stringify(bodies[0])).toMatch(
      /could not finish reporting the result: GitHub: list the comments of #7 failed \(502\)/,
    );
  });

  it("keeps the job on the books when even the conclusion fails, and concludes it later", async () => {
    harness = await startHarness({ retryEndMs: 50 });
    const jobId = await openPullWithJob();
    mockResult(jobId);
    nock(API)
      .patch(`${R}/check-runs/900`)
      .reply(502, { message: "Server Error" })
      .patch(`${R}/check-runs/900`, record)
      .reply(200, { id: 900 });
    await harness.receive("workflow_run", workflowRunPayload(4242, "success"));
    await vi.waitFor(() => expect(bodies).toHaveLength(1), { timeout: 600_000, interval: 20 });
    expect(bodies[0]).toMatchObject({ status: "completed", conclusion: "failure" });
  });
});

describe("a result", () => {
  it("counts only if it names the job and commit that were dispatched", async () => {
    harness = await startHarness();
    const jobId = await openPullWithJob();
    // Code from the PR ran beside the result: it names another PR's job.
    const other = reviewFixture(jobId.replace(/^review-7-/, "review-8-"));
    nock(API)
      .get(`${R}/actions/runs/4242/artifacts`)
      .query({ name: "evokernel-result", per_page: 100 })
      .reply(200, {
        total_count: 1,
        artifacts: [{ id: 77, name: "evokernel-result", expired: false }],
      })
      .get(`${R}/actions/artifacts/77/zip`)
      .reply(200, writeZip({ "r.json": JSON.stringify(other) }), {
        "content-type": "application/zip",
      })
      // Nothing is posted: no PR read, no comment, no review; the check run fails.
      .patch(`${R}/check-runs/900`, record)
      .reply(200, { id: 900 });
    await harness.receive("workflow_run", workflowRunPayload(4242, "success"));
    expect(bodies[0]).toMatchObject({ status: "completed", conclusion: "failure" });
    expect(JSON.stringify(bodies[0])).toContain("names another job or commit");
  });
});

describe("a run that ends before its job knows its run", () => {
  it("is matched to its job once the dispatch names the run, not left to the deadline", async () => {
    // The dispatch answers only when the test says: the run ends in between.
    let answer: () => void = () => undefined;
    const dispatched = new Promise<void>((resolve) => (answer = resolve));
    const specs: string[] = [];
    harness = await startHarness({
      // Two work items of one installation at once (a quarter of the slots).
      concurrency: 8,
      actions: {
        name: "actions",
        async start({ spec }) {
          specs.push(spec.id);
          await dispatched;
          return { runId: 4242, runUrl: "https://github.com/o/r/actions/runs/4242" };
        },
        cancel: () => Promise.resolve(),
      },
    });
    const pull = {
      number: 7,
      state: "open",
      head: { sha: HEAD, ref: "x", repo: { full_name: `${OWNER}/${REPO}` } },
      base: { sha: BASE, ref: "main", repo: { full_name: `${OWNER}/${REPO}` } },
    };
    mockJobStart(
      nock(API)
        .get(CONFIG_PATH)
        .reply(200, "pullRequests: bench\n", { "content-type": "text/plain; charset=utf-8" })
        .get(`${R}/pulls/7/files`)
        .query({ per_page: 100 })
        .reply(200, [
          { filename: "kernels/softmax/kernel.cu", status: "modified", patch: "@@ -1 +1 @@" },
          { filename: "kernels/layernorm/kernel.cu", status: "modified", patch: "@@ -1 +1 @@" },
        ]),
      { id: 900, pull },
    );
    await harness.probot.receive({
      id: "early-pr",
      name: "pull_request",
      payload: pullRequestPayload("opened"),
    } as never);
    await vi.waitFor(() => expect(specs).toHaveLength(1), { timeout: 600_000, interval: 5 });
    const jobId = specs[0] ?? "";
    const review = reviewFixture(jobId) as { tasks: { suggestion: unknown }[] };
    for (const task of review.tasks) task.suggestion = null;
    const artifact = () =>
      nock(API)
        .get(`${R}/actions/runs/4242/artifacts`)
        .query({ name: "evokernel-result", per_page: 100 })
        .reply(200, {
          total_count: 1,
          artifacts: [{ id: 77, name: "evokernel-result", expired: false }],
        })
        .get(`${R}/actions/artifacts/77/zip`)
        .reply(200, writeZip({ "r.json": JSON.stringify(review) }), {
          "content-type": "application/zip",
        });
    // The run's result comes while the dispatch has not answered: the job does not know its
    // run yet, and the run's own run-name (the workflow sets its own) does not name the job.
    artifact()
      .get(CONFIG_PATH)
      .reply(200, "pullRequests: bench\n", { "content-type": "text/plain; charset=utf-8" });
    await harness.probot.receive({
      id: "early-run",
      name: "workflow_run",
      payload: workflowRunPayload(4242, "success", "Kernel benchmarks"),
    } as never);
    // Only the pull request's work (waiting for its dispatch) is left.
    await vi.waitFor(() => expect(harness.app.pending).toBe(1), { timeout: 600_000, interval: 5 });
    // The dispatch answers with the run: the check run is linked, the parked run reported.
    mockHistoryKept(
      mockNoAnswers(artifact())
        .patch(`${R}/check-runs/900`)
        .reply(200, { id: 900 })
        .get(`${R}/pulls/7`)
        .reply(200, pull),
    )
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .reply(200, [
        { id: 3, body: "<!-- evokernel:comment -->", user: { type: "Bot", login: BOT_LOGIN } },
      ])
      .patch(`${R}/issues/comments/3`)
      .reply(200, { id: 3 })
      .patch(`${R}/check-runs/900`, record)
      .reply(200, { id: 900 });
    answer();
    await harness.app.idle();
    // The run's verdict (the fixture holds a wrong kernel), reported on the job's check run.
    expect(bodies[0]).toMatchObject({
      status: "completed",
      conclusion: "failure",
      output: { title: "2 kernels: 1 wrong, 1 improvement" },
    });
  });
});

describe("deadlines", () => {
  it("are written into external_id and read back", () => {
    const deadline = Date.UTC(2026, 10, 25, 12, 0, 0);
    const id = externalIdOf("review-7-aaaaaaa-123456", 4242, deadline);
    expect(id).toBe(`review-7-aaaaaaa-123456@4242~${deadline / 1000}`);
    expect(parseExternalId(id)).toEqual({
      jobId: "review-7-aaaaaaa-123456",
      runId: 4242,
      deadline,
    });
    expect(parseExternalId("review-7-aaaaaaa-123456~1764072000")).toEqual({
      jobId: "review-7-aaaaaaa-123456",
      deadline: 1764072000000,
    });
    expect(parseExternalId("review-7-aaaaaaa-123456@4242")).toEqual({
      jobId: "review-7-aaaaaaa-123456",
      runId: 4242,
    });
    expect(parseExternalId("review-7-aaaaaaa-123456@x")).toBeUndefined();
    expect(parseExternalId("someone-else")).toBeUndefined();
  });

  it("a restarted app concludes its own open check runs past their deadline, only those", async () => {
    const past = Math.floor(Date.now() / 1000) - 60;
    const future = Math.floor(Date.now() / 1000) + 3600;
    const run = (id: number, external: string, appId: number, status = "in_progress") => ({
      id,
      name: "evokernel",
      head_sha: HEAD,
      status,
      external_id: external,
      details_url: null,
      app: { id: appId },
    });
    nock(API)
      .get("/app/installations")
      .query({ per_page: 100 })
      .reply(200, [{ id: 1, suspended_at: null }])
      .get("/installation/repositories")
      .query({ per_page: 100 })
      .reply(200, {
        total_count: 1,
        repositories: [{ name: REPO, owner: { login: OWNER }, default_branch: "main" }],
      })
      .get(`${R}/pulls`)
      .query({ state: "open", sort: "updated", direction: "desc", per_page: 50 })
      .reply(200, [{ number: 7, head: { sha: HEAD } }])
      .get(`${R}/git/ref/heads%2Fmain`)
      .reply(200, { object: { sha: BASE } })
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ per_page: 100 })
      .reply(200, {
        total_count: 5,
        check_runs: [
          run(901, `review-7-aaaaaaa-111111@4242~${past}`, 1),
          run(902, `review-7-aaaaaaa-222222@4243~${future}`, 1),
          // Another app's check run with a name and id like ours: never touched.
          run(903, `review-7-aaaaaaa-333333@4244~${past}`, 2),
          run(904, `review-7-aaaaaaa-444444@4245~${past}`, 1, "completed"),
          run(905, "not-ours", 1),
        ],
      })
      .get(`${R}/commits/${BASE}/check-runs`)
      .query({ per_page: 100 })
      .reply(200, { total_count: 0, check_runs: [] })
      .post(`${R}/actions/runs/4242/cancel`)
      .reply(202, {})
      .patch(`${R}/check-runs/901`, record)
      .reply(200, { id: 901 });
    harness = await startHarness({ recover: { appId: 1 } });
    await harness.app.idle();
    expect(bodies).toHaveLength(1);
    expect(bodies[0]).toMatchObject({ status: "completed", conclusion: "timed_out" });
  });
});

describe("local jobs across a restart", () => {
  /** A record the last process left: `extra` says how far its job got. */
  async function leftRecord(stateDir: string, jobId: string, checkRunId: number, extra = {}) {
    await writeFile(
      join(stateDir, `${jobId}.json`),
      JSON.stringify({ jobId, installationId: 1, owner: OWNER, repo: REPO, checkRunId, ...extra }),
    );
  }

  function openCheckRun(id: number, jobId: string) {
    return {
      id,
      name: "evokernel",
      head_sha: HEAD,
      status: "queued",
      external_id: `${jobId}~${Math.floor(Date.now() / 1000) + 3600}`,
    };
  }

  function localHarness(stateDir: string, extra = {}) {
    return startHarness({
      local: { repoDir: stateDir, runnerCommand: ["true"], gpus: 1, timeoutMs: 60_000, stateDir },
      ...extra,
    });
  }

  it("fail at start-up when the last process left them queued or running, each with its reason", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), "evk-lost-"));
    try {
      // The last process died: one job never ran, one ran (its runner is gone), one ended in
      // a failure it could not report.
      await leftRecord(stateDir, "review-7-aaaaaaa-123456", 900);
      await leftRecord(stateDir, "bench-7-aaaaaaa-123456", 901, {
        pid: 999_999_999,
        specFile: "/nonexistent/spec.json",
      });
      await leftRecord(stateDir, "verify-7-aaaaaaa-123456", 902, {
        outcome: { kind: "failed", message: "the runner exited with 3 (no CUDA GPU)" },
      });
      const summaries = new Map<string, string>();
      for (const [id, jobId] of [
        [900, "review-7-aaaaaaa-123456"],
        [901, "bench-7-aaaaaaa-123456"],
        [902, "verify-7-aaaaaaa-123456"],
      ] as const)
        nock(API)
          .get(`${R}/check-runs/${id}`)
          .reply(200, openCheckRun(id, jobId))
          .patch(`${R}/check-runs/${id}`, (body: { output: { summary: string } }) => {
            summaries.set(jobId, body.output.summary);
            return record(body);
          })
          .reply(200, { id });
      harness = await localHarness(stateDir);
      await harness.app.idle();
      // At once, not at the deadline an hour away; each saying how far it got.
      expect(bodies).toHaveLength(3);
      for (const body of bodies)
        expect(body).toMatchObject({ status: "completed", conclusion: "failure" });
      expect(summaries.get("review-7-aaaaaaa-123456")).toContain("it never ran");
      expect(summaries.get("bench-7-aaaaaaa-123456")).toContain("the runner was stopped");
      expect(summaries.get("verify-7-aaaaaaa-123456")).toBe(
        "The job failed on the app's machine: the runner exited with 3 (no CUDA GPU)",
      );
      // Concluded: their records are gone.
      expect(await readdir(stateDir)).toEqual([]);
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });

  it("keep a lost job's record until GitHub takes its conclusion, for the next start-up", async () => {
    const stateDir = await mkdtemp(join(tmpdir(), "evk-lost-"));
    try {
      await leftRecord(stateDir, "review-7-aaaaaaa-654321", 903);
      // GitHub is down while the app starts.
      nock(API).get(`${R}/check-runs/903`).reply(502, { message: "Server Error" });
      harness = await localHarness(stateDir, { retryEndMs: 3_600_000 });
      await harness.app.idle();
      expect(bodies).toEqual([]);
      expect(await readdir(stateDir)).toEqual(["review-7-aaaaaaa-654321.json"]);
      // The next start-up (or the retry) concludes it, and only then drops the record.
      nock(API)
        .get(`${R}/check-runs/903`)
        .reply(200, openCheckRun(903, "review-7-aaaaaaa-654321"))
        .patch(`${R}/check-runs/903`, record)
        .reply(200, { id: 903 });
      harness = await localHarness(stateDir);
      await harness.app.idle();
      expect(bodies[0]).toMatchObject({ status: "completed", conclusion: "failure" });
      expect(await readdir(stateDir)).toEqual([]);
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });
});

describe("what a pull request may queue, and closing it", () => {
  /** A review job of its own work: task `kernels/k<task>` changed. */
  function startMocks(run: number, check: number, task: number): void {
    mockJobStart(
      nock(API)
        .get(CONFIG_PATH)
        .reply(200, "pullRequests: bench\n", { "content-type": "text/plain; charset=utf-8" })
        .get(`${R}/pulls/7/files`)
        .query({ per_page: 100 })
        .reply(200, [
          { filename: `kernels/k${task}/kernel.cu`, status: "modified", patch: "@@ -1 +1 @@" },
        ])
        .post(`${R}/actions/workflows/evokernel.yml/dispatches`)
        .reply(200, {
          workflow_run_id: run,
          html_url: `https://github.com/o/r/actions/runs/${run}`,
        }),
      { id: check, pull: openPull(), linked: () => undefined },
    );
  }

  it("caps the jobs one pull request has running; the next says why and runs nothing", async () => {
    harness = await startHarness();
    // Four jobs of different work (the same work twice is one job: jobs/claim.ts).
    for (let i = 0; i < 4; i++) {
      startMocks(5000 + i, 950 + i, i);
      await harness.receive("pull_request", pullRequestPayload("reopened"));
    }
    nock(API)
      .get(CONFIG_PATH)
      .reply(200, "pullRequests: bench\n", { "content-type": "text/plain; charset=utf-8" })
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, [
        { filename: "kernels/softmax/kernel.cu", status: "modified", patch: "@@ -1 +1 @@" },
      ])
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ check_name: "evokernel", filter: "all", per_page: 100 })
      .reply(200, { total_count: 0, check_runs: [] })
      // No dispatch: a completed neutral check run that says why.
      .post(`${R}/check-runs`, record)
      .reply(201, { id: 960 });
    await harness.receive("pull_request", pullRequestPayload("reopened"));
    expect(bodies[0]).toMatchObject({
      status: "completed",
      conclusion: "neutral",
      output: { title: "Not started: too many jobs" },
    });
  });

  it("caps the jobs one installation has running, all its pull requests together", async () => {
    harness = await startHarness({ maxJobsPerInstallation: 1 });
    await openPullWithJob();
    nock(API)
      .get(CONFIG_PATH)
      .reply(200, "pullRequests: bench\n", { "content-type": "text/plain; charset=utf-8" })
      .get(`${R}/pulls/8/files`)
      .query({ per_page: 100 })
      .reply(200, [
        { filename: "kernels/softmax/kernel.cu", status: "modified", patch: "@@ -1 +1 @@" },
      ])
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ check_name: "evokernel", filter: "all", per_page: 100 })
      .reply(200, { total_count: 0, check_runs: [] })
      // Another pull request of the same installation: no dispatch, a neutral check run.
      .post(`${R}/check-runs`, record)
      .reply(201, { id: 961 });
    await harness.receive("pull_request", pullRequestPayload("opened", { number: 8 }));
    expect(bodies[0]).toMatchObject({
      status: "completed",
      conclusion: "neutral",
      output: {
        title: "Not started: too many jobs",
        summary: expect.stringContaining(
          "This installation already has 1 evokernel jobs",
        ) as unknown,
      },
    });
  });

  it("cancels the jobs of a pull request that is closed", async () => {
    harness = await startHarness();
    await openPullWithJob();
    nock(API)
      .post(`${R}/actions/runs/4242/cancel`)
      .reply(202, {})
      .patch(`${R}/check-runs/900`, record)
      .reply(200, { id: 900 })
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ per_page: 100 })
      .reply(200, { total_count: 0, check_runs: [] })
      // its timings, kept for the history, would be forgotten: there are none
      .get(`${R}/git/ref/heads%2Fevokernel-state`)
      .reply(404, { message: "Not Found" });
    await harness.receive("pull_request", pullRequestPayload("closed"));
    expect(bodies[0]).toMatchObject({
      status: "completed",
      conclusion: "cancelled",
      output: { summary: expect.stringContaining("The pull request was closed.") as unknown },
    });
  });
});
