// Idempotent writes (issue 17.4) through the GitHub interface against strict nock: the PR's
// comment is the app's own (by its bot login), one comment survives a race with another
// instance, a review is posted once per job, and two edits of one PR's comment in one
// process run one after the other.
import nock from "nock";
import { Probot } from "probot";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createGitHub, type GitHub } from "../../src/app/github.js";
import { evokernelOctokit } from "../../src/app/octokit.js";
import { API, BOT_LOGIN, OWNER, REPO, strictNock } from "../helpers/app-harness.js";

const R = `/repos/${OWNER}/${REPO}`;
const MARKER = "<!-- evokernel:comment -->";
let mocks: { done(): void };
let github: GitHub;
const bodies: unknown[] = [];

beforeEach(async () => {
  mocks = strictNock({ failOnUnmatched: true });
  bodies.length = 0;
  const probot = new Probot({
    githubToken: "test",
    logLevel: "fatal",
    Octokit: evokernelOctokit({ throttle: false, retry: false }),
  });
  github = createGitHub(
    await probot.auth(1),
    { owner: OWNER, repo: REPO },
    {
      login: () => Promise.resolve(BOT_LOGIN),
    },
  );
});

afterEach(() => {
  mocks.done();
});

const ours = (id: number, body = MARKER) => ({ id, body, user: { type: "Bot", login: BOT_LOGIN } });

describe("the PR's comment", () => {
  it("is never another bot's, even one carrying the marker", async () => {
    nock(API)
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .reply(200, [{ id: 1, body: MARKER, user: { type: "Bot", login: "mallory[bot]" } }])
      .post(`${R}/issues/7/comments`)
      .reply(201, { id: 2 })
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .reply(200, [{ id: 1, body: MARKER, user: { type: "Bot", login: "mallory[bot]" } }, ours(2)]);
    await github.upsertComment(7, MARKER, `${MARKER}\nnew`);
  });

  it("stays one when another instance created it at the same moment", async () => {
    nock(API)
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .reply(200, [])
      .post(`${R}/issues/7/comments`)
      .reply(201, { id: 6 })
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .reply(200, [ours(6, `${MARKER}\nmine`), ours(5, `${MARKER}\ntheirs`)])
      .delete(`${R}/issues/comments/6`)
      .reply(204)
      .patch(`${R}/issues/comments/5`, (body: nock.Body) => {
        bodies.push(body);
        return true;
      })
      .reply(200, { id: 5 });
    await github.upsertComment(7, MARKER, `${MARKER}\nmine`);
    expect(bodies).toEqual([{ body: `${MARKER}\nmine` }]);
  });

  it("is edited one writer at a time within the process", async () => {
    const order: string[] = [];
    nock(API)
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .delay(100)
      .reply(200, () => {
        order.push("list 1");
        return [];
      })
      .post(`${R}/issues/7/comments`)
      .reply(201, () => {
        order.push("create");
        return { id: 2 };
      })
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .reply(200, [ours(2)])
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .reply(200, () => {
        order.push("list 2");
        return [ours(2)];
      })
      .patch(`${R}/issues/comments/2`)
      .reply(200, () => {
        order.push("edit");
        return { id: 2 };
      });
    // Two jobs of one PR finishing together: without the lock both list none and both create.
    await Promise.all([
      github.upsertComment(7, MARKER, `${MARKER}\na`),
      github.upsertComment(7, MARKER, `${MARKER}\nb`),
    ]);
    expect(order).toEqual(["list 1", "create", "list 2", "edit"]);
  });
});

describe("the review", () => {
  it("is posted once per job: a retried report finds its own review", async () => {
    nock(API)
      .get(`${R}/pulls/7/reviews`)
      .query({ per_page: 100 })
      .reply(200, [
        // Another bot's review with our marker does not count.
        {
          body: "<!-- evokernel:review review-7-aaaaaaa-123456 -->",
          user: { type: "Bot", login: "x[bot]" },
        },
      ])
      .post(`${R}/pulls/7/reviews`, (body: { body: string }) => {
        bodies.push(body.body);
        return true;
      })
      .reply(200, { id: 1 })
      .get(`${R}/pulls/7/reviews`)
      .query({ per_page: 100 })
      .reply(200, [
        {
          body: "found\n\n<!-- evokernel:review review-7-aaaaaaa-123456 -->",
          user: { type: "Bot", login: BOT_LOGIN },
        },
      ]);
    await github.createReview(7, "a".repeat(40), "found", [], "review-7-aaaaaaa-123456");
    await github.createReview(7, "a".repeat(40), "found", [], "review-7-aaaaaaa-123456");
    expect(bodies).toEqual(["found\n\n<!-- evokernel:review review-7-aaaaaaa-123456 -->"]);
  });
});

describe("every text the app sends", () => {
  // GitHub refuses a body past 65,536 characters or a title past 256 with 422: a write that
  // fails that way leaves a comment unposted or a check run stuck.
  const LONG = "- `kernels/softmax` is invalid: unknown key\n".repeat(2000);

  it("fits GitHub's limits, whoever built it: comments, reviews and their comments", async () => {
    const sent: { body: string; comments?: { body: string }[] }[] = [];
    const keep = (body: { body: string; comments?: { body: string }[] }) => {
      sent.push(body);
      return true;
    };
    nock(API)
      .post(`${R}/issues/7/comments`, keep)
      .reply(201, { id: 1 })
      .get(`${R}/pulls/7/reviews`)
      .query({ per_page: 100 })
      .reply(200, [])
      .post(`${R}/pulls/7/reviews`, keep)
      .reply(200, { id: 1 });
    expect(LONG.length).toBeGreaterThan(65_536);
    await github.createComment(7, LONG);
    await github.createReview(
      7,
      "a".repeat(40),
      LONG,
      [{ path: "k.cu", line: 1, side: "RIGHT", body: LONG }],
      "review-7-aaaaaaa-123456",
    );
    const [comment, review] = sent;
    expect(comment?.body.length).toBeLessThanOrEqual(65_536);
    expect(comment?.body).toMatch(/trimmed to GitHub's size limit/);
    expect(review?.body.length).toBeLessThanOrEqual(65_536);
    // The marker that finds the review again survives the trim.
    expect(review?.body.endsWith("<!-- evokernel:review review-7-aaaaaaa-123456 -->")).toBe(true);
    expect(review?.comments?.[0]?.body.length).toBeLessThanOrEqual(65_536);
  });

  it("fits a check run's summary and text in GitHub's 65,535 bytes, whoever built them", async () => {
    const sent: { output: { summary: string; text: string } }[] = [];
    nock(API)
      .patch(`${R}/check-runs/900`, (body: { output: { summary: string; text: string } }) => {
        sent.push(body);
        return true;
      })
      .reply(200, { id: 900 });
    // ± is two bytes: 40,000 of them fit GitHub's count in characters, not in bytes.
    const wide = "±".repeat(40_000);
    await github.updateCheckRun(900, {
      status: "completed",
      conclusion: "failure",
      output: { title: "t", summary: wide, text: wide },
    });
    expect(Buffer.byteLength(sent[0]?.output.summary ?? "")).toBeLessThanOrEqual(65_535);
    expect(Buffer.byteLength(sent[0]?.output.text ?? "")).toBeLessThanOrEqual(65_535);
  });

  it("fits them in pull requests and issues: bodies and titles", async () => {
    const sent: { title: string; body: string }[] = [];
    const keep = (body: { title: string; body: string }) => {
      sent.push(body);
      return true;
    };
    nock(API)
      .post(`${R}/pulls`, keep)
      .reply(201, { number: 9, state: "open", merged_at: null, html_url: "https://x/9" })
      .get(`${R}/issues`)
      .query({ labels: "evokernel", state: "open", per_page: 100 })
      .reply(200, [])
      .post(`${R}/issues`, keep)
      .reply(201, { number: 10 });
    await github.openPull("evokernel/nightly", "main", "t".repeat(300), LONG);
    await github.upsertIssue("<!-- m -->", "evokernel", "t".repeat(300), `<!-- m -->\n${LONG}`);
    for (const body of sent) {
      expect(body.title.length).toBeLessThanOrEqual(256);
      expect(body.body.length).toBeLessThanOrEqual(65_536);
    }
    expect(sent[1]?.body.startsWith("<!-- m -->")).toBe(true);
  });
});
