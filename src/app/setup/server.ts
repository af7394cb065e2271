// Setup mode: `npm start` without credentials. Probot's own server (its static files, ping
// and logging) with evokernel's page in place of Probot's stock one, and GitHub's manifest
// flow as Probot runs it: the page posts the manifest, GitHub redirects back with a code,
// `POST /app-manifests/{code}/conversions` returns the App's id, key and webhook secret,
// which go to .env beside Probot's other settings. Then the operator restarts.
import { randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseEnv } from "node:util";
import { Probot, ProbotOctokit, Server, type Logger } from "probot";
import { logFormat, withLogSettings } from "../operator-log.js";
import { buildRegistration, readAppYml, type AppDefinition } from "./manifest.js";
import { renderMessagePage, renderSetupPage } from "./page.js";

export interface SetupOptions {
  readonly env: NodeJS.ProcessEnv;
  /** Where .env is written and app.yml is looked for first (Probot's rule: the cwd). */
  readonly cwd: string;
  /** Tests: a ProbotOctokit whose requests they can see. */
  readonly Octokit?: typeof ProbotOctokit;
  /**
   * Once the App is registered and .env written, the setup server stops and this starts
   * the app with the new credentials (npm start: Probot's run), so no restart is needed.
   */
  readonly onRegistered?: () => Promise<unknown>;
}

/** Probot's test for credentials: an App id and a key (PRIVATE_KEY, _PATH or one .pem). */
export function hasCredentials(env: NodeJS.ProcessEnv, cwd: string): boolean {
  if (!env.APP_ID) return false;
  if (env.PRIVATE_KEY) return true;
  if (env.PRIVATE_KEY_PATH) return existsSync(env.PRIVATE_KEY_PATH);
  return readdirSync(cwd).some((name) => name.endsWith(".pem"));
}

/** .env's settings under the process's own, as Probot's `run` applies them. */
export function readDotEnv(cwd: string): Record<string, string> {
  const path = join(cwd, ".env");
  if (!existsSync(path)) return {};
  const parsed = parseEnv(readFileSync(path, "utf8"));
  return Object.fromEntries(
    Object.entries(parsed).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

export async function startSetupServer(options: SetupOptions): Promise<Server> {
  const { env, cwd } = options;
  const app = readAppYml(readFileSync(findAppYml(cwd), "utf8"));
  // Checked now, not when the page is first opened: a wrong GH_ORG is a startup error.
  buildRegistration(app, env, "http://localhost");
  const port = env.PORT !== undefined && env.PORT !== "" ? Number(env.PORT) : 3000;
  // Probot's own workaround for setup mode (probot#1512): the instance is never used.
  const unused = { appId: 1, privateKey: "unused in setup mode" };
  // Probot's Server logs pretty whatever NODE_ENV says unless given a logger: this one
  // follows Probot's run conventions (LOG_FORMAT; JSON when NODE_ENV=production).
  const logSettings = withLogSettings(env);
  const { log: logger } = await new Probot({
    ...unused,
    logLevel: logSettings.LOG_LEVEL as "info",
    logFormat: logFormat(env),
  }).ready();
  const server = new Server({
    host: env.HOST || "localhost",
    // Probot's Server takes 0 for "unset" (port || 3000); Node's listen reads a port given
    // as a string, so PORT=0 still asks the system for a free port.
    port: (port === 0 ? "0" : port) as number,
    log: logger,
    Probot: Probot.defaults({ ...unused, log: logger }),
  });
  let log: Logger | undefined;
  await server.loadHandlerFactory((probot) => {
    log = probot.log.child({ name: "setup" });
    return setupHandler(app, options, log, () => server.stop());
  });
  await server.start();
  // The port the server got (PORT=0: the system's choice), at an address one can open.
  log?.info(
    `evokernel is not registered yet (no APP_ID and private key): open ${openableUrl(env.HOST, server.port)}/ to register the GitHub App${env.GH_ORG ? ` on ${env.GH_ORG}` : ""}`,
  );
  return server;
}

/** http://host:port a browser on this machine can open: not 0.0.0.0 or :: (any address). */
export function openableUrl(host: string | undefined, port: number): string {
  const bare = (host ?? "").replace(/^\[|\]$/g, "");
  const name =
    bare === "" || bare === "0.0.0.0" || bare === "::" || bare === "::ffff:0.0.0.0"
      ? "localhost"
      : bare.includes(":")
        ? `[${bare}]`
        : bare;
  return `http://${name}:${port}`;
}

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

function setupHandler(
  app: AppDefinition,
  options: SetupOptions,
  log: Logger,
  stop: () => Promise<void>,
): Handler {
  const { env, cwd } = options;
  // GitHub hands this back with the code: a code that comes with another state was not
  // started from this page (CSRF) and is refused.
  const state = randomBytes(16).toString("hex");
  return async (req, res) => {
    const url = new URL(req.url ?? "/", "http://setup.invalid");
    if (req.method !== "GET") return false;
    if (url.pathname === "/") {
      res.writeHead(302, { location: "/probot" }).end();
      return true;
    }
    if (url.pathname === "/probot") {
      const registration = buildRegistration(app, env, requestBase(req));
      res
        .writeHead(200, { "content-type": "text/html; charset=utf-8" })
        .end(renderSetupPage(app, registration, state));
      return true;
    }
    if (url.pathname === "/probot/setup") {
      const code = url.searchParams.get("code") ?? "";
      if (!/^[\w-]{1,200}$/.test(code) || !sameState(url.searchParams.get("state"), state)) {
        res
          .writeHead(400, { "content-type": "text/html; charset=utf-8" })
          .end(
            renderMessagePage(
              "Not from this setup page",
              "The code is missing, or came with another state than this server's page gave GitHub. Start again from this server's page.",
            ),
          );
        return true;
      }
      const created = await convertCode(code, env, options.Octokit ?? ProbotOctokit);
      updateDotEnv(cwd, created.settings);
      const { onRegistered } = options;
      log.info(
        `registered ${created.htmlUrl}; its id, key and webhook secret are in ${join(cwd, ".env")}${onRegistered ? ": starting the app with them" : ": restart npm start"}`,
      );
      res.writeHead(302, { location: `${created.htmlUrl}/installations/new` }).end();
      if (onRegistered) {
        // After the browser has its answer: this server gives the port to the app.
        res.once("finish", () => {
          stop()
            .then(onRegistered)
            .catch((error: unknown) => {
              log.error({ err: error }, "starting the app failed: restart npm start");
            });
        });
      }
      return true;
    }
    return false;
  };
}

/** The one request of the flow: GitHub turns the code into the App's credentials. */
async function convertCode(
  code: string,
  env: NodeJS.ProcessEnv,
  Octokit: typeof ProbotOctokit,
): Promise<{ htmlUrl: string; settings: Record<string, string> }> {
  const octokit = new Octokit({
    ...(env.GHE_HOST ? { baseUrl: `${env.GHE_PROTOCOL || "https"}://${env.GHE_HOST}/api/v3` } : {}),
  });
  const { data } = await octokit.request("POST /app-manifests/{code}/conversions", { code });
  return {
    htmlUrl: data.html_url,
    settings: {
      APP_ID: String(data.id),
      PRIVATE_KEY: data.pem,
      WEBHOOK_SECRET: data.webhook_secret ?? "",
      GITHUB_CLIENT_ID: data.client_id,
      GITHUB_CLIENT_SECRET: data.client_secret,
    },
  };
}

/** Merge into .env, in the format Node's parseEnv (Probot's reader) reads back. */
function updateDotEnv(cwd: string, settings: Record<string, string>): void {
  const merged = { ...readDotEnv(cwd), ...settings };
  const lines = Object.entries(merged).map(([key, value]) =>
    /[\s"'#\\]/.test(value) ? `${key}="${value.replace(/\n/g, "\\n")}"` : `${key}=${value}`,
  );
  const path = join(cwd, ".env");
  writeFileSync(path, `${lines.join("\n")}\n`, { mode: 0o600 });
  // The mode applies only to a new file: an existing .env now holds the key too.
  chmodSync(path, 0o600);
}

function sameState(given: string | null, expected: string): boolean {
  if (given === null || given.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(expected));
}

/** scheme://host as the browser reached us (a proxy's X-Forwarded-* first, as Probot does). */
function requestBase(req: IncomingMessage): string {
  const forwardedProto = req.headers["x-forwarded-proto"];
  const proto =
    (typeof forwardedProto === "string" ? forwardedProto.split(",")[0]?.trim() : undefined) ||
    ("encrypted" in req.socket && req.socket.encrypted ? "https" : "http");
  const forwardedHost = req.headers["x-forwarded-host"];
  const host =
    (typeof forwardedHost === "string" ? forwardedHost.split(",")[0]?.trim() : undefined) ||
    req.headers.host ||
    "localhost";
  return `${proto}://${host}`;
}

/** app.yml in the working directory (Probot's place), else in the package beside this file. */
function findAppYml(cwd: string): string {
  if (existsSync(join(cwd, "app.yml"))) return join(cwd, "app.yml");
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 5; depth++) {
    if (existsSync(join(dir, "app.yml"))) return join(dir, "app.yml");
    dir = dirname(dir);
  }
  throw new Error(`app.yml not found in ${cwd} or beside the app: run npm start in the checkout`);
}
