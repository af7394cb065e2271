#!/usr/bin/env node
// The app end to end on a GPU machine, with bare `node` and the bundles only (no
// node_modules): a temporary git repository holding this checkout's kernels/ on `main` and a
// PR branch that replaces the kernel files the caller names; the GitHub stand-in; the bundled
// app (dist/app.mjs) with the local backend running the real runner (dist/evokernel.mjs job).
// Three phases, each waited for and written to the output folder:
//   pr       the PR's pull_request webhook, until its check run completes (comment.md,
//            review.md, check-run.md, check-runs.json at the top of the folder);
//   command  each --command, in order, once the PR's check run has completed: an
//            issue_comment webhook with that body, until the app has answered it (its check
//            runs completed, or a reply posted) (command-N-<words>/);
//   nightly  --nightly: `.github/evokernel.yml` on main gains a `nightly:` section whose
//            window is the current minute, a second app process ticks every --tick-s seconds,
//            until the night has ended (its ledger written on evokernel-state, or its check
//            run failed) (nightly/: check run, the nightly PR or drift issue, the ledger).
// summary.json holds, per phase, whether it completed, its check runs' conclusions and
// titles and the comment's first lines; the exit status is 1 when a phase timed out.
//
//   npm run bundle   # where node_modules are: writes dist/app.mjs and dist/evokernel.mjs
//   node scripts/e2e-local.mjs --out OUT \
//     --change kernels/softmax/kernel.cu=path/to/slower.cu \
//     --change kernels/layernorm/kernel.cu=path/to/faster.cu \
//     --change kernels/gelu/kernel.cu=path/to/wrong.cu \
//     [--command "/bench softmax" ...] [--nightly] [--timeout-min 9] [--grace-s 60]
// (--kernels, --app, --runner, --config, --nightly-tasks/-budget/-proposer, --tick-s,
// --keep-repo: see the options below)
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  generateAppKey,
  issueCommentEvent,
  pullRequestEvent,
  sendWebhook,
  startApp,
  startStandin,
} from "../test/helpers/github-standin.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    change: { type: "string", multiple: true, default: [] },
    command: { type: "string", multiple: true, default: [] },
    nightly: { type: "boolean", default: false },
    "nightly-tasks": { type: "string" },
    "nightly-budget": { type: "string", default: "{ candidates: 4, minutes: 2 }" },
    "nightly-proposer": { type: "string", default: "tuner" },
    "tick-s": { type: "string", default: "2" },
    out: { type: "string", default: "e2e-out" },
    "timeout-min": { type: "string", default: "9" },
    "grace-s": { type: "string", default: "60" },
    kernels: { type: "string", default: join(root, "kernels") },
    app: { type: "string", default: join(root, "dist/app.mjs") },
    runner: { type: "string", default: join(root, "dist/evokernel.mjs") },
    config: { type: "string", default: "pullRequests: bench\ndispatch: local\n" },
    "keep-repo": { type: "boolean", default: false },
  },
});

const out = resolve(values.out);
const timeoutMin = Number(values["timeout-min"]);
if (!(timeoutMin > 0)) fail(`--timeout-min ${values["timeout-min"]}: give a number of minutes > 0`);
// A phase waits for its job's limit (the app fails the job then) and --grace-s to report it.
const graceS = Number(values["grace-s"]);
if (!(graceS >= 0)) fail(`--grace-s ${values["grace-s"]}: give a number of seconds >= 0`);
const phaseMs = timeoutMin * 60_000 + graceS * 1000;
const tickS = Number(values["tick-s"]);
if (!(tickS > 0)) fail(`--tick-s ${values["tick-s"]}: give a number of seconds > 0`);
for (const file of [values.app, values.runner]) {
  if (!existsSync(file))
    fail(
      `${file} is missing: run \`npm run bundle\` where node_modules are, and bring dist/ along`,
    );
}
if (values.change.length === 0 && !values.nightly)
  fail(
    "name the kernels to change: --change kernels/<task>/kernel.cu=FILE (three: slower, faster, wrong), or run --nightly alone",
  );
if (values.change.length === 0 && values.command.length > 0)
  fail("--command needs a pull request: name its kernels with --change");
for (const command of values.command) {
  if (!command.startsWith("/"))
    fail(`--command ${command}: write the comment, e.g. "/bench softmax"`);
}
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

// 1. The repository: base = this checkout's kernels and the config, head = the kernels with
// the changes.
const work = mkdtempSync(join(tmpdir(), "evokernel-e2e-local-"));
// A local job's runner runs as a user of its own where the app is root (60998): it reads the
// clone below this folder (mkdtemp makes it 0700).
chmodSync(work, 0o755);
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
mkdirSync(join(repo, ".github"), { recursive: true });
git("init", "-q", "-b", "main");
cpSync(values.kernels, join(repo, "kernels"), { recursive: true });
writeFileSync(join(repo, ".github/evokernel.yml"), values.config);
git("add", ".");
git("commit", "-q", "-m", "base: the kernels as they are");
const base = git("rev-parse", "HEAD");
let head;
let files = [];
if (changes.length > 0) {
  git("checkout", "-q", "-b", "e2e-kernels");
  for (const { path, file } of changes) {
    mkdirSync(dirname(join(repo, path)), { recursive: true });
    cpSync(file, join(repo, path));
  }
  git("add", ".");
  git("commit", "-q", "-m", `head: ${changes.map((c) => c.path).join(", ")}`);
  head = git("rev-parse", "HEAD");
  git("checkout", "-q", "main");
  files = git("diff", "--name-status", base, head)
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
}
console.log(
  `repo ${repo}: base ${base.slice(0, 7)}${head ? `, head ${head.slice(0, 7)}, ${files.length} files changed` : ""}`,
);

// 2. The stand-in; each phase's app process against it.
const standin = await startStandin({
  repoDir: repo,
  config: values.config,
  pulls: head ? { 1: { head, base, headRef: "e2e-kernels", files } } : {},
});
const secret = "e2e-local-secret";
const privateKey = generateAppKey();
const started = Date.now();
const summary = {
  base,
  ...(head ? { head, changes: changes.map((c) => c.path) } : {}),
  phases: [],
  unknownRoutes: [],
  ok: false,
};
let app;

function launch(env, resultDir) {
  return startApp({
    entry: resolve(values.app),
    standin,
    secret,
    privateKey,
    inheritEnv: true,
    env: {
      EVOKERNEL_LOCAL_REPO: repo,
      EVOKERNEL_LOCAL_STATE: join(work, "local-state"),
      EVOKERNEL_RUNNER_CMD: JSON.stringify([process.execPath, resolve(values.runner), "job"]),
      EVOKERNEL_RESULT_DIR: resultDir,
      EVOKERNEL_JOB_TIMEOUT_MIN: String(timeoutMin),
      EVOKERNEL_THROTTLE: "off",
      LOG_LEVEL: "info",
      ...env,
    },
  });
}

try {
  if (head) {
    app = await launch({}, join(out, "job"));
    const prDone = await prPhase();
    for (const [index, command] of values.command.entries()) {
      // A command while the PR's job still runs would race it: it is not sent.
      if (prDone) await commandPhase(index, command);
      else
        summary.phases.push({
          name: `command ${command}`,
          command,
          completed: false,
          timedOut: false,
          skipped: "not sent: the PR's check run did not complete",
          checkRuns: [],
        });
    }
    writeFileSync(join(out, "app.log"), app.output());
    await app.stop();
    app = undefined;
  }
  if (values.nightly) await nightlyPhase();
} finally {
  if (app) {
    writeFileSync(join(out, head ? "app.log" : "nightly-app.log"), app.output());
    await app.stop();
  }
  writeCommon();
  await standin.close();
  if (!values["keep-repo"]) rmSync(work, { recursive: true, force: true });
}
const timedOut = summary.phases.filter((phase) => !phase.completed).map((phase) => phase.name);
console.log(
  `${timedOut.length > 0 ? `NOT COMPLETED: ${timedOut.join(", ")}` : "done"} after ${((Date.now() - started) / 1000).toFixed(0)} s; outputs in ${out}`,
);
process.exitCode = timedOut.length > 0 ? 1 : 0;

/** Waits for `test` on the stand-in's requests; false (and says so) when `ms` passes first. */
async function waitFor(test, ms, what) {
  try {
    await standin.waitFor(test, ms, what);
    return true;
  } catch (error) {
    console.error(error.message);
    return false;
  }
}

/** A phase's record in summary.json. */
function phaseRecord(name, since, completed, extra = {}) {
  const runs = standin.checkRuns.slice(since.checkRuns);
  const record = {
    name,
    completed,
    timedOut: !completed,
    seconds: Math.round((Date.now() - since.at) / 100) / 10,
    checkRuns: runs.map((run) => ({
      name: run.name,
      headSha: run.head_sha,
      status: run.status,
      conclusion: run.conclusion,
      title: run.output?.title ?? null,
    })),
    ...extra,
  };
  summary.phases.push(record);
  writeSummary();
  return record;
}

function mark() {
  return {
    at: Date.now(),
    checkRuns: standin.checkRuns.length,
    requests: standin.requests.length,
    comments: new Map(standin.comments.map((c) => [c.id, c.edits])),
    reviews: standin.reviews.length,
  };
}

/** The comments of `since`'s phase: the app's PR comment if it changed, and new replies. */
function commentsOf(since) {
  const changed = standin.comments.filter(
    (c) => since.comments.has(c.id) && since.comments.get(c.id) !== c.edits,
  );
  const created = standin.comments.filter((c) => !since.comments.has(c.id));
  const marked = [...changed, ...created].find((c) => c.body.includes("<!-- evokernel:comment"));
  return {
    comment: marked ?? null,
    replies: created.filter((c) => c !== marked),
  };
}

function firstLines(text, count = 8) {
  return (text ?? "").split("\n").slice(0, count);
}

async function prPhase() {
  const since = mark();
  const answer = await sendWebhook(
    app.url,
    secret,
    "pull_request",
    pullRequestEvent({ number: 1, head, base, headRef: "e2e-kernels" }),
    "e2e-local-1",
  );
  console.log(
    `pr: webhook answered ${answer.status} in ${answer.ms.toFixed(0)} ms; waiting for the check run (up to ${timeoutMin} min)`,
  );
  const completed = await waitFor(
    () =>
      standin.checkRuns.length > since.checkRuns &&
      standin.checkRuns.slice(since.checkRuns).every((run) => run.status === "completed"),
    phaseMs,
    "the PR's check run to complete",
  );
  const { comment } = commentsOf(since);
  const reviews = standin.reviews.slice(since.reviews);
  if (comment) writeFileSync(join(out, "comment.md"), comment.body);
  writeReviews(out, reviews);
  writeCheckRuns(out, standin.checkRuns.slice(since.checkRuns));
  const record = phaseRecord("pr", since, completed, {
    webhookStatus: answer.status,
    comment: comment ? { edits: comment.edits, firstLines: firstLines(comment.body) } : null,
    reviews: reviews.length,
  });
  console.log(`pr: ${describe(record)}`);
  return completed;
}

async function commandPhase(index, body) {
  const since = mark();
  const commentId = 7001 + index;
  const dir = join(out, `command-${index + 1}-${slug(body)}`);
  mkdirSync(dir, { recursive: true });
  const answer = await sendWebhook(
    app.url,
    secret,
    "issue_comment",
    issueCommentEvent({ number: 1, body, commentId }),
    `e2e-local-comment-${commentId}`,
  );
  console.log(`${body}: webhook answered ${answer.status}; waiting for the app's answer`);
  const reactionsTo = () =>
    standin.requests
      .slice(since.requests)
      .filter(
        (r) => r.method === "POST" && r.path.endsWith(`/issues/comments/${commentId}/reactions`),
      )
      .map((r) => r.body.content);
  // Answered: the command's check runs all completed, or a reply posted (a refusal, help,
  // "already running"), or /cancel's +1.
  const completed = await waitFor(
    () => {
      const runs = standin.checkRuns.slice(since.checkRuns);
      if (runs.length > 0) return runs.every((run) => run.status === "completed");
      if (commentsOf(since).replies.length > 0) return true;
      return /^\/cancel\b/i.test(body.trim()) && reactionsTo().includes("+1");
    },
    phaseMs,
    `the app's answer to ${body}`,
  );
  const { comment, replies } = commentsOf(since);
  const reviews = standin.reviews.slice(since.reviews);
  if (comment) writeFileSync(join(dir, "comment.md"), comment.body);
  if (replies.length > 0)
    writeFileSync(join(dir, "replies.md"), replies.map((c) => c.body).join("\n\n---\n\n"));
  writeReviews(dir, reviews);
  writeCheckRuns(dir, standin.checkRuns.slice(since.checkRuns));
  const record = phaseRecord(`command ${body}`, since, completed, {
    command: body,
    dir: dir.slice(out.length + 1),
    webhookStatus: answer.status,
    reactions: reactionsTo(),
    comment: comment ? { edits: comment.edits, firstLines: firstLines(comment.body) } : null,
    replies: replies.map((c) => ({ firstLines: firstLines(c.body) })),
    reviews: reviews.length,
  });
  console.log(`${body}: ${describe(record)}`);
}

async function nightlyPhase() {
  const dir = join(out, "nightly");
  mkdirSync(dir, { recursive: true });
  // The window: this minute, today (UTC); it is due at the first tick and not again until
  // tomorrow, so exactly one night runs.
  const now = new Date();
  const tasks =
    values["nightly-tasks"] ??
    (changes.length > 0
      ? JSON.stringify([...new Set(changes.map((c) => c.path.split("/").slice(0, 2).join("/")))])
      : "all");
  const config = [
    values.config.trimEnd(),
    "nightly:",
    `  schedule: "${now.getUTCMinutes()} ${now.getUTCHours()} * * *"`,
    `  tasks: ${tasks}`,
    `  budget: ${values["nightly-budget"]}`,
    `  proposer: ${values["nightly-proposer"]}`,
    "",
  ].join("\n");
  writeFileSync(join(repo, ".github/evokernel.yml"), config);
  git("add", ".github/evokernel.yml");
  git("commit", "-q", "-m", "config: a nightly run");
  const sha = git("rev-parse", "HEAD");
  standin.state.config = config;
  writeFileSync(join(dir, "evokernel.yml"), config);
  const since = mark();
  app = await launch(
    { EVOKERNEL_NIGHTLY: "on", EVOKERNEL_NIGHTLY_TICK_S: String(tickS) },
    join(dir, "job"),
  );
  console.log(
    `nightly: main at ${sha.slice(0, 7)}, schedule "${config.match(/schedule: "(.*)"/)?.[1]}"; waiting for the night (up to ${timeoutMin} min)`,
  );
  const ledgerCommit = () => {
    const state = standin.refs.get("refs/heads/evokernel-state");
    return state === undefined ? undefined : standin.commit(state);
  };
  const reported = () => /^evokernel nightly \d/.test(ledgerCommit()?.message ?? "");
  // No night report follows these: the job failed, or its result did not count.
  const FINAL = [
    "The job did not finish",
    "The job did not start",
    "Not started: too many jobs",
    "Runner error: the result does not add up",
  ];
  const night = () => standin.checkRuns.slice(since.checkRuns).find((run) => run.head_sha === sha);
  const completed = await waitFor(
    () => {
      if (reported()) return true;
      const run = night();
      return (
        run !== undefined &&
        (run.updates.some((update) => FINAL.includes(update.output?.title)) ||
          (run.status === "completed" && FINAL.includes(run.output?.title)))
      );
    },
    phaseMs + tickS * 1000,
    "the nightly run to end",
  );
  writeCheckRuns(dir, standin.checkRuns.slice(since.checkRuns));
  const ledger = standin.readFile("evokernel-state", "nightly.json");
  if (ledger !== undefined) writeFileSync(join(dir, "ledger.json"), ledger);
  const pulls = standin.openedPulls;
  const issues = standin.issues;
  for (const pull of pulls)
    writeFileSync(join(dir, `pull-${pull.number}.md`), `# ${pull.title}\n\n${pull.body}`);
  for (const issue of issues)
    writeFileSync(join(dir, `issue-${issue.number}.md`), `# ${issue.title}\n\n${issue.body}`);
  const lastNight = ledger === undefined ? undefined : JSON.parse(ledger).nights?.at(-1);
  const record = phaseRecord("nightly", since, completed, {
    sha,
    reported: reported(),
    night: lastNight ? { pull: lastNight.pull, proposed: lastNight.proposed } : null,
    pulls: pulls.map((p) => ({
      number: p.number,
      head: p.head,
      state: p.state,
      title: p.title,
      firstLines: firstLines(p.body),
    })),
    issues: issues.map((i) => ({
      number: i.number,
      state: i.state,
      title: i.title,
      firstLines: firstLines(i.body),
    })),
    branch: branchOf("refs/heads/evokernel/nightly"),
  });
  writeFileSync(join(dir, "app.log"), app.output());
  await app.stop();
  app = undefined;
  console.log(`nightly: ${describe(record)}`);
}

/** A branch the app wrote: its commit, message and the files that commit wrote. */
function branchOf(ref) {
  const sha = standin.refs.get(ref);
  if (sha === undefined) return null;
  const commit = standin.commit(sha);
  const tree = commit === undefined ? undefined : standin.objects.get(commit.tree);
  return {
    sha,
    message: commit?.message ?? null,
    files: tree?.entries?.map((entry) => entry.path) ?? [],
  };
}

function describe(record) {
  const runs = record.checkRuns
    .map((run) => `${run.name}: ${run.conclusion ?? run.status} (${run.title ?? ""})`)
    .join("; ");
  return `${record.completed ? "completed" : "TIMED OUT"} in ${record.seconds} s; ${runs || "no check run"}`;
}

function slug(text) {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "")
      .slice(0, 40) || "comment"
  );
}

function writeReviews(dir, reviews) {
  writeFileSync(join(dir, "review.json"), JSON.stringify(reviews, null, 2));
  writeFileSync(
    join(dir, "review.md"),
    reviews
      .map((review) =>
        [
          review.body,
          ...(review.comments ?? []).map(
            (c) =>
              `---\n**${c.path}:${c.start_line ? `${c.start_line}-` : ""}${c.line}**\n\n${c.body}`,
          ),
        ].join("\n\n"),
      )
      .join("\n\n===\n\n"),
  );
}

function writeCheckRuns(dir, runs) {
  writeFileSync(join(dir, "check-runs.json"), JSON.stringify(runs, null, 2));
  writeFileSync(
    join(dir, "check-run.md"),
    runs
      .map(
        (run) =>
          `# ${run.name}: ${run.conclusion ?? run.status}\n\n## ${run.output?.title ?? ""}\n\n${run.output?.summary ?? ""}\n\n${run.output?.text ?? ""}`,
      )
      .join("\n\n"),
  );
}

function writeSummary() {
  summary.seconds = Math.round((Date.now() - started) / 100) / 10;
  summary.unknownRoutes = standin.unknown().map((r) => `${r.method} ${r.path}`);
  summary.ok =
    summary.phases.length > 0 &&
    summary.phases.every((phase) => phase.completed) &&
    summary.unknownRoutes.length === 0;
  writeFileSync(join(out, "summary.json"), JSON.stringify(summary, null, 2));
}

function writeCommon() {
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
  writeFileSync(
    join(out, "files.json"),
    JSON.stringify(
      {
        base,
        head: head ?? null,
        changes: changes.map((c) => c.path),
        files: files.map((f) => f.filename),
        timedOut: summary.phases.some((phase) => !phase.completed),
        seconds: (Date.now() - started) / 1000,
      },
      null,
      2,
    ),
  );
  writeSummary();
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
