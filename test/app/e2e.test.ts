// End to end: the real app process (bundled as shipped) against the GitHub stand-in, with the
// local backend running a fake runner in a git worktree of the PR's head, from the
// pull_request webhook to the posted comment, review and check run.
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
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
} from "../helpers/github-standin.mjs";
import { kernelPatch } from "../helpers/app-harness.js";
import { makePrRepo } from "../helpers/pr-repo.js";

const SECRET = "e2e-secret";
let dir: string;
let standin: Standin;
let app: AppProcess;
let head: string;
let base: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "evokernel-app-e2e-"));
  // A local job's runner runs as a user of its own (60998 where the app is root): it reads
  // the clone and the runner here, and writes its markers.
  await chmod(dir, 0o1777);
  let repo: string;
  ({ repo, base, head } = await makePrRepo(dir));

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
          // The recorded result reports layernorm too: the job's plan must name it.
          {
            filename: "kernels/layernorm/kernel.cu",
            status: "modified",
            patch: "@@ -1 +1 @@\n-a\n+b",
          },
        ],
      },
    },
  });
  const entry = await bundleApp(join(dir, "app.mjs"));
  app = await startApp({
    entry,
    standin,
    secret: SECRET,
    privateKey: generateAppKey(),
    env: {
      EVOKERNEL_LOCAL_REPO: repo,
      EVOKERNEL_RUNNER_CMD: JSON.stringify([
        process.execPath,
        fileURLToPath(new URL("../helpers/fake-job-runner.mjs", import.meta.url)),
      ]),
      EVOKERNEL_FAKE_RESULT: fileURLToPath(
        new URL("../fixtures/app/review-result.json", import.meta.url),
      ),
      EVOKERNEL_THROTTLE: "off",
    },
  });
});

afterAll(async () => {
  await app?.stop();
  await standin?.close();
  await rm(dir, { recursive: true, force: true });
});

it("takes a PR from webhook to comment, review and check run through the local backend", async () => {
  const payload = pullRequestEvent({ number: 7, head, base, headRef: "faster" });
  const answer = await sendWebhook(app.url, SECRET, "pull_request", payload, "e2e-1");
  expect(answer.status).toBe(200);
  await standin.waitFor(
    () => standin.checkRuns.some((run) => run.status === "completed"),
    600_000,
    "the check run to complete",
  );

  expect(standin.unknown()).toEqual([]);
  expect(standin.comments).toHaveLength(1);
  expect(standin.comments[0]?.body).toContain("<!-- evokernel:comment -->");
  expect(standin.comments[0]?.body).toContain("`layernorm` is wrong");
  expect(standin.reviews).toHaveLength(1);
  expect(JSON.stringify(standin.reviews[0])).toContain("#define BLOCK_SIZE 512");
  const [run] = standin.checkRuns;
  expect(run).toMatchObject({
    head_sha: head,
    status: "completed",
    conclusion: "failure",
    name: "evokernel",
  });
  // Apply, and the button that marks the failing verdict (layernorm's) wrong.
  expect(run?.actions).toEqual([
    expect.objectContaining({ identifier: "evk-apply" }),
    expect.objectContaining({ identifier: "evk-wrong" }),
  ]);
  // the evolved kernels' branch, and the state branch keeping the head's timings until the merge
  expect([...standin.refs.keys()].sort()).toEqual([
    "refs/heads/evokernel-state",
    `refs/heads/evokernel/7-${head.slice(0, 7)}`,
  ]);
  // No Actions dispatch: the job ran on the app's machine.
  expect(standin.dispatches).toEqual([]);
});

/** The head kernel the recorded result's suggestion was made against. */
