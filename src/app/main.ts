// The app's process: Probot's middleware behind evokernel's server (server.ts: webhook bodies
// bounded before they are read) with evokernel's Octokit limits. Without APP_ID and a
// private key (in the environment or .env) it serves evokernel's setup page instead, which
// registers the App from app.yml (src/app/setup/). Once up it prints one line for the
// operator (operator-log.ts: the App, where webhooks go, the backend, the installations);
// a failure at start says what to check. Started by a process that holds an IPC channel to
// it (the tests, with PORT=0), it sends `{ evokernel: "listening", port }` once its server
// listens: the port it got, never one chosen for it by someone else.
import { run } from "probot";
import { createEvokernelApp } from "./index.js";
import { evokernelOctokit, limitsFromEnv } from "./octokit.js";
import { earlyLine, startHint, startLine, withLogSettings } from "./operator-log.js";
import { startAppServer, type AppServer } from "./server.js";
import { appSettings, type AppSettings } from "./settings.js";
import { hasCredentials, readDotEnv, startSetupServer } from "./setup/server.js";

/** The environment and .env, Probot's log settings made explicit (read again after setup). */
function readEnv(): NodeJS.ProcessEnv {
  return withLogSettings({ ...process.env, ...readDotEnv(process.cwd()) });
}

/** The app with the credentials of the environment and .env. */
async function startApp(): Promise<void> {
  const env = readEnv();
  const settings = appSettings(env);
  const { appFn } = createEvokernelApp(settings);
  const Octokit = evokernelOctokit(limitsFromEnv(env));
  if (env.WEBHOOK_PROXY_URL) {
    // Development through a smee.io proxy: Probot's own server, which starts the proxy client.
    const server = await run(appFn, { Octokit, env });
    reportListening(server.port);
    return;
  }
  const server = await startAppServer(appFn, {
    env,
    Octokit,
    warn: (message) => process.stderr.write(earlyLine(env, "warn", message)),
  });
  for (const signal of ["SIGINT", "SIGTERM"] as const)
    process.once(signal, () => void server.close().then(() => process.exit(0)));
  reportListening(server.port);
  void announce(server, env, settings);
}

/** The operator's line: what runs, where webhooks go, what GitHub says of the App. */
async function announce(server: AppServer, env: NodeJS.ProcessEnv, settings: AppSettings) {
  const log = server.probot.log.child({ name: "evokernel" });
  try {
    const line = await startLine(await server.probot.auth(), {
      env,
      settings,
      port: server.port,
      webhookPath: server.webhookPath,
    });
    log[line.level](line.fields, line.message);
  } catch (error) {
    log.error(
      { err: error },
      `evokernel is up, but the App could not be asked for: ${startHint(error, env)}`,
    );
  }
}

/** To a parent holding an IPC channel (a test, a bench): the port this server got. */
function reportListening(port: number): void {
  process.send?.({ evokernel: "listening", port });
}

const env = readEnv();
try {
  if (hasCredentials(env, process.cwd())) {
    await startApp();
  } else {
    // Registered from the page, the app starts at once with what it wrote to .env.
    await startSetupServer({ env, cwd: process.cwd(), onRegistered: startApp });
  }
} catch (error) {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(
    earlyLine(env, "fatal", `evokernel could not start: ${message}; ${startHint(error, env)}`),
  );
  process.exit(1);
}
