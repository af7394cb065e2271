// What an operator reads when the app starts (src/app/operator-log.ts, src/app/main.ts): the
// bundled app process against the GitHub stand-in prints one line with the App's name and
// id, where webhooks go, the backend and the installations; JSON with NODE_ENV=production
// or LOG_FORMAT=json, pretty otherwise; and a failure at start (GitHub refusing the key or
// out of reach, the port taken) names what to check.
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleApp } from "../../scripts/bundle.mjs";
import {
  generateAppKey,
  startApp,
  startStandin,
  type AppProcess,
  type Standin,
} from "../helpers/github-standin.mjs";
import {
  describeBackend,
  gitHubHint,
  logFormat,
  startHint,
  withLogSettings,
} from "../../src/app/operator-log.js";

const SECRET = "operator-secret";
let dir: string;
let entry: string;
let key: string;
const standins: Standin[] = [];
const apps: AppProcess[] = [];
const servers: Server[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "evokernel-operator-"));
  // A local job's runner runs as a user of its own (60998 where the app is root): it reads
  // the clone and the runner here, and writes its markers.
  await chmod(dir, 0o1777);
  entry = await bundleApp(join(dir, "app.mjs"));
  key = generateAppKey();
});

afterAll(async () => {
  for (const app of apps) await app.stop();
  for (const standin of standins) await standin.close();
  for (const server of servers) server.close();
  await rm(dir, { recursive: true, force: true });
});

async function standin(): Promise<Standin> {
  const started = await startStandin({ config: "dispatch: actions\n" });
  standins.push(started);
  return started;
}

/** The app with the operator's defaults: no LOG_LEVEL or LOG_FORMAT of the test's own. */
async function start(github: Standin, env: Record<string, string>): Promise<AppProcess> {
  const app = await startApp({
    entry,
    standin: github,
    secret: SECRET,
    privateKey: key,
    env: { LOG_LEVEL: "", LOG_FORMAT: "", ...env },
  });
  apps.push(app);
  return app;
}

/** Waits for a line of the app's output that matches (the test's own limit bounds it). */
async function lineOf(app: AppProcess, pattern: RegExp): Promise<string> {
  for (;;) {
    const line = app
      .output()
      .split("\n")
      .find((item) => pattern.test(item));
    if (line !== undefined) return line;
    if (app.child.exitCode !== null) throw new Error(`the app exited:\n${app.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("the start line", () => {
  it("names the App, its id, the webhook address, the backend and the installations, in JSON in production", async () => {
    const github = await standin();
    const app = await start(github, { NODE_ENV: "production" });
    const port = new URL(app.url).port;
    const line = await lineOf(app, /evokernel is up/);
    const record = JSON.parse(line) as Record<string, unknown>;
    expect(record).toMatchObject({
      level: 30,
      appId: 1,
      port: Number(port),
      webhookPath: "/api/github/webhooks",
      installations: 1,
    });
    expect(record.msg).toBe(
      `evokernel is up: App evokernel, id 1, on http://${github.host}/api/v3; webhooks on 127.0.0.1:${port}/api/github/webhooks; ` +
        "backend: GitHub Actions on the repositories' GPU runners (local runs off: EVOKERNEL_LOCAL_REPO unset); 1 installation (octo)",
    );
    // Every line the app printed is JSON (Probot's own "Listening on" too).
    const lines = app
      .output()
      .split("\n")
      .filter((item) => item.trim() !== "");
    for (const item of lines) expect(() => JSON.parse(item) as unknown, item).not.toThrow();
    expect(lines.some((item) => item.includes("Listening on"))).toBe(true);
  });

  it("is pretty without NODE_ENV=production or LOG_FORMAT", async () => {
    const github = await standin();
    const app = await start(github, {});
    const line = await lineOf(app, /evokernel is up/);
    expect(() => JSON.parse(line) as unknown).toThrow();
    expect(line).toMatch(/INFO.*evokernel is up: App evokernel, id 1/);
  });
});

describe("failures at start name what to check", () => {
  it("GitHub refusing the App's token: APP_ID and the private key", async () => {
    const github = await standin();
    github.faults.push({ method: "GET", path: /^\/api\/v3\/app$|^\/app$/, status: 401, times: 1 });
    const app = await start(github, { LOG_FORMAT: "json" });
    const record = JSON.parse(await lineOf(app, /evokernel is up but/)) as {
      level: number;
      msg: string;
    };
    expect(record.level).toBe(50);
    expect(record.msg).toContain(
      "refused the App's token: check that APP_ID (1) and the private key",
    );
    expect(record.msg).toContain("webhooks on 127.0.0.1:");
  });

  it("GitHub out of reach: the address, the network, GHE_HOST", async () => {
    // A host that takes connections and drops them: GitHub as a broken network shows it.
    const dropper = createServer((socket) => socket.destroy());
    servers.push(dropper);
    await new Promise<void>((resolve) => dropper.listen(0, "127.0.0.1", resolve));
    const address = dropper.address();
    const github = await standin();
    const app = await start(github, {
      LOG_FORMAT: "json",
      // Undici holds the first request to a host that drops it until the time limit: a
      // short one, as either ending (dropped, or timed out) says the same.
      EVOKERNEL_GITHUB_TIMEOUT_S: "2",
      GHE_HOST: `127.0.0.1:${typeof address === "object" && address ? address.port : 0}`,
    });
    const record = JSON.parse(await lineOf(app, /evokernel is up but/)) as { msg: string };
    expect(record.msg).toMatch(/GitHub \(http:\/\/127\.0\.0\.1:\d+\/api\/v3\) cannot be reached/);
    expect(record.msg).toContain("GHE_HOST");
  });

  it("a port in use: PORT", async () => {
    const github = await standin();
    // The stand-in holds its port: the app is told to take the same one.
    const taken = new URL(github.url).port;
    await expect(start(github, { PORT: taken })).rejects.toThrow(
      new RegExp(
        `evokernel could not start: .*port ${taken} is in use: stop what listens there, or set PORT`,
      ),
    );
  });
});

describe("the conventions", () => {
  it("JSON for LOG_FORMAT other than pretty, or NODE_ENV=production; info unless told", () => {
    expect(logFormat({})).toBe("pretty");
    expect(logFormat({ NODE_ENV: "production" })).toBe("json");
    expect(logFormat({ LOG_FORMAT: "json" })).toBe("json");
    expect(logFormat({ LOG_FORMAT: "pretty", NODE_ENV: "production" })).toBe("pretty");
    expect(withLogSettings({}).LOG_LEVEL).toBe("info");
    expect(withLogSettings({ LOG_LEVEL: "debug" }).LOG_LEVEL).toBe("debug");
  });

  it("says where jobs run", () => {
    const local = { repoDir: "/srv/kernels", runnerCommand: [], gpus: 2, timeoutMs: 1 };
    expect(describeBackend({ concurrency: 1, jobTimeoutMs: 1, forceLocal: false })).toMatch(
      /^GitHub Actions .*local runs off/,
    );
    expect(describeBackend({ concurrency: 1, jobTimeoutMs: 1, forceLocal: true, local })).toBe(
      "local for every repository (EVOKERNEL_DISPATCH=local; /srv/kernels, 2 GPUs)",
    );
    expect(describeBackend({ concurrency: 1, jobTimeoutMs: 1, forceLocal: false, local })).toMatch(
      /or local \(\/srv\/kernels, 2 GPUs\) for repositories whose config says dispatch: local/,
    );
    const grouped = { ...local, gpus: 4, gpusPerJob: 2 };
    expect(
      describeBackend({ concurrency: 1, jobTimeoutMs: 1, forceLocal: true, local: grouped }),
    ).toBe("local for every repository (EVOKERNEL_DISPATCH=local; /srv/kernels, 4 GPUs, 2 a job)");
  });

  it("names what to check for each failure GitHub or the machine gives", () => {
    const env = { APP_ID: "7", GHE_HOST: "ghe.corp.example" };
    expect(gitHubHint({ status: 404 }, env)).toMatch(/no App with APP_ID 7: check APP_ID/);
    expect(gitHubHint({ status: 401 }, env)).toMatch(/refused the App's token/);
    expect(
      gitHubHint(new TypeError("fetch failed", { cause: { code: "ENOTFOUND" } }), env),
    ).toMatch(/https:\/\/ghe\.corp\.example\/api\/v3\) cannot be reached/);
    expect(gitHubHint(new Error("a bug"), env)).toBeUndefined();
    expect(startHint({ code: "EACCES" }, { PORT: "80" })).toMatch(/port 80 needs privileges/);
    expect(startHint(new Error("privateKey option is required"), {})).toMatch(/PRIVATE_KEY/);
    expect(startHint(new Error("odd"), {})).toMatch(/check APP_ID, PRIVATE_KEY/);
  });
});
