// The app's process: Probot's middleware behind evokernel's server (server.ts: webhook bodies
// bounded before they are read) with evokernel's Octokit limits. Without APP_ID and a
// private key (in the environment or .env) it serves evokernel's setup page instead, which
// registers the App from app.yml (src/app/setup/). Started by a process that holds an IPC
// channel to it (the tests, with PORT=0), it sends `{ evokernel: "listening", port }` once
// its server listens: the port it got, never one chosen for it by someone else.
import { run } from "probot";
import app from "./index.js";
import { evokernelOctokit, limitsFromEnv } from "./octokit.js";
import { startAppServer } from "./server.js";
import { hasCredentials, readDotEnv, startSetupServer } from "./setup/server.js";

/** The app with the credentials of the environment and .env (read again after setup). */
async function startApp(): Promise<void> {
  const env = { ...process.env, ...readDotEnv(process.cwd()) };
  if (env.WEBHOOK_PROXY_URL) {
    // Development through a smee.io proxy: Probot's own server, which starts the proxy client.
    const server = await run(app, { Octokit: evokernelOctokit(limitsFromEnv(process.env)) });
    reportListening(server.port);
    return;
  }
  const server = await startAppServer(app, {
    env,
    Octokit: evokernelOctokit(limitsFromEnv(process.env)),
  });
  for (const signal of ["SIGINT", "SIGTERM"] as const)
    process.once(signal, () => void server.close().then(() => process.exit(0)));
  reportListening(server.port);
}

/** To a parent holding an IPC channel (a test, a bench): the port this server got. */
function reportListening(port: number): void {
  process.send?.({ evokernel: "listening", port });
}

const env = { ...process.env, ...readDotEnv(process.cwd()) };
if (hasCredentials(env, process.cwd())) {
  await startApp();
} else {
  // Registered from the page, the app starts at once with what it wrote to .env.
  await startSetupServer({ env, cwd: process.cwd(), onRegistered: startApp });
}
