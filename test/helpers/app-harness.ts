// The app under test in-process: a Probot with retries and throttling off, evokernel loaded
// with its own state, strict nock (no request leaves unmocked, no mock stays unused), and
// webhook payloads from @octokit/webhooks-examples adapted per case.
import examples from "@octokit/webhooks-examples";
import nock from "nock";
import { Probot } from "probot";
import { readFileSync } from "node:fs";
import { createEvokernelApp, type EvokernelApp } from "../../src/app/index.js";
import { evokernelOctokit } from "../../src/app/octokit.js";
import type { AppSettings } from "../../src/app/settings.js";

export const OWNER = "octo";
export const REPO = "kernels";
export const API = "https://api.github.com";
export const HEAD = "a".repeat(40);
export const BASE = "b".repeat(40);
export const NEW_HEAD = "c".repeat(40);
/** The app's bot login in tests: what its own comments and reviews are found by. */
export const BOT_LOGIN = "evokernel[bot]";
export const CONFIG_PATH = /^\/repos\/octo\/kernels\/contents\/\.github(%2F|\/)evokernel\.yml$/;

export interface Harness {
  probot: Probot;
  app: EvokernelApp;
  receive(name: string, payload: unknown, id?: string): Promise<void>;
}

let deliveries = 0;

export async function startHarness(settings: Partial<AppSettings> = {}): Promise<Harness> {
  const probot = new Probot({
    githubToken: "test",
    logLevel: (process.env.EVK_TEST_LOG as "error" | undefined) ?? "fatal",
    // Not ProbotOctokit.defaults({ throttle: { enabled: false } }): Probot's own throttle
    // options override plain defaults, and every write would wait a second.
    Octokit: evokernelOctokit({ throttle: false, retry: false }),
  });
  const app = createEvokernelApp({
    concurrency: 4,
    jobTimeoutMs: 3_600_000,
    forceLocal: false,
    botLogin: BOT_LOGIN,
    ...settings,
  });
  await probot.load(app.appFn);
  return {
    probot,
    app,
    async receive(name, payload, id) {
      // The payload is built from examples and checked by the app's own zod schemas.
      await probot.receive({ id: id ?? `delivery-${++deliveries}`, name, payload } as never);
      await app.idle();
    },
  };
}

/** Strict nock for every test: call in beforeEach / afterEach. */
export function strictNock(options: { failOnUnmatched?: boolean } = {}): { done(): void } {
  nock.disableNetConnect();
  // failOnUnmatched: a request no mock matched fails the test even where the app caught the
  // error (a report that fails is concluded as a failure, which a test could otherwise take
  // for success). Opt-in for now: turning it on everywhere shows unmocked requests in older
  // tests (the approvals tests' workflow-run polling, git trees in some report tests).
  const unmatched: string[] = [];
  const onNoMatch = (request: { method?: string; path?: string; href?: string }) => {
    if (request.href?.startsWith("http://127.0.0.1")) return;
    unmatched.push(`${request.method ?? "?"} ${request.href ?? request.path ?? "?"}`);
  };
  nock.emitter.on("no match", onNoMatch);
  return {
    done() {
      nock.emitter.removeListener("no match", onNoMatch);
      const pending = nock.pendingMocks();
      nock.cleanAll();
      nock.enableNetConnect();
      if (pending.length > 0) throw new Error(`unused mocks: ${pending.join(", ")}`);
      if (options.failOnUnmatched === true && unmatched.length > 0)
        throw new Error(`unmocked requests: ${unmatched.join(", ")}`);
    },
  };
}

/**
 * Requests no mock matched from now on, for tests under plain strictNock: where the app
 * catches the error of an unmocked request (work that fails is logged), a test that expects
 * no request at all asserts this is empty. Call the returned function to stop and read it.
 */
export function watchUnmatched(): () => string[] {
  const unmatched: string[] = [];
  const onNoMatch = (request: { method?: string; path?: string; href?: string }) =>
    unmatched.push(`${request.method ?? "?"} ${request.href ?? request.path ?? "?"}`);
  nock.emitter.on("no match", onNoMatch);
  return () => {
    nock.emitter.removeListener("no match", onNoMatch);
    return unmatched;
  };
}

type Example = Record<string, unknown>;

function example(name: string, action: string): Example {
  const group = (examples as unknown as { name: string; examples: Example[] }[]).find(
    (item) => item.name === name,
  );
  const found = group?.examples.find((item) => item.action === action);
  if (!found) throw new Error(`no ${name}.${action} example in @octokit/webhooks-examples`);
  return structuredClone(found);
}

function repository(): Example {
  return {
    ...(example("pull_request", "opened").repository as Example),
    name: REPO,
    full_name: `${OWNER}/${REPO}`,
    owner: { login: OWNER, type: "Organization" },
    default_branch: "main",
  };
}

export function pullRequestPayload(
  action: string,
  options: {
    number?: number;
    head?: string;
    draft?: boolean;
    fork?: boolean;
    before?: string;
  } = {},
): Example {
  const payload = example("pull_request", action === "synchronize" ? "synchronize" : "opened");
  const pr = payload.pull_request as Example;
  const head = pr.head as Example;
  const base = pr.base as Example;
  const repo = repository();
  return {
    ...payload,
    action,
    number: options.number ?? 7,
    installation: { id: 1 },
    repository: repo,
    sender: { login: "alice", type: "User" },
    ...(options.before ? { before: options.before } : {}),
    pull_request: {
      ...pr,
      number: options.number ?? 7,
      state: "open",
      draft: options.draft ?? false,
      head: {
        ...head,
        sha: options.head ?? HEAD,
        ref: "faster-softmax",
        repo: options.fork ? { ...repo, full_name: `mallory/${REPO}` } : repo,
      },
      base: { ...base, sha: BASE, ref: "main", repo },
    },
  };
}

export function commentPayload(
  body: string,
  options: { id?: number; login?: string; bot?: boolean } = {},
): Example {
  const payload = example("issue_comment", "created");
  const issue = payload.issue as Example;
  const comment = payload.comment as Example;
  return {
    ...payload,
    installation: { id: 1 },
    repository: repository(),
    issue: { ...issue, number: 7, pull_request: { url: `${API}/repos/${OWNER}/${REPO}/pulls/7` } },
    comment: {
      ...comment,
      id: options.id ?? 501,
      body,
      user: {
        ...(comment.user as Example),
        login: options.login ?? "maintainer",
        type: options.bot ? "Bot" : "User",
      },
    },
  };
}

export function workflowRunPayload(runId: number, conclusion: string, title?: string): Example {
  const payload = example("workflow_run", "completed");
  const run = payload.workflow_run as Example;
  return {
    ...payload,
    installation: { id: 1 },
    repository: repository(),
    workflow_run: {
      ...run,
      id: runId,
      event: "workflow_dispatch",
      status: "completed",
      conclusion,
      html_url: `https://github.com/${OWNER}/${REPO}/actions/runs/${runId}`,
      path: ".github/workflows/evokernel.yml",
      // The example workflow's run-name: `evokernel <kind> <job id>`.
      display_title: title ?? `evokernel review run-${runId}`,
    },
  };
}

export function requestedActionPayload(externalId: string, identifier = "evk-apply"): Example {
  const payload = example("check_run", "requested_action");
  const run = payload.check_run as Example;
  return {
    ...payload,
    installation: { id: 1 },
    repository: repository(),
    sender: { login: "maintainer", type: "User" },
    requested_action: { identifier },
    check_run: { ...run, id: 900, name: "evokernel", head_sha: HEAD, external_id: externalId },
  };
}

export function reviewFixture(jobId: string, sha = HEAD): unknown {
  const review = JSON.parse(
    readFileSync(new URL("../fixtures/app/review-result.json", import.meta.url), "utf8"),
  ) as {
    job: { id: string; sha: string };
  };
  review.job.id = jobId;
  review.job.sha = sha;
  return review;
}

export function kernelPatch(): string {
  return (
    JSON.parse(
      readFileSync(new URL("../fixtures/app/kernel-patch.json", import.meta.url), "utf8"),
    ) as { patch: string }
  ).patch;
}

/** Job ids end in 6 random hex digits, external_ids in a deadline: fixed for snapshots. */
export function stable(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value)
      .replace(/(-[0-9a-f]{7})-[0-9a-f]{6}\b/g, "$1-RANDOM")
      // A job's deadline (epoch seconds) in its check run's external_id.
      .replace(/~\d{9,12}\b/g, "~DEADLINE"),
  );
}

/**
 * A report reads the maintainers' answers from the state branch (jobs/report.ts): here there
 * is no `evokernel-state` branch yet, so there are none.
 */
export function mockNoAnswers(scope: nock.Scope, repoPath = `/repos/${OWNER}/${REPO}`): nock.Scope {
  return scope
    .get(`${repoPath}/git/ref/heads%2Fevokernel-state`)
    .reply(404, { message: "Not Found" });
}

export interface JobStartMock {
  /** The id GitHub gives the job's check run. */
  readonly id: number;
  /** The repository's API path (`/repos/octo/kernels`, under `/api/v3` on GHES). */
  readonly repoPath?: string;
  readonly sha?: string;
  readonly name?: string;
  /** The PR as GitHub answers it when the app reads the head again (absent: not read). */
  readonly pull?: unknown;
  /** Check runs of the name on the commit already (a finished job's). */
  readonly existing?: readonly unknown[];
  /** Sees the check run's creation. */
  readonly created?: (body: Record<string, unknown>) => void;
  /** Present: the check run is updated once more (linked to its run), and this sees it. */
  readonly linked?: (body: Record<string, unknown>) => void;
}

/**
 * What starting a job asks of GitHub (jobs/start.ts, jobs/claim.ts): the job's claim looked
 * for (every check run of its name, not only the latest), its check run created, the claim
 * read again (the list now holds the new run), the PR's head read again; with `linked`, the
 * check run linked to its run after the dispatch.
 */
export function mockJobStart(scope: nock.Scope, options: JobStartMock): nock.Scope {
  const repoPath = options.repoPath ?? `/repos/${OWNER}/${REPO}`;
  const sha = options.sha ?? HEAD;
  const name = options.name ?? "evokernel";
  const list = `${repoPath}/commits/${sha}/check-runs`;
  const query = { check_name: name, filter: "all", per_page: 100 };
  const existing = options.existing ?? [];
  let externalId: unknown;
  scope
    .get(list)
    .query(query)
    .reply(200, { total_count: existing.length, check_runs: existing })
    .post(`${repoPath}/check-runs`, (body: Record<string, unknown>) => {
      externalId = body.external_id;
      options.created?.(body);
      return true;
    })
    .reply(201, { id: options.id })
    .get(list)
    .query(query)
    .reply(200, () => ({
      total_count: existing.length + 1,
      check_runs: [
        ...existing,
        { id: options.id, name, head_sha: sha, status: "queued", external_id: externalId },
      ],
    }));
  if (options.pull !== undefined)
    scope.get(`${repoPath}/pulls/7`).reply(200, options.pull as nock.Body);
  const linked = options.linked;
  if (linked !== undefined)
    scope
      .patch(`${repoPath}/check-runs/${options.id}`, (body: Record<string, unknown>) => {
        linked(body);
        return true;
      })
      .reply(200, { id: options.id });
  return scope;
}

/**
 * A reported review keeps its PR head's timings for the history (src/app/history.ts): on a
 * repository without the state branch yet, it creates it with `history/index.json`.
 */
export function mockHistoryKept(scope: nock.Scope): nock.Scope {
  const repo = `/repos/${OWNER}/${REPO}`;
  return scope
    .get(`${repo}/git/ref/heads%2Fevokernel-state`)
    .reply(404, { message: "Not Found" })
    .post(`${repo}/git/trees`)
    .reply(201, { sha: "historytree" })
    .post(`${repo}/git/commits`)
    .reply(201, { sha: "historycommit" })
    .post(`${repo}/git/refs`, { ref: "refs/heads/evokernel-state", sha: "historycommit" })
    .reply(201, {});
}
