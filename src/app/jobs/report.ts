// Reporting a finished job, every write through the GitHub interface: the PR head's timings
// kept for the history (history.ts), the one PR comment (found by its marker, edited in
// place, linking the tasks' history charts), one review with suggested changes, a branch for
// changes the diff cannot carry, and the check run's verdict. A failure without a result
// turns the check run into a failure that says what to do. The check run keeps its verdicts
// (a hidden block) for the answers a maintainer gives (handlers/answer.ts), with the
// buttons that give them; the accepts already given on this commit, and a note on a kernel
// whose verdict was marked wrong before, come from the state branch (answers/store.ts).
import {
  acceptsOn,
  type Answers,
  EMPTY_ANSWERS,
  type VerdictData,
  wrongFor,
  type WrongMark,
} from "../../shared/answers.js";
import type { ReviewResult } from "../../shared/review.js";
import {
  ACCEPT_ACTION,
  answerCheckRun,
  verdictDataOf,
  WRONG_ACTION,
  wrongBeforeNote,
} from "../../report/answers.js";
import { blobAt, loadAnswers } from "../answers/store.js";
import {
  COMMENT_MARKER,
  mapSuggestions,
  renderCheckRun,
  renderComment,
} from "../../report/index.js";
import type { AppState } from "../app-state.js";
import type { CheckAction, GitHub, Pull, ReviewComment } from "../github.js";
import { type ActiveJob, APPLY_ACTION, suggestionBranch } from "../job-registry.js";
import { CHECK_OUTPUT_LIMIT, COMMENT_LIMIT, trimTo } from "../limits.js";
import { recordPullReview } from "../history.js";
import { reportNight } from "../nightly/report-night.js";
import { isNightlyJob } from "../nightly/spec.js";
import { codeSpan, mdText } from "../../report/escape.js";
import { checkReviewResult } from "../../shared/result-check.js";
import { droppedNote, type DroppedSuggestion, screenSuggestions } from "../suggestion-policy.js";

/** Posts a job's result, its check run last. jobs/finish.ts calls it with the job claimed. */
export async function reportResult(
  state: AppState,
  github: GitHub,
  job: ActiveJob,
  result: ReviewResult,
): Promise<void> {
  // Checked before anything is posted: a result whose claims do not follow from its own
  // records is a runner error, never a verdict (and never a green check).
  const checked = checkReviewResult(result, job.spec.tasks);
  if (!checked.ok) {
    await github.updateCheckRun(job.checkRunId, {
      status: "completed",
      conclusion: "failure",
      ...(job.runUrl === undefined ? {} : { detailsUrl: job.runUrl }),
      output: {
        title: RUNNER_ERROR_TITLE,
        summary: trimTo(doesNotAddUp(checked.problems), CHECK_OUTPUT_LIMIT, job.runUrl),
      },
    });
    return;
  }
  const { spec } = job;
  const links = job.runUrl === undefined ? {} : { runUrl: job.runUrl, fullResultUrl: job.runUrl };
  const pull = spec.pr === undefined ? undefined : await github.getPull(spec.pr);
  // The artifact's suggestions are untrusted: only what the app's own plan allows stays.
  const { review, dropped } = await screenReview(github, job, checked.review);
  // A push since the job started: the result still belongs on its own commit's check run,
  // but suggestions against an old diff would land on the wrong lines.
  const current = pull !== undefined && pull.headSha === spec.sha;
  // the app's own thresholds (its config's, kept with the job), never the artifact's
  const thresholds = { regression: job.threshold, win: 0, rules: spec.thresholds ?? [] };
  const output = renderCheckRun(review, thresholds);
  const verdicts = verdictDataOf(review, thresholds, output);
  const answered = await answersOf(state, github, job, verdicts);
  const markedBefore = wrongBeforeNote(answered.marked);
  // Nor does a stale commit's result replace the PR's comment, which speaks for the head
  // (events can arrive out of order): its own check run, on its own commit, holds it.
  if (spec.pr !== undefined && current) {
    // The head's timings wait on the state branch for the merge; the comment links the
    // charts its tasks already have.
    const charts = await recordPullReview(github, spec.pr, review).catch((error: unknown) => {
      state.log.warn(
        { err: error, job: spec.id },
        "keeping the PR's timings for the history failed",
      );
      return [];
    });
    await github.upsertComment(
      spec.pr,
      COMMENT_MARKER,
      trimTo(
        withNote(
          withNote(renderComment(review, { ...links, charts }), markedBefore),
          droppedNote(dropped),
        ),
        COMMENT_LIMIT,
        job.runUrl,
      ),
    );
  }
  let actions: CheckAction[] = [];
  if (current && pull !== undefined) {
    const branch = await postSuggestions(github, pull, spec.sha, review, dropped);
    // Only the app can push to a branch of this repository; a fork's branch is its owner's.
    if (branch !== undefined && !pull.fork) actions = [APPLY_ACTION];
  }
  // The accepts given on this commit before (a re-run of its job) hold for this check run too.
  const checkRun = answerCheckRun(verdicts, withNote(markedBefore, output.summary), {
    accepts: spec.pr === undefined ? [] : acceptsOn(answered.answers, spec.pr, spec.sha),
    wrong: [],
  });
  if (current && spec.pr !== undefined)
    actions = [...actions, ...answerActions(verdicts, checkRun.conclusion)];
  await github.updateCheckRun(job.checkRunId, {
    status: "completed",
    conclusion: checkRun.conclusion,
    ...(job.runUrl === undefined ? {} : { detailsUrl: job.runUrl }),
    output: {
      title: checkRun.title,
      summary: trimTo(checkRun.summary, CHECK_OUTPUT_LIMIT, job.runUrl),
      ...(output.text === undefined
        ? {}
        : { text: trimTo(output.text, CHECK_OUTPUT_LIMIT, job.runUrl) }),
    },
    ...(actions.length === 0 ? {} : { actions }),
  });
  // The nightly job reports like `/optimize`, then keeps its pull request (nightly/).
  if (isNightlyJob(spec)) {
    await reportNight(github, review, {
      now: new Date(review.finishedAt),
      ...(job.runUrl === undefined ? {} : { runUrl: job.runUrl }),
    });
  }
}

const RUNNER_ERROR_TITLE = "Runner error: the result does not add up";

function doesNotAddUp(problems: readonly string[]): string {
  const shown = problems.slice(0, 20).map((problem) => `- ${mdText(problem)}`);
  if (problems.length > shown.length) shown.push(`- and ${problems.length - shown.length} more`);
  return [
    "The runner's result does not add up, so it does not count: this is an error of the runner (or of what ran beside it), not a verdict on the kernel. Re-run the job; if it happens again, check the runner's version and log.",
    "",
    ...shown,
  ].join("\n");
}

/** The result with every suggestion the policy refuses taken out, and what was taken out. */
async function screenReview(
  github: GitHub,
  job: ActiveJob,
  review: ReviewResult,
): Promise<{ review: ReviewResult; dropped: DroppedSuggestion[] }> {
  const suggestions = review.tasks.flatMap((task) => (task.suggestion ? [task.suggestion] : []));
  if (suggestions.length === 0) return { review, dropped: [] };
  const plan = { tasks: job.spec.tasks, roots: job.spec.roots ?? [] };
  const { kept, dropped } = await screenSuggestions(github, job.spec.sha, plan, suggestions);
  const allowed = new Set(kept);
  return {
    review: {
      ...review,
      tasks: review.tasks.map((task) =>
        task.suggestion && !allowed.has(task.suggestion) ? { ...task, suggestion: null } : task,
      ),
    },
    dropped,
  };
}

function withNote(body: string, note: string): string {
  if (body === "") return note;
  return note === "" ? body : `${body}\n\n${note}`;
}

/** The buttons that answer this check run's verdicts: accept while a regression fails it, wrong while any verdict fails. */
function answerActions(verdicts: VerdictData, conclusion: string): CheckAction[] {
  const outcomes = new Set(verdicts.tasks.map((verdict) => verdict.outcome));
  const failing = outcomes.has("wrong") || outcomes.has("error") || outcomes.has("slower");
  return [
    ...(conclusion === "failure" && outcomes.has("slower") ? [ACCEPT_ACTION] : []),
    ...(failing ? [WRONG_ACTION] : []),
  ];
}

/**
 * The stored answers and the judged kernels a maintainer marked wrong before (found by the
 * kernel file's git blob at the job's commit), for a pull request's job. A state branch that cannot be read leaves
 * both out, said in the log: a note and an old accept never hold a verdict back.
 */
async function answersOf(
  state: AppState,
  github: GitHub,
  job: ActiveJob,
  verdicts: VerdictData,
): Promise<{ answers: Answers; marked: { name: string; mark: WrongMark }[] }> {
  // Answers are given on a pull request's verdicts; a night's job has none to read.
  if (job.spec.pr === undefined) return { answers: EMPTY_ANSWERS, marked: [] };
  try {
    const answers = await loadAnswers(github);
    const marked: { name: string; mark: WrongMark }[] = [];
    for (const verdict of verdicts.tasks) {
      if (verdict.kernel === null || !answers.wrong.some((mark) => mark.task === verdict.task))
        continue;
      const blob = await blobAt(github, job.spec.sha, verdict.kernel);
      const mark = blob === undefined ? undefined : wrongFor(answers, verdict.task, blob);
      if (mark !== undefined) marked.push({ name: verdict.name, mark });
    }
    return { answers, marked };
  } catch (error) {
    state.log.warn(
      { err: error, job: job.spec.id },
      "the answers on the state branch could not be read: the report goes on without them",
    );
    return { answers: EMPTY_ANSWERS, marked: [] };
  }
}

/**
 * One review with every suggestion of the job; the whole evolved kernels also go on a branch
 * when a change lies outside the diff. Returns that branch, if any.
 */
async function postSuggestions(
  github: GitHub,
  pull: Pull,
  sha: string,
  review: ReviewResult,
  dropped: readonly DroppedSuggestion[],
): Promise<string | undefined> {
  const pr = pull.number;
  const suggestions = review.tasks.flatMap((task) => (task.suggestion ? [task.suggestion] : []));
  if (suggestions.length === 0) return undefined;
  const files = await github.listPullFiles(pr);
  const comments: ReviewComment[] = [];
  const outsideFiles: string[] = [];
  for (const suggestion of suggestions) {
    const patch = files.find((file) => file.filename === suggestion.path)?.patch ?? "";
    const mapped = mapSuggestions(patch, suggestion.path, suggestion.before, suggestion.after);
    comments.push(...mapped.comments);
    if (mapped.outside.length > 0) outsideFiles.push(suggestion.path);
  }
  let branch: string | undefined;
  // A fork's head never becomes a branch of this repository (its workflows would run here,
  // with this repository's secrets): for a fork the whole diff stays in the comment.
  if (outsideFiles.length > 0 && !pull.fork) {
    branch = suggestionBranch(pr, sha);
    await github.commitFiles(
      branch,
      sha,
      suggestions.map((suggestion) => ({ path: suggestion.path, content: suggestion.after })),
      `evokernel: evolved kernels for #${pr} at ${sha.slice(0, 7)}\n\n${suggestions.map((s) => `- ${s.path}`).join("\n")}`,
    );
  }
  const body = withNote(
    reviewBody(comments.length, branch, outsideFiles, pull.fork),
    droppedNote(dropped),
  );
  await github.createReview(pr, sha, body, comments, review.job.id);
  return branch;
}

function reviewBody(
  count: number,
  branch: string | undefined,
  outside: readonly string[],
  fork: boolean,
): string {
  const lines = [
    count > 0
      ? `evokernel found faster kernels that still verify: ${count} suggested change${count === 1 ? "" : "s"} below. Commit them from the review, or ignore them.`
      : "evokernel found faster kernels that still verify.",
  ];
  if (branch !== undefined) {
    lines.push(
      "",
      `Some changes lie outside this PR's diff (${outside.map((path) => codeSpan(path)).join(", ")}), where GitHub takes no suggestion. ` +
        `The whole evolved kernels are on branch ${codeSpan(branch)}: press **Apply** on the evokernel check run, or merge that branch yourself.`,
    );
  } else if (outside.length > 0 && fork) {
    lines.push(
      "",
      `Some changes lie outside this PR's diff (${outside.map((path) => codeSpan(path)).join(", ")}), where GitHub takes no suggestion. ` +
        "This PR comes from a fork, whose code evokernel never pushes to this repository: the evolved kernel's whole diff is in evokernel's comment.",
    );
  }
  return lines.join("\n");
}
