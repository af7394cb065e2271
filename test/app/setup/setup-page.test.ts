// `npm start` without credentials serves evokernel's setup page, which posts the manifest
// built from app.yml (GitHub's manifest flow): the webhook URL where Probot's server takes
// webhooks, the owner (GH_ORG), the events the handlers are subscribed to and the
// permissions with a reason each; then the code GitHub sends back becomes .env.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { connect } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseEnv } from "node:util";
import { execa } from "execa";
import { ProbotOctokit, type Probot, type Server } from "probot";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEvokernelApp } from "../../../src/app/index.js";
import {
  buildRegistration,
  readAppYml,
  type AppManifest,
} from "../../../src/app/setup/manifest.js";
import { hasCredentials, openableUrl, startSetupServer } from "../../../src/app/setup/server.js";

const root = fileURLToPath(new URL("../../..", import.meta.url));
const appYml = readFileSync(join(root, "app.yml"), "utf8");
let serverPid: number | undefined;
const servers: Server[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  if (!existsSync(`${root}dist/src/app/main.js`))
    await execa("npm", ["run", "build"], { cwd: root });
});

afterAll(async () => {
  // npm starts node as its child: stop the whole process group this test started.
  if (serverPid !== undefined) {
    try {
      process.kill(-serverPid, "SIGTERM");
    } catch {
      // already gone
    }
  }
  for (const server of servers) await server.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The address setup mode's start line says to open: the port the server got from PORT=0. */
async function announcedUrl(output: () => string, exited: Promise<unknown>): Promise<string> {
  let gone = false;
  void exited.then(() => (gone = true));
  for (;;) {
    const url = /open (http:\/\/\S+?)\/ to register/.exec(output())?.[1];
    if (url !== undefined) return url;
    if (gone) throw new Error(`npm start exited before it listened:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "evk-setup-"));
  dirs.push(dir);
  return dir;
}

const ENTITIES: Record<string, string> = {
  "&amp;": "&",
  "&lt;": "<",
  "&gt;": ">",
  "&quot;": '"',
  "&#39;": "'",
};

function unescape(text: string): string {
  return text.replace(/&(?:amp|lt|gt|quot|#39);/g, (entity) => ENTITIES[entity] ?? entity);
}

/** What the browser posts: the form's address and its `manifest` field, as GitHub reads them. */
function postedForm(html: string): { action: string; manifest: AppManifest } {
  const action = /<form action="([^"]*)" method="post"/.exec(html)?.[1];
  const value = /<input type="hidden" name="manifest" id="manifest" value="([^"]*)">/.exec(
    html,
  )?.[1];
  if (action === undefined || value === undefined) throw new Error("no manifest form");
  return { action: unescape(action), manifest: JSON.parse(unescape(value)) as AppManifest };
}

async function getPage(url: string, headers: Record<string, string> = {}): Promise<string> {
  for (let attempt = 0; attempt < 300; attempt++) {
    const html = await fetch(url, { headers }).then(
      (response) => (response.ok ? response.text() : ""),
      () => "",
    );
    if (html !== "") return html;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${url} never answered`);
}

/** The webhook events evokernel's handlers are registered for, as Probot would route them. */
function subscribedEvents(): string[] {
  const names = new Set<string>();
  const log = { child: () => log, info() {}, warn() {}, error() {}, debug() {} };
  const app = {
    log,
    on(events: string | string[]) {
      for (const event of [events].flat()) names.add(event.split(".")[0] ?? event);
    },
    auth() {
      throw new Error("not in this test");
    },
  };
  void createEvokernelApp({ concurrency: 1, jobTimeoutMs: 60_000, forceLocal: false }).appFn(
    app as unknown as Probot,
    { cwd: root, addHandler: () => undefined },
  );
  return [...names].sort();
}

describe("npm start without credentials", () => {
  it("serves evokernel's page posting the manifest to the organisation's new-App page", async () => {
    const server = execa("npm", ["start"], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        PORT: "0",
        HOST: "127.0.0.1",
        GH_ORG: "octo-org",
        // Probot's convention, which the Dockerfile relies on: JSON logs in production.
        NODE_ENV: "production",
      },
      extendEnv: false,
      detached: true,
      reject: false,
      all: true,
      buffer: false,
    });
    serverPid = server.pid;
    let output = "";
    server.all?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const base = await announcedUrl(() => output, server);
    const port = new URL(base).port;
    expect(base).toBe(`http://127.0.0.1:${port}`);
    const line = output.split("\n").find((item) => item.includes("to register")) ?? "";
    expect(JSON.parse(line)).toMatchObject({ level: 30, name: "setup" });
    const html = await getPage(`${base}/probot`);
    expect(html).toContain("Register the evokernel GitHub App");
    expect(html).not.toMatch(/probot\.github\.io|Welcome to Probot/);
    expect(html).toContain("on the organisation <b>octo-org</b>");
    expect(html).toContain("<b>Private</b>: only octo-org can install it");
    const { action, manifest } = postedForm(html);
    expect(action).toMatch(
      /^https:\/\/github\.com\/organizations\/octo-org\/settings\/apps\/new\?state=[0-9a-f]{32}$/,
    );
    // Opened on localhost: the URL is this server's webhook path, and the page says that
    // GitHub cannot deliver there.
    expect(manifest.hook_attributes).toEqual({
      url: `http://127.0.0.1:${port}/api/github/webhooks`,
      active: true,
    });
    expect(html).toContain("GitHub cannot reach");
    expect(manifest.redirect_url).toBe(`http://127.0.0.1:${port}/probot/setup`);

    // Behind a proxy with a public name: the URL GitHub is given is that one's.
    const proxied = await getPage(`${base}/probot`, {
      "x-forwarded-host": "evokernel.example.com",
      "x-forwarded-proto": "https",
    });
    expect(postedForm(proxied).manifest.hook_attributes.url).toBe(
      "https://evokernel.example.com/api/github/webhooks",
    );
    expect(proxied).not.toContain("GitHub cannot reach");
  });
});

describe("the address setup mode says to open", () => {
  it("is one a browser can open: localhost for any-address binds, brackets for IPv6", () => {
    expect(openableUrl(undefined, 3000)).toBe("http://localhost:3000");
    expect(openableUrl("0.0.0.0", 3007)).toBe("http://localhost:3007");
    expect(openableUrl("::", 3007)).toBe("http://localhost:3007");
    expect(openableUrl("127.0.0.1", 41234)).toBe("http://127.0.0.1:41234");
    expect(openableUrl("::1", 80)).toBe("http://[::1]:80");
    expect(openableUrl("evk.corp.example", 3000)).toBe("http://evk.corp.example:3000");
  });
});

describe("the manifest", () => {
  const app = readAppYml(appYml);
  const { manifest } = buildRegistration(app, {}, "https://evk.example.com");

  it("subscribes to exactly the events evokernel's handlers are registered for", () => {
    expect([...manifest.default_events].sort()).toEqual(subscribedEvents());
  });

  it("asks for the permissions the app's requests need, each with a reason", () => {
    // metadata: repositories and collaborator permission; contents: files, branches, the
    // state branch; pull_requests: files, reviews, the nightly PR; issues: the comment and
    // reactions; checks: the check run; actions: dispatch, cancel, artifacts.
    expect(manifest.default_permissions).toEqual({
      metadata: "read",
      contents: "write",
      pull_requests: "write",
      issues: "write",
      checks: "write",
      actions: "write",
    });
    for (const item of [...app.permissions, ...app.events])
      expect(item.why.length).toBeGreaterThan(10);
  });

  it("holds only keys GitHub's manifest documents, and no webhook URL from app.yml", () => {
    expect(Object.keys(manifest).sort()).toEqual(
      [
        "default_events",
        "default_permissions",
        "description",
        "hook_attributes",
        "name",
        "public",
        "redirect_url",
        "url",
      ].sort(),
    );
    expect(appYml).not.toMatch(/^hook_attributes:/m);
    expect(manifest.hook_attributes.url).toBe("https://evk.example.com/api/github/webhooks");
  });

  it("goes to the proxy channel, the public URL, the user or an enterprise host when told", () => {
    const proxied = buildRegistration(
      app,
      { WEBHOOK_PROXY_URL: "https://smee.io/abc" },
      "http://localhost:3000",
    );
    expect(proxied.manifest.hook_attributes.url).toBe("https://smee.io/abc");
    expect(proxied.webhookReachable).toBe(true);
    expect(proxied.createAppUrl).toBe("https://github.com/settings/apps/new");
    expect(proxied.owner).toEqual({ kind: "user" });
    const public_ = buildRegistration(
      app,
      { EVOKERNEL_PUBLIC_URL: "https://evk.corp.example/", WEBHOOK_PATH: "/hooks" },
      "http://localhost:3000",
    );
    expect(public_.manifest.hook_attributes.url).toBe("https://evk.corp.example/hooks");
    expect(public_.manifest.redirect_url).toBe("http://localhost:3000/probot/setup");
    const ghes = buildRegistration(
      app,
      { GHE_HOST: "ghe.corp.example", GH_ORG: "gpu-team", EVOKERNEL_APP_NAME: "evokernel-gpu" },
      "https://evk.corp.example",
    );
    expect(ghes.createAppUrl).toBe(
      "https://ghe.corp.example/organizations/gpu-team/settings/apps/new",
    );
    expect(ghes.manifest.name).toBe("evokernel-gpu");
    // The App's own page on its host, never another App's.
    expect(ghes.manifest.url).toBe("https://ghe.corp.example/github-apps/evokernel-gpu");
    expect(buildRegistration(app, {}, "http://192.168.1.5:3000").webhookReachable).toBe(false);
  });

  it("gives as homepage the App's own page, from the name it is registered with", () => {
    expect(buildRegistration(app, {}, "https://evk.example.com").manifest.url).toBe(
      "https://github.com/apps/evokernel",
    );
    // Another organisation's App: its own page, not the one of the App named evokernel.
    expect(
      buildRegistration(app, { EVOKERNEL_APP_NAME: "evokernel-acme" }, "https://evk.example.com")
        .manifest.url,
    ).toBe("https://github.com/apps/evokernel-acme");
    expect(
      buildRegistration(app, { EVOKERNEL_APP_NAME: "Acme Kernels (GPU)" }, "http://localhost")
        .manifest.url,
    ).toBe("https://github.com/apps/acme-kernels-gpu");
    // The owner's own page, when app.yml names one.
    const own = readAppYml(`${appYml}\nurl: https://kernels.acme.example/\n`);
    expect(
      buildRegistration(own, { EVOKERNEL_APP_NAME: "evokernel-acme" }, "http://localhost").manifest
        .url,
    ).toBe("https://kernels.acme.example/");
  });

  it("refuses an app.yml without a reason, or with a key GitHub would not take, and a bad GH_ORG", () => {
    expect(() => readAppYml(appYml.replace(/(checks: write) #.*$/m, "$1"))).toThrow(
      /permission:checks has no reason/,
    );
    expect(() =>
      readAppYml(`${appYml}\nhook_attributes:\n  url: https://example.invalid/\n`),
    ).toThrow(/app\.yml/);
    expect(() => buildRegistration(app, { GH_ORG: "octo org/x" }, "http://localhost")).toThrow(
      /GH_ORG/,
    );
  });
});

describe("coming back from GitHub", () => {
  async function startSetup(
    cwd: string,
    fetchLog: string[],
    onRegistered?: () => Promise<unknown>,
  ): Promise<string> {
    // GitHub's answer to the conversion, through Octokit's own fetch seam.
    const fetch = (url: string, init: { method: string }) => {
      fetchLog.push(`${init.method} ${url}`);
      return Promise.resolve(
        new Response(
          JSON.stringify({
            id: 4242,
            slug: "evokernel",
            html_url: "https://github.com/apps/evokernel",
            client_id: "Iv1.abc",
            client_secret: "s3cret",
            webhook_secret: "hook-secret",
            pem: "-----BEGIN RSA PRIVATE KEY-----\nAAA\nBBB\n-----END RSA PRIVATE KEY-----\n",
          }),
          { status: 201, headers: { "content-type": "application/json" } },
        ),
      );
    };
    const server = await startSetupServer({
      env: { PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "fatal" },
      cwd,
      Octokit: ProbotOctokit.defaults({ request: { fetch } }),
      ...(onRegistered ? { onRegistered } : {}),
    });
    servers.push(server);
    // PORT=0: a port the system gave the setup server (its ephemeral range), not Probot's
    // default 3000 that 0 would mean to Probot's own server.
    expect(server.port).toBeGreaterThan(3000);
    return `http://127.0.0.1:${server.port}`;
  }

  it("turns the code into .env only with the state this page gave GitHub", async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, "app.yml"), appYml);
    writeFileSync(join(cwd, ".env"), "LOG_LEVEL=debug\n");
    const requests: string[] = [];
    const base = await startSetup(cwd, requests);
    const { action } = postedForm(await getPage(`${base}/probot`));
    const state = new URL(action).searchParams.get("state") ?? "";

    const forged = await fetch(`${base}/probot/setup?code=abc123&state=${"0".repeat(32)}`, {
      redirect: "manual",
    });
    expect(forged.status).toBe(400);
    expect(requests).toEqual([]);
    expect(hasCredentials(parseEnv(readFileSync(join(cwd, ".env"), "utf8")), cwd)).toBe(false);

    const back = await fetch(`${base}/probot/setup?code=abc123&state=${state}`, {
      redirect: "manual",
    });
    expect(back.status).toBe(302);
    expect(back.headers.get("location")).toBe(
      "https://github.com/apps/evokernel/installations/new",
    );
    expect(requests).toEqual(["POST https://api.github.com/app-manifests/abc123/conversions"]);
    const env = parseEnv(readFileSync(join(cwd, ".env"), "utf8"));
    expect(env).toMatchObject({
      LOG_LEVEL: "debug",
      APP_ID: "4242",
      WEBHOOK_SECRET: "hook-secret",
      PRIVATE_KEY: "-----BEGIN RSA PRIVATE KEY-----\nAAA\nBBB\n-----END RSA PRIVATE KEY-----\n",
    });
    expect(hasCredentials(env, cwd)).toBe(true);
    // The key is readable by the operator only, though .env existed before.
    expect(statSync(join(cwd, ".env")).mode & 0o777).toBe(0o600);
  });

  it("then gives the port to the app, started with the new credentials", async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, "app.yml"), appYml);
    let started: (port: string) => void = () => undefined;
    const appStarted = new Promise<string>((resolve) => (started = resolve));
    const base = await startSetup(cwd, [], async () => {
      // The app's server would listen here: the setup server must have let the port go
      // (nothing listens there any more: a new connection is refused). No port is taken
      // here, so none can be lost to another process in between.
      const refused = await new Promise<string>((resolve) => {
        const socket = connect(Number(new URL(base).port), "127.0.0.1");
        socket.once("connect", () => {
          socket.destroy();
          resolve("accepted");
        });
        socket.once("error", (error: NodeJS.ErrnoException) => resolve(String(error.code)));
      });
      const appId = readFileSync(join(cwd, ".env"), "utf8").match(/^APP_ID=(\d+)$/m)?.[1];
      started(`${refused}, APP_ID ${appId ?? "missing"}`);
    });
    const { action } = postedForm(await getPage(`${base}/probot`));
    const state = new URL(action).searchParams.get("state") ?? "";
    const back = await fetch(`${base}/probot/setup?code=abc123&state=${state}`, {
      redirect: "manual",
    });
    expect(back.status).toBe(302);
    expect(await appStarted).toBe("ECONNREFUSED, APP_ID 4242");
  });
});
