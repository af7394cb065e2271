// The app's HTTP server (what `probot run` would start), with the webhook body bounded
// before Probot reads it (webhook-body.ts), request time limits, /ping, and Probot's
// middleware for the rest. Options Probot would act on but this bundle cannot serve are
// dropped with a warning: SENTRY_DSN and REDIS_URL name packages the bundle does not carry,
// and an operator setting one must not stop the app.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createNodeMiddleware, createProbot, type ApplicationFunction } from "probot";
import type { Probot, ProbotOctokit } from "probot";
import {
  WEBHOOK_BODIES_IN_FLIGHT,
  WEBHOOK_BODY_LIMIT,
  WEBHOOK_STRING_LIMIT,
} from "./input-limits.js";
import { withLogSettings } from "./operator-log.js";
import { createByteBudget, type LongStrings, takeWebhookBody } from "./webhook-body.js";

export interface AppServerOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly Octokit: typeof ProbotOctokit;
  readonly bodyLimit?: number;
  readonly bodiesInFlight?: number;
  /** Escaped bytes a string in a webhook body may have before it is emptied. */
  readonly stringLimit?: number;
  /** Where warnings go before Probot's logger exists. */
  readonly warn?: (message: string) => void;
}

export interface AppServer {
  readonly server: Server;
  readonly port: number;
  readonly webhookPath: string;
  /** The app's Probot: its logger, and the App's own client (auth() with no id). */
  readonly probot: Probot;
  close(): Promise<void>;
}

const UNSUPPORTED = ["SENTRY_DSN", "REDIS_URL"] as const;

export async function startAppServer(
  appFn: ApplicationFunction,
  options: AppServerOptions,
): Promise<AppServer> {
  // Probot's run conventions (info; JSON when NODE_ENV=production), not createProbot's.
  const env = withLogSettings(options.env);
  for (const name of UNSUPPORTED) {
    if (!env[name]) continue;
    (options.warn ?? console.warn)(
      `${name} is set, but this build of evokernel does not include its integration; ignoring it`,
    );
    delete env[name];
  }
  if (!env.WEBHOOK_SECRET)
    (options.warn ?? console.warn)(
      "WEBHOOK_SECRET is not set: webhooks are checked against Probot's development secret, which GitHub does not sign with; set it to the App's webhook secret",
    );
  const probot = createProbot({ env, overrides: { Octokit: options.Octokit } });
  const webhookPath = env.WEBHOOK_PATH || "/api/github/webhooks";
  const middleware = await createNodeMiddleware(appFn, { probot, webhooksPath: webhookPath });
  const limit = options.bodyLimit ?? WEBHOOK_BODY_LIMIT;
  const budget = createByteBudget(options.bodiesInFlight ?? WEBHOOK_BODIES_IN_FLIGHT);
  // Without a secret Probot falls back to its development one; no strings are emptied then.
  const longStrings: LongStrings | undefined = env.WEBHOOK_SECRET
    ? { secret: env.WEBHOOK_SECRET, limit: options.stringLimit ?? WEBHOOK_STRING_LIMIT }
    : undefined;

  const server = createServer((request, response) => {
    void (async () => {
      const path = (request.url ?? "/").split("?")[0];
      if (request.method === "GET" && path === "/ping") {
        response.writeHead(200, { "content-type": "text/plain" }).end("PONG");
        return;
      }
      if (request.method === "POST" && path === webhookPath) {
        if (!(await takeWebhookBody(request, response, limit, budget, longStrings))) return;
      }
      await middleware(request, response, () => {
        response.writeHead(404, { "content-type": "text/plain" }).end("Not Found");
      });
    })().catch((error: unknown) => {
      probot.log.error({ err: error }, "request failed");
      if (!response.headersSent) response.writeHead(500).end();
    });
  });
  // A client that trickles its headers or body does not hold a socket for Node's 300 s.
  server.headersTimeout = 20_000;
  server.requestTimeout = 60_000;
  const port = env.PORT !== undefined && env.PORT !== "" ? Number(env.PORT) : 3000;
  const host = env.HOST || "localhost";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host }, () => resolve());
  });
  probot.log.info(`Listening on http://${host}:${(server.address() as AddressInfo).port}`);
  return {
    server,
    port: (server.address() as AddressInfo).port,
    webhookPath,
    probot,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
