// On GitHub Enterprise Server the dispatch sends only keys GHES documents: its GET /meta
// names an installed_version, so no `return_run_details` (GHES 3.17-3.19 answer 422 to it),
// and the run is found by listing the workflow's runs for the job id in its run-name. The
// app in-process against strict nock on a GHES address.
import nock from "nock";
import { Probot } from "probot";
import { afterEach, beforeEach, expect, it } from "vitest";
import { createEvokernelApp, type EvokernelApp } from "../../src/app/index.js";
import { createActionsDispatcher } from "../../src/app/dispatch/actions.js";
import { evokernelOctokit } from "../../src/app/octokit.js";
import { forgetServerFeatures } from "../../src/app/server-features.js";
import {
  HEAD,
  OWNER,
  REPO,
  BASE,
  kernelPatch,
  mockJobStart,
  pullRequestPayload,
  strictNock,
} from "../helpers/app-harness.js";

const GHES = "https://ghe.corp.example";
const R = `/api/v3/repos/${OWNER}/${REPO}`;
const CONFIG_PATH = /^\/api\/v3\/repos\/octo\/kernels\/contents\/\.github(%2F|\/)evokernel\.yml$/;

/** PR 7 as GitHub answers it: open, its head still HEAD. */
function pullOf() {
  const repo = { full_name: `${OWNER}/${REPO}` };
  return {
    number: 7,
    state: "open",
    draft: false,
    head: { sha: HEAD, ref: "faster-softmax", repo },
    base: { sha: BASE, ref: "main", repo },
  };
}

let mocks: { done(): void };
let probot: Probot;
let app: EvokernelApp;

beforeEach(async () => {
  mocks = strictNock();
  forgetServerFeatures();
  probot = new Probot({
    githubToken: "test",
    baseUrl: `${GHES}/api/v3`,
    logLevel: "fatal",
    Octokit: evokernelOctokit({ throttle: false, retry: false }),
  });
  app = createEvokernelApp({
    concurrency: 1,
    jobTimeoutMs: 3_600_000,
    forceLocal: false,
    actions: createActionsDispatcher([0, 0]),
  });
  await probot.load(app.appFn);
});

afterEach(() => {
  mocks.done();
});

it("dispatches without return_run_details and finds the run by its job id", async () => {
  const bodies: Record<string, unknown> = {};
  let jobId = "";
  nock(GHES)
    .get(CONFIG_PATH)
    .reply(200, "pullRequests: bench\nworkflow: evokernel.yml\n", {
      "content-type": "text/plain; charset=utf-8",
    })
    .get(`${R}/pulls/7/files`)
    .query({ per_page: 100 })
    .reply(200, [
      { filename: "kernels/softmax/kernel.cu", status: "modified", patch: kernelPatch() },
    ])
    .get("/api/v3/meta")
    .reply(200, { installed_version: "3.19.2", verifiable_password_authentication: false })
    .post(`${R}/actions/workflows/evokernel.yml/dispatches`, (body: Record<string, unknown>) => {
      bodies.dispatch = body;
      jobId = (JSON.parse((body.inputs as { spec: string }).spec) as { id: string }).id;
      return true;
    })
    .reply(204)
    // The first look finds only another job's run; the second finds this one.
    .get(`${R}/actions/workflows/evokernel.yml/runs`)
    .query((query) => query.event === "workflow_dispatch" && String(query.created).startsWith(">="))
    .reply(200, () => ({
      total_count: 1,
      workflow_runs: [
        {
          id: 11,
          html_url: `${GHES}/${OWNER}/${REPO}/actions/runs/11`,
          display_title: "evokernel review review-3-bbbbbbb-000000",
        },
      ],
    }))
    .get(`${R}/actions/workflows/evokernel.yml/runs`)
    .query(true)
    .reply(200, () => ({
      total_count: 2,
      workflow_runs: [
        {
          id: 12,
          html_url: `${GHES}/${OWNER}/${REPO}/actions/runs/12`,
          display_title: `evokernel review ${jobId}`,
        },
        {
          id: 11,
          html_url: `${GHES}/${OWNER}/${REPO}/actions/runs/11`,
          display_title: "evokernel review review-3-bbbbbbb-000000",
        },
      ],
    }));
  mockJobStart(nock(GHES), {
    id: 900,
    repoPath: R,
    pull: pullOf(),
    linked: (body) => {
      bodies.check = body;
    },
  });
  await probot.receive({
    id: "d1",
    name: "pull_request",
    payload: pullRequestPayload("opened"),
  } as never);
  await app.idle();
  expect(bodies.dispatch).not.toHaveProperty("return_run_details");
  expect(bodies.check).toMatchObject({
    details_url: `${GHES}/${OWNER}/${REPO}/actions/runs/12`,
    // The job's deadline follows (jobs/finish.ts, jobs/recover.ts).
    external_id: expect.stringMatching(new RegExp(`^${jobId}@12~\\d+\\+[0-9a-f]{8}$`)) as unknown,
  });
});
