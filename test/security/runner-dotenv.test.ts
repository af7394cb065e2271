// Issue 34.1, through the real bundled app: a local job's runner that reads the app's .env (as
// a compromised runner would) finds nothing, though the file's mode lets any user read it: by
// default the runner runs as a user of its own with the .env covered in its mount namespace.
// The canary's name is not a secret's, so redaction would not hide it: if the runner could
// read the file, the check run the app posts would carry it.
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { bundleApp } from "../../scripts/bundle.mjs";
import {
  generateAppKey,
  pullRequestEvent,
  sendWebhook,
  startApp,
  startStandin,
  type AppProcess,
  type Standin,
} from "../../test/helpers/github-standin.mjs";
import { confinedCommand } from "../../src/app/dispatch/job-processes.js";
import { kernelPatch } from "../helpers/app-harness.js";
import { makePrRepo } from "../helpers/pr-repo.js";

const SECRET = "dotenv-secret";
const CANARY = "dotenv-canary-31337";
let dir: string;
let standin: Standin | undefined;
let app: AppProcess | undefined;

const ownUser = (await confinedCommand("true", [])).uid !== undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-runner-dotenv-"));
  await chmod(dir, 0o1777);
});

afterAll(async () => {
  await app?.stop();
  await standin?.close();
  await rm(dir, { recursive: true, force: true });
});

it.skipIf(!ownUser)("a runner that reads the app's .env finds it empty", async () => {
  const { repo, base, head } = await makePrRepo(dir);
  standin = await startStandin({
    repoDir: repo,
    config: "pullRequests: bench\ndispatch: local\n",
    pulls: {
      7: {
        head,
        base,
        headRef: "faster",
        files: [
          { filename: "kernels/softmax/kernel.cu", status: "modified", patch: kernelPatch() },
        ],
      },
    },
  });
  const appDir = join(dir, "app");
  await mkdir(appDir, { mode: 0o755 });
  const dotEnv = join(appDir, ".env");
  await writeFile(dotEnv, `EVOKERNEL_TEST_MARK=${CANARY}\n`, { mode: 0o644 });
  await chmod(dotEnv, 0o644);
  app = await startApp({
    entry: await bundleApp(join(dir, "app.mjs")),
    standin,
    secret: SECRET,
    privateKey: generateAppKey(),
    cwd: appDir,
    env: {
      EVOKERNEL_LOCAL_REPO: repo,
      EVOKERNEL_RUNNER_CMD: JSON.stringify([
        "sh",
        "-c",
        `echo "uid $(id -u)"; echo "dotenv [$(cat ${dotEnv} 2>&1)]"; exit 1`,
        "runner",
      ]),
      EVOKERNEL_THROTTLE: "off",
    },
  });
  const payload = pullRequestEvent({ number: 7, head, base, headRef: "faster" });
  expect((await sendWebhook(app.url, SECRET, "pull_request", payload, "dotenv-1")).status).toBe(
    200,
  );
  await standin.waitFor(
    () => standin?.checkRuns.some((run) => run.status === "completed") === true,
    600_000,
    "the check run to complete",
  );
  const posted = JSON.stringify(standin.checkRuns) + JSON.stringify(standin.comments);
  expect(posted).toContain("uid 60998");
  expect(posted).toContain("dotenv [");
  expect(posted).not.toContain(CANARY);
});
