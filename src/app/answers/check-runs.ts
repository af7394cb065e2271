// The app's check runs that can be answered, and each concluded again with its answers: the
// verdict block the report wrote in a check run's summary says what was judged; the stored
// answers say what a maintainer answered; the check run is updated only when what it shows
// changes (the same answer twice updates it once). No GPU job runs again.
import { acceptsOn, type Answers, type VerdictData } from "../../shared/answers.js";
import { answerCheckRun, judgedSummary, readVerdictBlock } from "../../report/answers.js";
import type { CheckRun, ChecksApi } from "../github.js";
import { CHECK_NAME_PREFIX } from "../job-registry.js";
import { CHECK_OUTPUT_LIMIT, trimTo } from "../limits.js";

export interface Answerable {
  readonly run: CheckRun;
  readonly data: VerdictData;
}

/** A check run of this app that holds verdicts, with them; undefined for any other. */
export function answerable(run: CheckRun, appId: number | undefined): Answerable | undefined {
  if (!run.name.startsWith(CHECK_NAME_PREFIX) || run.status !== "completed") return undefined;
  // Another app's check run may carry the name, and a block of its own making.
  if (appId !== undefined && run.appId !== appId) return undefined;
  const data = readVerdictBlock(run.output?.summary);
  return data === undefined ? undefined : { run, data };
}

/** The app's answerable check runs on a commit (the latest of each name). */
export async function answerableRuns(
  github: ChecksApi,
  sha: string,
  appId: number | undefined,
): Promise<Answerable[]> {
  const runs = await github.listCheckRuns(sha);
  return runs.flatMap((run) => {
    const found = answerable(run, appId);
    return found === undefined ? [] : [found];
  });
}

/** Concludes the check run again with the answers on its commit; false when nothing changed. */
export async function concludeAnswered(
  github: ChecksApi,
  { run, data }: Answerable,
  pr: number,
  answers: Answers,
): Promise<boolean> {
  const summary = run.output?.summary ?? "";
  const answered = answerCheckRun(data, judgedSummary(summary), {
    accepts: acceptsOn(answers, pr, run.headSha),
    wrong: answers.wrong.filter((mark) => mark.evidence.checkRunId === run.id),
  });
  const fitted = trimTo(answered.summary, CHECK_OUTPUT_LIMIT);
  if (
    fitted === summary &&
    answered.title === (run.output?.title ?? "") &&
    answered.conclusion === run.conclusion
  )
    return false;
  await github.updateCheckRun(run.id, {
    status: "completed",
    conclusion: answered.conclusion,
    output: { title: answered.title, summary: fitted },
  });
  return true;
}
