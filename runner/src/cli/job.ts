// evokernel job: runs one job spec (what the app dispatched) in a checkout of its SHA and
// writes the review result. The GitHub Action and the app's local backend run exactly this.
import { resolve } from "node:path";
import { decodeJobInputs } from "#shared/job.js";
import { UsageError } from "../errors.js";
import { openGit } from "../git.js";
import { runJob } from "../jobs/run-job.js";
import { renderReview, writeJson } from "../jobs/write-review.js";
import { flag, printJson, stringOption, type Command } from "./command.js";
import { createProgress } from "./progress.js";
import { withJobCache, withSession } from "../pipeline/session.js";
import { readText } from "../workspace/files.js";

export const jobCommand: Command = {
  name: "job",
  usage: `usage: evokernel job --spec FILE [--out FILE] [--json]

Runs a job (src/shared/job.ts) in the git checkout around the working directory: the
job's commits are read out of git (the checkout needs spec.sha, and spec.baseSha for a
comparison: actions/checkout with fetch-depth: 0), its tasks verified, timed and, for
optimize, evolved. The result (src/shared/review.ts) goes to --out; the PR comment it
makes is printed.

      --spec FILE    the job spec: its JSON, or { "spec": "<JSON>" } as workflow_dispatch
                     passes it
      --out FILE     where to write the result JSON
      --json         print the result JSON instead of the comment

exit: 0 the check passes (or there was nothing to check), 1 a kernel is wrong or slower
      beyond the noise and threshold, 2 usage (a bad spec, a commit the checkout lacks),
      3 no GPU or no Python with torch, 4 internal error`,
  options: {
    spec: { type: "string" },
    out: { type: "string" },
    json: { type: "boolean" },
  },
  async run(parsed, io) {
    const file = stringOption(parsed, "spec");
    if (file === undefined) throw new UsageError("pass --spec FILE (the job's JSON)");
    const text = await readText(resolve(io.cwd, file)).catch((error: unknown) => {
      throw new UsageError(`cannot read the spec ${file}: ${(error as Error).message}`, {
        cause: error,
      });
    });
    const decoded = decodeJobInputs(inputsOf(text.trim()));
    if (!decoded.ok) {
      throw new UsageError(
        `the job spec ${file} is invalid:\n${decoded.errors.map((line) => `  - ${line}`).join("\n")}`,
      );
    }
    const spec = decoded.spec;
    const git = await openGit(io.cwd);
    for (const commit of [spec.sha, ...(spec.baseSha === undefined ? [] : [spec.baseSha])]) {
      if (!(await git.hasRef(commit))) {
        throw new UsageError(
          `this checkout lacks commit ${commit}: check out the job's sha with actions/checkout ` +
            "(ref: the spec's sha, fetch-depth: 0) so both commits are here",
        );
      }
    }
    const say = (line: string) => io.stderr(`${line}\n`);
    say(
      `job ${spec.id}: ${spec.kind} of ${spec.repo.owner}/${spec.repo.name} at ${spec.sha.slice(0, 7)}`,
    );
    // the job's own build cache: nothing its candidates write reaches the next job
    const review = await withJobCache(() =>
      runJob(spec, {
        git,
        openSession: (work) => withSession(work, { say }),
        say,
        onEvent: createProgress(io),
        onPlan(plan) {
          for (const path of plan.ignored) say(`job ${spec.id}: ${path} holds no task; ignored`);
          for (const task of plan.tasks) say(`job ${spec.id}: ${task.path} (${task.format})`);
        },
      }),
    );
    const out = stringOption(parsed, "out");
    if (out !== undefined) await writeJson(resolve(io.cwd, out), review);
    const rendered = renderReview(review);
    if (flag(parsed, "json") || out === undefined) printJson(io, review);
    else io.stdout(rendered.comment);
    say(`job ${spec.id}: check run ${rendered.checkRun.conclusion}: ${rendered.checkRun.title}`);
    return rendered.checkRun.conclusion === "failure" ? 1 : 0;
  },
};

/** A spec file holds the job's JSON, or the workflow_dispatch inputs `{ "spec": "…" }`. */
function inputsOf(text: string): unknown {
  try {
    const data: unknown = JSON.parse(text);
    if (typeof data === "object" && data !== null && "spec" in data) return data;
  } catch {
    // Not JSON at all: decodeJobInputs says so.
  }
  return text;
}
