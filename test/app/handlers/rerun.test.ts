// Every re-run button is answered, reading only the fields the webhook schema promises:
// "Re-run all checks" (check_suite.rerequested) re-runs each evokernel job on that commit,
// and a requested_action without an identifier is not an unreadable payload. In-process,
// strict nock, payloads from @octokit/webhooks-examples.
import examples from "@octokit/webhooks-examples";
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  API,
  BASE,
  CONFIG_PATH,
  HEAD,
  NEW_HEAD,
  OWNER,
  REPO,
  kernelPatch,
  mockJobStart,
  requestedActionPayload,
  startHarness,
  strictNock,
  type Harness,
} from "../../helpers/app-harness.js";
import { checkRunEventSchema } from "../../../src/app/handlers/payloads.js";

const R = `/repos/${OWNER}/${REPO}`;
const CONFIG = "pullRequests: bench\nworkflow: evokernel.yml\n";
const KERNEL_FILES = [
  { filename: "kernels/softmax/kernel.cu", status: "modified", patch: kernelPatch() },
];

let mocks: { done(): void };
let harness: Harness;
let dispatched: unknown[];

beforeEach(async () => {
  mocks = strictNock();
  dispatched = [];
  harness = await startHarness();
});

afterEach(() => {
  mocks.done();
});

function pull(head = HEAD) {
  const repo = { full_name: `${OWNER}/${REPO}` };
  return {
    number: 7,
    state: "open",
    draft: false,
    head: { sha: head, ref: "faster-softmax", repo },
    base: { sha: BASE, ref: "main", repo },
  };
}

function suitePayload(sha = HEAD): Record<string, unknown> {
  const group = (
    examples as unknown as { name: string; examples: Record<string, unknown>[] }[]
  ).find((item) => item.name === "check_suite");
  const found = group?.examples.find((item) => item.action === "rerequested");
  if (!found) throw new Error("no check_suite.rerequested example");
  const example = structuredClone(found);
  const suite = example.check_suite as Record<string, unknown>;
  const repository = {
    ...(example.repository as Record<string, unknown>),
    name: REPO,
    full_name: `${OWNER}/${REPO}`,
    owner: { login: OWNER, type: "Organization" },
    default_branch: "main",
  };
  return {
    ...example,
    installation: { id: 1 },
    repository,
    sender: { login: "maintainer", type: "User" },
    check_suite: { ...suite, id: 5150, head_sha: sha },
  };
}

function checkRuns(sha: string, runs: { id: number; name: string; external_id: string | null }[]) {
  return {
    total_count: runs.length,
    check_runs: runs.map((run) => ({ ...run, head_sha: sha, status: "completed" })),
  };
}

describe("Re-run all checks (check_suite.rerequested)", () => {
  it("re-runs each evokernel job of the commit once, as its own Re-run would", async () => {
    nock(API)
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ per_page: 100 })
      .reply(
        200,
        checkRuns(HEAD, [
          { id: 900, name: "evokernel", external_id: "review-7-aaaaaaa-123456@4242" },
          // An older run of the same job on this commit: one re-run, not two.
          { id: 899, name: "evokernel", external_id: "review-7-aaaaaaa-654321@4241" },
          { id: 10, name: "build", external_id: null },
        ]),
      )
      .get(`${R}/collaborators/maintainer/permission`)
      .reply(200, { permission: "write" })
      .get(`${R}/pulls/7`)
      .reply(200, pull())
      .get(CONFIG_PATH)
      .reply(200, CONFIG, { "content-type": "text/plain; charset=utf-8" })
      .get(`${R}/pulls/7/files`)
      .query({ per_page: 100 })
      .reply(200, KERNEL_FILES)
      .post(`${R}/actions/workflows/evokernel.yml/dispatches`, (body: unknown) => {
        dispatched.push(body);
        return true;
      })
      .reply(200, {
        workflow_run_id: 4444,
        html_url: "https://github.com/octo/kernels/actions/runs/4444",
      });
    mockJobStart(nock(API), { id: 910, pull: pull(), linked: () => undefined });
    await harness.receive("check_suite", suitePayload());
    expect(dispatched).toHaveLength(1);
    const spec = JSON.parse((dispatched[0] as { inputs: { spec: string } }).inputs.spec) as Record<
      string,
      unknown
    >;
    expect(spec).toMatchObject({ kind: "review", sha: HEAD, pr: 7, requestedBy: "maintainer" });
  });

  it("does nothing on a commit that is no longer the PR's head", async () => {
    nock(API)
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ per_page: 100 })
      .reply(
        200,
        checkRuns(HEAD, [
          { id: 900, name: "evokernel", external_id: "bench-7-aaaaaaa-123456@4242" },
        ]),
      )
      .get(`${R}/collaborators/maintainer/permission`)
      .reply(200, { permission: "admin" })
      .get(`${R}/pulls/7`)
      .reply(200, pull(NEW_HEAD));
    await harness.receive("check_suite", suitePayload());
    expect(dispatched).toEqual([]);
  });
});

describe("check_run.requested_action", () => {
  it("reads a payload whose requested_action has no identifier, and does nothing", async () => {
    const payload = requestedActionPayload("review-7-aaaaaaa-123456@4242");
    payload.requested_action = {};
    // The schema the handler reads with takes it (the webhook schema's identifier is
    // optional); it is not the Apply button, so no request is made (strict nock).
    expect(checkRunEventSchema.safeParse(payload).success).toBe(true);
    await harness.receive("check_run", payload);
  });
});
