// The app's process: Probot's server with evokernel's Octokit limits. Without APP_ID and a
// private key it serves Probot's setup page, which registers the App from app.yml.
import { run } from "probot";
import app from "./index.js";
import { evokernelOctokit, limitsFromEnv } from "./octokit.js";

await run(app, { Octokit: evokernelOctokit(limitsFromEnv(process.env)) });
