// What the operator reads: Probot's log conventions (LOG_FORMAT, LOG_LEVEL; JSON when
// NODE_ENV=production, as `probot run` does), the one line the app prints once it is up (the
// App, where webhooks go, the backend, the installations GitHub lists), and for every
// failure at start what to check.
import type { ProbotOctokit } from "probot";
import type { AppSettings } from "./settings.js";

export type LogFormat = "json" | "pretty";

/**
 * Probot's run: LOG_FORMAT=pretty is pretty, any other value JSON; unset, JSON when
 * NODE_ENV=production and pretty otherwise. (createProbot, which the app's server uses,
 * leaves both to the Probot constructor: pretty and `warn` whatever NODE_ENV says.)
 */
export function logFormat(env: NodeJS.ProcessEnv): LogFormat {
  if (env.LOG_FORMAT) return env.LOG_FORMAT === "pretty" ? "pretty" : "json";
  return env.NODE_ENV === "production" ? "json" : "pretty";
}

/** The environment with Probot's log settings made explicit: info unless told, the format. */
export function withLogSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...env, LOG_LEVEL: env.LOG_LEVEL || "info", LOG_FORMAT: logFormat(env) };
}

/** The GitHub the app talks to, as Probot builds its address. */
export function gitHubApi(env: Pick<NodeJS.ProcessEnv, "GHE_HOST" | "GHE_PROTOCOL">): string {
  return env.GHE_HOST
    ? `${env.GHE_PROTOCOL || "https"}://${env.GHE_HOST}/api/v3`
    : "https://api.github.com";
}

/** Where the jobs run, in the operator's words. */
export function describeBackend(settings: AppSettings): string {
  const local = settings.local;
  if (!local)
    return "GitHub Actions on the repositories' GPU runners (local runs off: EVOKERNEL_LOCAL_REPO unset)";
  const perJob = local.gpusPerJob ?? 1;
  const where =
    `${local.repoDir}, ${local.gpus} GPU${local.gpus === 1 ? "" : "s"}` +
    (perJob === 1 ? "" : `, ${perJob} a job`);
  return settings.forceLocal
    ? `local for every repository (EVOKERNEL_DISPATCH=local; ${where})`
    : `GitHub Actions, or local (${where}) for repositories whose config says dispatch: local`;
}

type ErrorLike = { status?: unknown; code?: unknown; message?: unknown; cause?: unknown };

const NETWORK_CODES = new Set([
  "ENOTFOUND",
  "EAI_AGAIN",
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "CERT_HAS_EXPIRED",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_SOCKET",
]);

/** The error's codes and messages, its causes' included (fetch hides the reason in `cause`). */
function chain(error: unknown): ErrorLike[] {
  const found: ErrorLike[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const link: ErrorLike = current;
    found.push(link);
    current = link.cause;
  }
  return found;
}

/**
 * What to check when a request to GitHub failed at start (the App's lookup, the
 * installations, start-up recovery); undefined when the error says nothing we can act on.
 */
export function gitHubHint(
  error: unknown,
  env: Pick<NodeJS.ProcessEnv, "APP_ID" | "GHE_HOST" | "GHE_PROTOCOL">,
): string | undefined {
  const links = chain(error);
  const status = links.map((link) => link.status).find((value) => typeof value === "number");
  const api = gitHubApi(env);
  const network = links.some(
    (link) =>
      (typeof link.code === "string" && NETWORK_CODES.has(link.code)) ||
      (typeof link.message === "string" && /fetch failed|aborted|timed? ?out/i.test(link.message)),
  );
  if (network || status === 500 || status === 502 || status === 503 || status === 504)
    return `GitHub (${api}) cannot be reached: check the network and any proxy (HTTPS_PROXY), and GHE_HOST / GHE_PROTOCOL for GitHub Enterprise Server`;
  if (status === 401)
    return `GitHub (${api}) refused the App's token: check that APP_ID (${env.APP_ID ?? "unset"}) and the private key (PRIVATE_KEY or PRIVATE_KEY_PATH) are the same App's, and this machine's clock`;
  if (status === 404)
    return `GitHub (${api}) has no App with APP_ID ${env.APP_ID ?? "unset"}: check APP_ID, and GHE_HOST for GitHub Enterprise Server`;
  if (status === 403)
    return `GitHub (${api}) refused the request (403): check the App is not suspended and the rate limit (GET /rate_limit)`;
  return undefined;
}

/** What to check when the server could not start (the port, the key). */
export function startHint(error: unknown, env: NodeJS.ProcessEnv): string {
  const code = chain(error)
    .map((link) => link.code)
    .find((value) => typeof value === "string");
  const port = env.PORT || "3000";
  if (code === "EADDRINUSE")
    return `port ${port} is in use: stop what listens there, or set PORT to a free port`;
  if (code === "EACCES")
    return `port ${port} needs privileges: set PORT above 1023 (a proxy in front can take 443)`;
  if (code === "EADDRNOTAVAIL")
    return `HOST ${env.HOST ?? ""} is no address of this machine: set HOST (0.0.0.0 for every address)`;
  const message = chain(error)
    .map((link) => (typeof link.message === "string" ? link.message : ""))
    .join(" ");
  if (/privateKey|private key|PEM|asn1|DECODER/i.test(message))
    return "the private key cannot be read: check PRIVATE_KEY (the .pem's text, newlines as \\n) or PRIVATE_KEY_PATH";
  return (
    gitHubHint(error, env) ??
    "check APP_ID, PRIVATE_KEY or PRIVATE_KEY_PATH, WEBHOOK_SECRET, HOST and PORT (docs/APP.md, Operator settings)"
  );
}

export interface StartFacts {
  readonly env: NodeJS.ProcessEnv;
  readonly settings: AppSettings;
  readonly port: number;
  readonly webhookPath: string;
}

export interface StartLine {
  readonly level: "info" | "error";
  readonly fields: Record<string, unknown>;
  readonly message: string;
}

/**
 * The line the app prints once it listens: the App (asked of GitHub: GET /app), where
 * webhooks go, the backend, the installations GitHub lists. GitHub not reached: the same
 * line at error level, saying what to check.
 */
export async function startLine(octokit: ProbotOctokit, facts: StartFacts): Promise<StartLine> {
  const { env, settings, port, webhookPath } = facts;
  const host = env.HOST || "localhost";
  const where = `webhooks on ${host}:${port}${webhookPath}`;
  const backend = describeBackend(settings);
  const base = { appId: Number(env.APP_ID) || undefined, webhookPath, host, port, backend };
  let app: { name: string; slug: string | undefined };
  try {
    // Asked once, not retried: the line says at once when GitHub cannot be reached.
    const { data } = await octokit.request("GET /app", { request: { retries: 0 } });
    app = { name: data?.name ?? "?", slug: data?.slug };
  } catch (error) {
    const hint = gitHubHint(error, env) ?? "check APP_ID, the private key and GHE_HOST";
    return {
      level: "error",
      fields: { ...base, err: error },
      message: `evokernel is up but GitHub did not name App ${env.APP_ID ?? "?"}: ${hint}; ${where}; backend: ${backend}`,
    };
  }
  let installations: string;
  let count: number | undefined;
  try {
    const listed = await octokit.paginate(octokit.rest.apps.listInstallations, {
      per_page: 100,
      request: { retries: 0 },
    });
    count = listed.length;
    const names = listed.slice(0, 5).map((item) => {
      const account = item.account as { login?: string; slug?: string } | null;
      return account?.login ?? account?.slug ?? String(item.id);
    });
    installations =
      count === 0
        ? "no installations yet (install the App on the organisation's repositories)"
        : `${count} installation${count === 1 ? "" : "s"} (${names.join(", ")}${count > 5 ? ", …" : ""})`;
  } catch (error) {
    installations = `installations not listed: ${gitHubHint(error, env) ?? String(error)}`;
  }
  return {
    level: "info",
    fields: { ...base, app: app.slug ?? app.name, installations: count },
    message: `evokernel is up: App ${app.name}${app.slug && app.slug !== app.name ? ` (${app.slug})` : ""}, id ${env.APP_ID ?? "?"}, on ${gitHubApi(env)}; ${where}; backend: ${backend}; ${installations}`,
  };
}

const LEVELS = { warn: 40, fatal: 60 } as const;

/** A line for stderr before Probot's logger exists, in the format the operator chose. */
export function earlyLine(
  env: NodeJS.ProcessEnv,
  level: keyof typeof LEVELS,
  message: string,
): string {
  if (logFormat(env) === "json")
    return `${JSON.stringify({ level: LEVELS[level], time: Date.now(), name: "evokernel", msg: message })}\n`;
  return `${level.toUpperCase()} (evokernel): ${message}\n`;
}
