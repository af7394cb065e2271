// The app's process: Probot's server with evokernel's Octokit limits. Without APP_ID and a
// private key (in the environment or .env) it serves evokernel's setup page instead, which
// registers the App from app.yml (src/app/setup/).
import { run } from "probot";
import app from "./index.js";
import { evokernelOctokit, limitsFromEnv } from "./octokit.js";
import { hasCredentials, readDotEnv, startSetupServer } from "./setup/server.js";

const env = { ...process.env, ...readDotEnv(process.cwd()) };
if (hasCredentials(env, process.cwd())) {
  await run(app, { Octokit: evokernelOctokit(limitsFromEnv(process.env)) });
} else {
  await startSetupServer({ env, cwd: process.cwd() });
}
