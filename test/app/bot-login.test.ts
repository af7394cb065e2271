// The app's bot login (`<slug>[bot]`), asked of GitHub on the wire through the app's own
// client: a Probot with an App id and key and evokernel's Octokit, GET /app with the App's
// JWT (strict nock). Then its own comment is found by that login, not another App's with the
// same marker.
import nock from "nock";
import { Probot } from "probot";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { generateAppKey } from "../helpers/github-standin.mjs";
import { createGitHub } from "../../src/app/github.js";
import { appIdentity } from "../../src/app/index.js";
import { evokernelOctokit } from "../../src/app/octokit.js";
import { API, OWNER, REPO, strictNock } from "../helpers/app-harness.js";

const R = `/repos/${OWNER}/${REPO}`;
/** A JWT: what GitHub requires of GET /app (an installation token is refused there). */
const JWT = /^bearer [\w-]+\.[\w-]+\.[\w-]+$/i;
const key = generateAppKey();
let checks: { done(): void };

beforeEach(() => {
  checks = strictNock({ failOnUnmatched: true });
});

afterEach(() => {
  checks.done();
});

function app(): Probot {
  return new Probot({
    appId: 4242,
    privateKey: key,
    logLevel: "fatal",
    Octokit: evokernelOctokit({ throttle: false, retry: false }),
  });
}

describe("the bot login", () => {
  it("is the App's slug, asked once with the App's JWT, and asked again after a failure", async () => {
    const identity = appIdentity(app());
    nock(API)
      .get("/app")
      .matchHeader("authorization", JWT)
      .reply(502, { message: "Bad Gateway" })
      .get("/app")
      .matchHeader("authorization", JWT)
      .reply(200, { id: 4242, slug: "evokernel-acme", name: "evokernel acme" });
    await expect(identity.login()).rejects.toThrow();
    expect(await identity.login()).toBe("evokernel-acme[bot]");
    // Remembered: no third request (strict nock would fail on one).
    expect(await identity.login()).toBe("evokernel-acme[bot]");
  });

  it("is never asked when the operator gives it", async () => {
    expect(await appIdentity(app(), "evk-gpu[bot]").login()).toBe("evk-gpu[bot]");
  });

  it("finds the app's own comment, not another App's carrying the same marker", async () => {
    const probot = app();
    nock(API)
      .post("/app/installations/1/access_tokens")
      .matchHeader("authorization", JWT)
      .reply(201, { token: "ghs_installation", expires_at: "2999-01-01T00:00:00Z" })
      .get("/app")
      .matchHeader("authorization", JWT)
      .reply(200, { id: 4242, slug: "evokernel-acme", name: "evokernel acme" })
      .get(`${R}/issues/7/comments`)
      .query({ per_page: 100 })
      .matchHeader("authorization", "token ghs_installation")
      .reply(200, [
        {
          id: 1,
          body: "<!-- evokernel:comment --> theirs",
          user: { login: "evokernel[bot]", type: "Bot" },
        },
        {
          id: 2,
          body: "<!-- evokernel:comment --> ours",
          user: { login: "evokernel-acme[bot]", type: "Bot" },
        },
      ])
      .patch(`${R}/issues/comments/2`, (body: { body: string }) => body.body.includes("new"))
      .reply(200, { id: 2 });
    const github = createGitHub(
      await probot.auth(1),
      { owner: OWNER, repo: REPO },
      appIdentity(probot),
    );
    await github.upsertComment(7, "<!-- evokernel:comment -->", "<!-- evokernel:comment --> new");
  });
});
