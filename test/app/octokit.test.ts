// The app's Octokit (src/app/octokit.ts) against strict nock: a request that hangs is cut at
// the app's own time limit, a 502 is retried (plugin-retry), a secondary rate limit waits its
// retry-after and is retried (plugin-throttling), a 404 is not retried. And the work queue
// keeps one installation's hung work from holding every slot.
import nock from "nock";
import { Probot } from "probot";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { evokernelOctokit, type OctokitLimits } from "../../src/app/octokit.js";
import { createWorkQueue } from "../../src/app/queue.js";
import { API, strictNock } from "../helpers/app-harness.js";

let mocks: { done(): void };
beforeEach(() => {
  mocks = strictNock({ failOnUnmatched: true });
});
afterEach(() => {
  mocks.done();
});

async function octokit(limits: OctokitLimits) {
  const probot = new Probot({
    githubToken: "test",
    logLevel: "fatal",
    Octokit: evokernelOctokit(limits),
  });
  return probot.auth(1);
}

describe("the app's Octokit", () => {
  it("cuts a request that hangs at its time limit", async () => {
    const client = await octokit({ throttle: false, retry: false, timeoutMs: 200 });
    nock(API).get("/repos/o/r").delay(30_000).reply(200, { id: 1 });
    const started = Date.now();
    await expect(client.rest.repos.get({ owner: "o", repo: "r" })).rejects.toThrow(
      /aborted due to timeout/,
    );
    // Node's own limit is 300 s; the mock answers after 30 s.
    expect(Date.now() - started).toBeLessThan(25_000);
  });

  it("retries a 502, and not a 404", async () => {
    const client = await octokit({ throttle: false, retry: true });
    nock(API)
      .get("/repos/o/r")
      .reply(502, { message: "Bad Gateway" })
      .get("/repos/o/r")
      .reply(200, { id: 1 })
      .get("/repos/o/missing")
      .reply(404, { message: "Not Found" });
    expect((await client.rest.repos.get({ owner: "o", repo: "r" })).data).toEqual({ id: 1 });
    await expect(client.rest.repos.get({ owner: "o", repo: "missing" })).rejects.toMatchObject({
      status: 404,
    });
  });

  it("waits out a secondary rate limit and tries again", async () => {
    const client = await octokit({ throttle: true, retry: true });
    nock(API)
      .get("/repos/o/r")
      .reply(
        403,
        { message: "You have exceeded a secondary rate limit. Please wait a few minutes." },
        { "retry-after": "1" },
      )
      .get("/repos/o/r")
      .reply(200, { id: 2 });
    expect((await client.rest.repos.get({ owner: "o", repo: "r" })).data).toEqual({ id: 2 });
  });
});

describe("the work queue", () => {
  it("never lets one installation's hung work hold every slot", async () => {
    const queue = createWorkQueue(4, () => undefined);
    const release: (() => void)[] = [];
    const started: string[] = [];
    for (let i = 0; i < 8; i++) {
      queue.push(
        `slow ${i}`,
        () =>
          new Promise<void>((resolve) => {
            started.push(`a${i}`);
            release.push(resolve);
          }),
        "installation:1",
      );
    }
    let other = false;
    queue.push(
      "other",
      async () => {
        other = true;
        await Promise.resolve();
      },
      "installation:2",
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(other).toBe(true);
    // One of four slots each for installation 1 (a quarter), the rest free for others.
    expect(started).toEqual(["a0"]);
    while (release.length > 0) {
      release.shift()?.();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await queue.idle();
    expect(started).toHaveLength(8);
  });
});
