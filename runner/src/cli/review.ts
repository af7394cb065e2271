// evokernel review: on a git checkout, what the app does on a pull request. Finds the tasks
// whose files changed between base and head, verifies head and times it beside base (and
// optimizes it when asked), and writes the exact comment, check run and suggested patch.
import { homedir, tmpdir } from "node:os";
import { basename, join, relative, resolve } from "node:path";
import { UsageError } from "../errors.js";
import { openGit } from "../git.js";
import { runJob } from "../jobs/run-job.js";
import { jobFromCheckout } from "../jobs/job-from-checkout.js";
import { renderReview, writeReview } from "../jobs/write-review.js";
import { flag, printJson, stringOption, type Command } from "./command.js";
import { createProgress } from "./progress.js";
import { withSession } from "../pipeline/session.js";

export const reviewCommand: Command = {
  name: "review",
  usage: `usage: evokernel review [--base REF] [--head REF] [--optimize] [--seed N] [--out DIR] [--json]

Finds the kernel tasks whose files changed between base and head (read out of git into a
temporary folder: your working tree is never touched), verifies head's kernel on every
configuration (held-out ones too), times it beside base's kernel, eager PyTorch and
torch.compile, and with --optimize searches for a faster one. Writes what the GitHub App
would post: the PR comment (also printed), the check run and the suggested patch.
Settings come from .github/evokernel.yml on the base branch (defaults without one).

      --base REF     the branch the change would merge into (default: origin/HEAD, else
                     main or master); the review compares head with its merge base
      --head REF     the change (default HEAD: the last commit, not uncommitted edits)
      --optimize     also search for a faster head kernel (as pullRequests: optimize does)
      --seed N       seed of the search's random choices (default: random)
      --out DIR      where to write comment.md, check-run.json, review.json and
                     suggestion.patch (default: outside your checkout, in the user cache
                     folder: ~/.cache/evokernel/reviews/REPO-SHA7; the path is printed)
      --json         print the review result (one JSON document) instead of the comment

exit: 0 the check would pass (or nothing changed), 1 a kernel is wrong or slower beyond the
      noise and threshold, 2 usage (not a git checkout, an unknown ref, an invalid config),
      3 no GPU or no Python with torch (the changed tasks are listed first), 4 internal error`,
  options: {
    base: { type: "string" },
    head: { type: "string" },
    optimize: { type: "boolean" },
    seed: { type: "string" },
    out: { type: "string" },
    json: { type: "boolean" },
  },
  async run(parsed, io) {
    const git = await openGit(io.cwd);
    const base = stringOption(parsed, "base");
    const head = stringOption(parsed, "head");
    const seedText = stringOption(parsed, "seed");
    const seed = seedText === undefined ? undefined : Number(seedText);
    if (seed !== undefined && !(Number.isInteger(seed) && seed >= 0)) {
      throw new UsageError(`--seed is a whole number ≥ 0, not ${seedText}`);
    }
    const { spec, baseRef } = await jobFromCheckout(git, {
      ...(base === undefined ? {} : { base }),
      ...(head === undefined ? {} : { head }),
      optimize: flag(parsed, "optimize"),
      ...(seed === undefined ? {} : { seed }),
    });
    const say = (line: string) => io.stderr(`${line}\n`);
    say(
      `review: ${spec.sha.slice(0, 7)} against ${spec.baseSha?.slice(0, 7) ?? "?"} (merge base with ${baseRef})`,
    );
    const review = await runJob(spec, {
      git,
      openSession: (work) => withSession(work, { say }),
      say,
      onEvent: createProgress(io),
      onPlan(plan) {
        if (plan.tasks.length === 0) say("review: no kernel task changed");
        for (const path of plan.ignored) say(`review: ${path} holds no task; ignored`);
        for (const task of plan.tasks) {
          const what = task.head === null ? "removed" : task.base === null ? "new" : "changed";
          say(`review: ${task.path} (${task.format}) ${what}`);
        }
      },
    });
    const rendered = renderReview(review);
    const chosen = stringOption(parsed, "out");
    const out = chosen === undefined ? defaultOut(git.root, spec.sha) : resolve(io.cwd, chosen);
    const written = await writeReview(out, review, rendered);
    const { conclusion, title } = rendered.checkRun;
    say(`review: check run ${conclusion}: ${title}`);
    const files = written.map((file) => relative(out, file) || file).join(", ");
    const where = chosen === undefined ? " (outside your checkout; --out DIR to choose)" : "";
    say(`review: wrote ${files} in ${out}${where}`);
    if (flag(parsed, "json")) printJson(io, review);
    else io.stdout(rendered.comment);
    return conclusion === "failure" ? 1 : 0;
  },
};

/**
 * Outside the user's tree, so a review leaves nothing untracked in it: the user cache folder
 * ($XDG_CACHE_HOME, else ~/.cache; the OS temp folder without a home), one folder per commit.
 */
export function defaultOut(root: string, sha: string, env = process.env): string {
  const home = homedir();
  const cache = env["XDG_CACHE_HOME"] ?? (home === "" ? tmpdir() : join(home, ".cache"));
  return join(cache, "evokernel", "reviews", `${basename(root)}-${sha.slice(0, 7)}`);
}
