// Issue 16.5, "approvals": a maintainer's command runs a fork's code only for the commit it
// names, and that commit is compared with the PR's head by its full SHA. A short name is
// resolved through GitHub's commits API; the full SHA it gives must equal the head. The
// attacker here ground a commit whose first 7 hex digits equal the reviewed one's and
// force-pushed it after the maintainer's `/bench @abc1234`. A refusal of a short name lists
// what it matches and asks for the reviewed commit's full SHA, never offering the head's
// (issue 34.5).
import nock from "nock";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  API,
  BASE,
  CONFIG_PATH,
  OWNER,
  REPO,
  commentPayload,
  startHarness,
  strictNock,
  type Harness,
  mockJobStart,
} from "../helpers/app-harness.js";

const R = `/repos/${OWNER}/${REPO}`;
/** The commit the maintainer read. */
const REVIEWED = `abc1234${"0".repeat(33)}`;
/** The attacker's ground commit: the same 7-hex prefix (and more), another commit. */
const GROUND = `abc1234${"0".repeat(32)}1`;

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

function forkPull(head: string) {
  return {
    number: 7,
    state: "open",
    draft: false,
    head: { sha: head, ref: "faster", repo: { full_name: `mallory/${REPO}` } },
    base: { sha: BASE, ref: "main", repo: { full_name: `${OWNER}/${REPO}` } },
  };
}

/** The maintainer's permission and the PR as GitHub answers at the command. */
function atCommand(head: string): nock.Scope {
  return nock(API)
    .get(`${R}/collaborators/maintainer/permission`)
    .reply(200, { permission: "write" })
    .get(`${R}/pulls/7`)
    .reply(200, forkPull(head));
}

function resolves(scope: nock.Scope, name: string, status: number, full?: string): nock.Scope {
  return scope
    .get(`${R}/commits/${name}`)
    .matchHeader("accept", /application\/vnd\.github\.(v3\.)?sha/)
    .reply(
      status,
      full ?? { message: "No commit found for SHA: " + name },
      full === undefined ? {} : { "content-type": "application/vnd.github.sha; charset=utf-8" },
    );
}

/** The PR's commits, as GitHub lists them (one page). */
function prCommits(scope: nock.Scope, shas: string[]): nock.Scope {
  return scope
    .get(`${R}/pulls/7/commits`)
    .query({ per_page: "100", page: "1" })
    .reply(
      200,
      shas.map((sha) => ({ sha })),
    );
}

function refused(scope: nock.Scope): void {
  scope.post(`${R}/issues/7/comments`, record("reply")).reply(201, { id: 2 });
}

function reply(): string {
  return (bodies.reply?.[0] as { body: string }).body;
}

/** The job starts: config read, reaction, the head checked again, dispatch, check run. */
function runs(scope: nock.Scope, head: string, comment = 501): void {
  scope
    .get(CONFIG_PATH)
    .reply(200, "pullRequests: bench\n", { "content-type": "text/plain; charset=utf-8" })
    .post(`${R}/issues/comments/${comment}/reactions`, { content: "rocket" })
    .reply(201, {})
    .post(`${R}/actions/workflows/evokernel.yml/dispatches`, record("dispatch"))
    .reply(204);
  // Whether this comment's job runs already (another instance, before a restart), its check
  // run, the head checked again.
  mockJobStart(scope, {
    id: 901,
    sha: head,
    name: "evokernel bench",
    pull: forkPull(head),
    linked: () => undefined,
  });
}

function dispatchedSha(): string {
  const spec = (bodies.dispatch?.[0] as { inputs: { spec: string } }).inputs.spec;
  return (JSON.parse(spec) as { sha: string }).sha;
}

describe("a fork's approval binds the full head SHA", () => {
  it("refuses a short SHA that GitHub resolves to the reviewed commit while a ground twin is the head", async () => {
    refused(prCommits(resolves(atCommand(GROUND), "abc1234", 200, REVIEWED), [BASE, GROUND]));
    await harness.receive("issue_comment", commentPayload("/bench softmax @abc1234"));
    expect(bodies.dispatch).toBeUndefined();
    expect(reply()).toContain(
      `GitHub matches \`abc1234\` to \`${REVIEWED}\`, which is not this pull request's head: nothing ran`,
    );
    // What the name matches among the PR's commits, and a request for the reviewed SHA.
    expect(reply()).toContain(`commits that begin with \`abc1234\`: \`${GROUND}\``);
    expect(reply()).toContain("`/bench @<full SHA>`");
    // Never the head offered as the thing to run.
    expect(reply()).not.toContain(`@${GROUND}`);
    expect(reply()).not.toMatch(/if you reviewed the head/);
  });

  it("refuses a short SHA GitHub cannot resolve to one commit (ambiguous or unknown)", async () => {
    refused(prCommits(resolves(atCommand(GROUND), "abc1234", 422), [REVIEWED, GROUND]));
    await harness.receive("issue_comment", commentPayload("/bench softmax @abc1234"));
    expect(bodies.dispatch).toBeUndefined();
    expect(reply()).toMatch(/to no single commit \(it names none, or several.*nothing ran/);
    expect(reply()).toContain(`\`${REVIEWED}\`, \`${GROUND}\` (several`);
    expect(reply()).not.toContain(`@${GROUND}`);

    bodies = {};
    refused(prCommits(resolves(atCommand(GROUND), "def5678", 404), [BASE, GROUND]));
    await harness.receive("issue_comment", commentPayload("/bench softmax @def5678", { id: 502 }));
    expect(reply()).toContain("None of this pull request's commits begins with `def5678`");
    expect(reply()).not.toContain(GROUND);
  });

  it("refuses a full SHA that differs from the head in its last digit, without asking GitHub", async () => {
    refused(atCommand(GROUND));
    await harness.receive("issue_comment", commentPayload(`/bench softmax @${REVIEWED}`));
    expect(bodies.dispatch).toBeUndefined();
    expect(reply()).toContain("nothing ran");
  });

  it("runs the head named in full, or by a short name GitHub resolves to exactly it", async () => {
    runs(atCommand(GROUND), GROUND);
    await harness.receive("issue_comment", commentPayload(`/bench softmax @${GROUND}`));
    expect(dispatchedSha()).toBe(GROUND);

    bodies = {};
    runs(resolves(atCommand(REVIEWED), "abc1234", 200, REVIEWED), REVIEWED, 502);
    await harness.receive("issue_comment", commentPayload("/bench softmax @abc1234", { id: 502 }));
    expect(dispatchedSha()).toBe(REVIEWED);
  });

  it("refuses a fork's command that names no commit, and offers the full SHA to name", async () => {
    refused(atCommand(GROUND));
    await harness.receive("issue_comment", commentPayload("/bench softmax"));
    expect(bodies.dispatch).toBeUndefined();
    expect(reply()).toContain(`\`/bench @${GROUND}\``);
  });
});
