// The app's HTTP server (src/app/server.ts) over loopback: webhook bodies bounded before
// Probot reads them (413 at once on a large Content-Length, the socket closed at the first
// byte past 25 MB of a chunked one), signed webhooks still delivered, and SENTRY_DSN /
// REDIS_URL that this build cannot serve ignored rather than fatal.
import { request as httpRequest } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { generateAppKey, signWebhook } from "../helpers/github-standin.mjs";
import { evokernelOctokit } from "../../src/app/octokit.js";
import { startAppServer, type AppServer } from "../../src/app/server.js";
import { createByteBudget } from "../../src/app/webhook-body.js";

const SECRET = "server-test";
let server: AppServer | undefined;
let received: string[] = [];
let payloads: unknown[] = [];
const warnings: string[] = [];

afterEach(async () => {
  await server?.close();
  server = undefined;
  received = [];
  payloads = [];
});

async function start(env: NodeJS.ProcessEnv = {}, stringLimit?: number): Promise<AppServer> {
  server = await startAppServer(
    (app) => {
      app.on("issues", (context) => {
        received.push(context.id);
        payloads.push(context.payload);
      });
    },
    {
      env: {
        APP_ID: "1",
        PRIVATE_KEY: generateAppKey(),
        WEBHOOK_SECRET: SECRET,
        HOST: "127.0.0.1",
        PORT: "0",
        LOG_LEVEL: "fatal",
        ...env,
      },
      Octokit: evokernelOctokit({ throttle: false, retry: false }),
      warn: (message) => warnings.push(message),
      ...(stringLimit === undefined ? {} : { stringLimit }),
    },
  );
  return server;
}

function url(path: string): string {
  return `http://127.0.0.1:${server?.port ?? 0}${path}`;
}

/** POSTs `chunks` MiB to the webhook path; how many went out and the answer (or the reset). */
function post(
  headers: Record<string, string>,
  chunks: number,
): Promise<{ status: number | undefined; sentMiB: number }> {
  return new Promise((resolve) => {
    let sent = 0;
    let status: number | undefined;
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      resolve({ status, sentMiB: sent });
    };
    const req = httpRequest(url("/api/github/webhooks"), { method: "POST", headers });
    req.on("response", (response) => {
      status = response.statusCode;
      response.resume();
      response.on("end", finish);
      response.on("error", finish);
    });
    req.on("error", finish);
    req.on("close", () => setTimeout(finish, 50));
    const piece = Buffer.alloc(1024 * 1024, 0x20);
    const pump = () => {
      while (sent < chunks && status === undefined && !req.destroyed) {
        sent++;
        if (!req.write(piece)) return void req.once("drain", pump);
      }
      if (!req.destroyed) req.end();
    };
    pump();
  });
}

describe("the app's server", () => {
  it("answers /ping and delivers a signed webhook", async () => {
    await start();
    expect(await (await fetch(url("/ping"))).text()).toBe("PONG");
    const body = JSON.stringify({
      action: "opened",
      issue: { number: 1 },
      installation: { id: 1 },
    });
    const response = await fetch(url("/api/github/webhooks"), {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": "d-1",
        "x-hub-signature-256": signWebhook(SECRET, body),
      },
      body,
    });
    expect(response.status).toBe(200);
    expect(received).toEqual(["d-1"]);
    const forged = await fetch(url("/api/github/webhooks"), {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": "d-2",
        "x-hub-signature-256": signWebhook("wrong", body),
      },
      body,
    });
    expect(forged.status).toBe(400);
    expect(received).toEqual(["d-1"]);
    expect((await fetch(url("/elsewhere"))).status).toBe(404);
  });

  it("empties a signed body's strings past the limit before Probot holds them, and refuses a forged one", async () => {
    await start({}, 1024);
    const event = {
      action: "opened",
      issue: { number: 1, title: "short", body: `log ${"x".repeat(4096)} "end"` },
      installation: { id: 1 },
    };
    const body = JSON.stringify(event);
    const deliver = (id: string, secret: string) =>
      fetch(url("/api/github/webhooks"), {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": "issues",
          "x-github-delivery": id,
          "x-hub-signature-256": signWebhook(secret, body),
        },
        body,
      });
    expect((await deliver("long-1", SECRET)).status).toBe(200);
    expect(received).toEqual(["long-1"]);
    // Without the filter Probot's payload holds the 4 KB text.
    expect(payloads[0]).toEqual({ ...event, issue: { ...event.issue, body: "" } });
    // The filter checks the signature itself (it re-signs what it passes on): a forged body
    // with a long string is refused as Probot refuses one without.
    expect((await deliver("long-2", "wrong")).status).toBe(400);
    expect(received).toEqual(["long-1"]);
  });

  it("refuses a body whose Content-Length is over 25 MB before reading it", async () => {
    await start();
    const result = await post(
      {
        "content-type": "application/json",
        "content-length": String(200 * 1024 * 1024),
        "x-github-event": "issues",
        "x-github-delivery": "big-1",
        "x-hub-signature-256": "sha256=00",
      },
      200,
    );
    // Refused on its header: what went out is what the sockets' buffers took before the
    // answer, never the 25 MiB a body without a Content-Length may send before its 413.
    expect(result.status).toBe(413);
    expect(result.sentMiB).toBeLessThan(25);
  });

  it("stops reading a chunked body at the first byte past 25 MB", async () => {
    await start();
    const result = await post(
      {
        "content-type": "application/json",
        "x-github-event": "issues",
        "x-github-delivery": "big-2",
        "x-hub-signature-256": "sha256=00",
      },
      200,
    );
    expect(result.status === 413 || result.status === undefined).toBe(true);
    expect(result.sentMiB).toBeLessThan(100);
    expect(received).toEqual([]);
  });

  it("starts with SENTRY_DSN and REDIS_URL set, saying they are ignored", async () => {
    await start({
      SENTRY_DSN: "https://key@sentry.example.test/1",
      REDIS_URL: "redis://127.0.0.1:9",
    });
    expect((await fetch(url("/ping"))).status).toBe(200);
    expect(warnings.join("\n")).toMatch(/SENTRY_DSN is set.*ignoring/);
    expect(warnings.join("\n")).toMatch(/REDIS_URL is set.*ignoring/);
  });
});

describe("createByteBudget", () => {
  it("lets bodies in while they fit, in order, and the rest wait their turn", async () => {
    const budget = createByteBudget(100);
    const order: string[] = [];
    await budget.acquire(60);
    const b = budget.acquire(60).then(() => order.push("b"));
    const c = budget.acquire(10).then(() => order.push("c"));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(order).toEqual([]);
    budget.release(60);
    await Promise.all([b, c]);
    expect(order).toEqual(["b", "c"]);
  });
});
