#!/usr/bin/env node
// The app end to end on a GPU machine, with bare `node` and the bundles only (no
// node_modules): a temporary git repository holding this checkout's kernels/ on `main` and a
// PR branch that replaces the kernel files the caller names; the GitHub stand-in; the bundled
// app (dist/app.mjs) with the local backend running the real runner (dist/evokernel.mjs job).
// It sends the PR's webhook, waits for the check run to complete and writes what the app
// posted (comment, review, check run) to an output folder.
//
//   npm run bundle   # where node_modules are: writes dist/app.mjs and dist/evokernel.mjs
//   node scripts/e2e-local.mjs --out OUT \
//     --change kernels/softmax/kernel.cu=path/to/slower.cu \
//     --change kernels/layernorm/kernel.cu=path/to/faster.cu \
//     --change kernels/gelu/kernel.cu=path/to/wrong.cu [--timeout-min 9]
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout } from "node:timers";
import { parseArgs } from "node:util";
import {
  generateAppKey,
  pullRequestEvent,
  sendWebhook,
  startApp,
  startStandin,
} from "./github-standin.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    change: { type: "string", multiple: true, default: [] },
    out: { type: "string", default: "e2e-out" },
    "timeout-min": { type: "string", default: "9" },
    kernels: { type: "string", default: join(root, "kernels") },
    app: { type: "string", default: join(root, "dist/app.mjs") },
    runner: { type: "string", default: join(root, "dist/evokernel.mjs") },
    config: { type: "string", default: "pullRequests: bench\ndispatch: local\n" },
    "keep-repo": { type: "boolean", default: false },
  },
});

const out = resolve(values.out);
const timeoutMs = Number(values["timeout-min"]) * 60_000;
for (const file of [values.app, values.runner]) {
  if (!existsSync(file))
    fail(
      `${file} is missing: run \`npm run bundle\` where node_modules are, and bring dist/ along`,
    );
}
if (values.change.length === 0)
  fail(
    "name the kernels to change: --change kernels/<task>/kernel.cu=FILE (three: slower, faster, wrong)",
  );
const changes = values.change.map((text) => {
  const eq = text.indexOf("=");
  if (eq < 1) fail(`--change ${text}: write PATH_IN_REPO=FILE`);
  const path = text.slice(0, eq);
  const file = resolve(text.slice(eq + 1));
  if (!existsSync(file)) fail(`--change ${text}: ${file} does not exist`);
  if (!path.startsWith("kernels/")) fail(`--change ${text}: the path must lie under kernels/`);
  return { path, file };
});
mkdirSync(out, { recursive: true });

// 1. The repository: base = this checkout's kernels, head = the same with the changes.
const work = mkdtempSync(join(tmpdir(), "evokernel-e2e-local-"));
const repo = join(work, "repo");
const git = (...args) =>
  execFileSync("git", args, {
    cwd: repo,
    encoding: "utf8",
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "e2e",
      GIT_AUTHOR_EMAIL: "e2e@invalid",
      GIT_COMMITTER_NAME: "e2e",
      GIT_COMMITTER_EMAIL: "e2e@invalid",
    },
  }).trim();
mkdirSync(repo);
git("init", "-q", "-b", "main");
cpSync(values.kernels, join(repo, "kernels"), { recursive: true });
git("add", ".");
git("commit", "-q", "-m", "base: the kernels as they are");
const base = git("rev-parse", "HEAD");
git("checkout", "-q", "-b", "e2e-kernels");
for (const { path, file } of changes) {
  mkdirSync(dirname(join(repo, path)), { recursive: true });
  cpSync(file, join(repo, path));
}
git("add", ".");
git("commit", "-q", "-m", `head: ${changes.map((c) => c.path).join(", ")}`);
const head = git("rev-parse", "HEAD");
git("checkout", "-q", "main");
const files = git("diff", "--name-status", base, head)
  .split("\n")
  .filter(Boolean)
  .map((line) => {
    const [status, filename] = line.split("\t");
    const diff = git("diff", base, head, "--", filename);
    const at = diff.indexOf("\n@@");
    return {
      filename,
      status: status === "A" ? "added" : status === "D" ? "removed" : "modified",
      patch: at < 0 ? undefined : diff.slice(at + 1),
    };
  });
console.log(
  `repo ${repo}: base ${base.slice(0, 7)}, head ${head.slice(0, 7)}, ${files.length} files changed`,
);

// 2. The stand-in and the app.
const standin = await startStandin({
  repoDir: repo,
  config: values.config,
  pulls: { 1: { head, base, headRef: "e2e-kernels", files } },
});
const secret = "e2e-local-secret";
let app;
let timedOut = false;
const started = Date.now();
try {
  app = await startApp({
    entry: resolve(values.app),
    standin,
    secret,
    privateKey: generateAppKey(),
    inheritEnv: true,
    env: {
      EVOKERNEL_LOCAL_REPO: repo,
      EVOKERNEL_RUNNER_CMD: JSON.stringify([process.execPath, resolve(values.runner), "job"]),
      EVOKERNEL_RESULT_DIR: join(out, "job"),
      EVOKERNEL_JOB_TIMEOUT_MIN: String(Number(values["timeout-min"])),
      EVOKERNEL_THROTTLE: "off",
      LOG_LEVEL: "info",
    },
  });
  const answer = await sendWebhook(
    app.url,
    secret,
    "pull_request",
    pullRequestEvent({ number: 1, head, base, headRef: "e2e-kernels" }),
    "e2e-local-1",
  );
  console.log(
    `webhook answered ${answer.status} in ${answer.ms.toFixed(0)} ms; waiting for the check run (up to ${values["timeout-min"]} min)`,
  );
  await standin
    .waitFor(
      () => standin.checkRuns.some((run) => run.status === "completed"),
      timeoutMs + 30_000,
      "the check run to complete",
    )
    .catch((error) => {
      timedOut = true;
      console.error(error.message);
    });
  // The check run is the last write; give a straggler a moment.
  await new Promise((done) => setTimeout(done, 500));
} finally {
  writeOutputs();
  await app?.stop();
  await standin.close();
  if (!values["keep-repo"]) rmSync(work, { recursive: true, force: true });
}
console.log(
  `${timedOut ? "TIMED OUT" : "done"} after ${((Date.now() - started) / 1000).toFixed(0)} s; outputs in ${out}`,
);
process.exitCode = timedOut ? 1 : 0;

function writeOutputs() {
  const comment = standin.comments.at(-1);
  if (comment) writeFileSync(join(out, "comment.md"), comment.body);
  writeFileSync(join(out, "review.json"), JSON.stringify(standin.reviews, null, 2));
  writeFileSync(
    join(out, "review.md"),
    standin.reviews
      .map((review) =>
        [
          review.body,
          ...review.comments.map(
            (c) =>
              `---\n**${c.path}:${c.start_line ? `${c.start_line}-` : ""}${c.line}**\n\n${c.body}`,
          ),
        ].join("\n\n"),
      )
      .join("\n\n===\n\n"),
  );
  writeFileSync(join(out, "check-runs.json"), JSON.stringify(standin.checkRuns, null, 2));
  writeFileSync(
    join(out, "check-run.md"),
    standin.checkRuns
      .map(
        (run) =>
          `# ${run.name}: ${run.conclusion ?? run.status}\n\n## ${run.output?.title ?? ""}\n\n${run.output?.summary ?? ""}\n\n${run.output?.text ?? ""}`,
      )
      .join("\n\n"),
  );
  writeFileSync(
    join(out, "requests.json"),
    JSON.stringify(
      standin.requests.map(({ method, path, status }) => ({ method, path, status })),
      null,
      2,
    ),
  );
  writeFileSync(
    join(out, "branches.json"),
    JSON.stringify(Object.fromEntries(standin.refs), null, 2),
  );
  if (app) writeFileSync(join(out, "app.log"), app.output());
  writeFileSync(
    join(out, "files.json"),
    JSON.stringify(
      {
        base,
        head,
        changes: changes.map((c) => c.path),
        files: files.map((f) => f.filename),
        timedOut,
        seconds: (Date.now() - started) / 1000,
      },
      null,
      2,
    ),
  );
  const unknown = standin.unknown();
  if (unknown.length > 0)
    console.error(
      `the app called routes the stand-in lacks: ${unknown.map((r) => `${r.method} ${r.path}`).join(", ")}`,
    );
}

function fail(message) {
  console.error(`e2e-local: ${message}`);
  process.exit(2);
}
