// What a maintainer's answers look like where people read them: the verdict block the app
// keeps in its check run (hidden: the verdicts as judged, what an answer answers), the
// check run concluded again with its accepts ("accepted by @login: reason"), the note on a
// verdict whose kernel was marked wrong before, and the night's issue that lists the wrong
// marks. Every reason and login goes through escape.ts: no mention, link, HTML or heading
// of its own. Pure.
import {
  type Accept,
  FAILING_OUTCOMES,
  type Verdict,
  type VerdictData,
  verdictDataSchema,
  type WrongMark,
  MAX_VERDICTS,
} from "../shared/answers.js";
import type { ReviewResult } from "../shared/review.js";
import type { ThresholdInput } from "../shared/thresholds.js";
import { codeSpan, link, mdText, PLAIN } from "./escape.js";
import { byOutcome, headline } from "./outcome.js";

const DATA_OPEN = "<!-- evokernel:verdicts ";
const DATA_CLOSE = " -->";
const ANSWERS_OPEN = "<!-- evokernel:answers -->";
const ANSWERS_CLOSE = "<!-- /evokernel:answers -->";
export const WRONG_ISSUE_MARKER = "<!-- evokernel:wrong -->";
export const WRONG_ISSUE_TITLE = "evokernel: verdicts marked wrong";

/** The check-run buttons that answer a verdict (GitHub: label ≤ 20, description ≤ 40, id ≤ 20). */
export const ACCEPT_ACTION = {
  label: "Accept regression",
  description: "Let this commit's regressions pass",
  identifier: "evk-accept",
} as const;
export const WRONG_ACTION = {
  label: "Verdict is wrong",
  description: "Record the failing verdict as a mistake",
  identifier: "evk-wrong",
} as const;
/** The reason a button stores: a button carries none (the command does). */
export const BUTTON_ACCEPT_REASON = "accepted from the check run";
export const BUTTON_WRONG_REASON = "marked from the check run";

/** The verdicts a review's check run gave, as the block keeps them (judged tasks only). */
export function verdictDataOf(
  review: ReviewResult,
  threshold: ThresholdInput,
  judged: { conclusion: VerdictData["conclusion"]; title: string },
): VerdictData {
  const tasks = byOutcome(review.tasks, threshold)
    .flatMap(({ task, outcome }): Verdict[] =>
      outcome === "quiet"
        ? []
        : [
            {
              task: cut(task.task.path, 200),
              name: cut(task.task.name, 200),
              outcome,
              headline: cut(headline(task, outcome, PLAIN), 400),
              kernel: task.kernel === null ? null : cut(task.kernel, 300),
              reason:
                task.verification === null || task.verification.ok
                  ? null
                  : cut(task.verification.reason ?? task.verification.status, 100),
              verifySeed: task.verification?.seed ?? null,
              benchSeed: task.benchSeed ?? null,
              speedup: task.speedup?.median ?? null,
            },
          ],
    )
    .slice(0, MAX_VERDICTS);
  return {
    v: 1,
    conclusion: judged.conclusion,
    title: cut(judged.title, 300),
    gpu: cut(review.device.gpu, 200),
    evokernel: cut(review.device.evokernel, 100),
    tasks,
  };
}

/**
 * The hidden block: JSON in an HTML comment, with `<`, `>` and `&` written as JSON escapes,
 * so no text in it can close the comment or open markup.
 */
export function verdictBlock(data: VerdictData): string {
  const json = JSON.stringify(data).replace(
    /[<>&]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return `${DATA_OPEN}${json}${DATA_CLOSE}`;
}

/** The verdict block of a check run's summary, or undefined (none, or not one we can read). */
export function readVerdictBlock(summary: string | null | undefined): VerdictData | undefined {
  if (summary == null || !summary.startsWith(DATA_OPEN)) return undefined;
  const end = summary.indexOf(DATA_CLOSE, DATA_OPEN.length);
  if (end < 0) return undefined;
  try {
    const parsed = verdictDataSchema.safeParse(JSON.parse(summary.slice(DATA_OPEN.length, end)));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The summary as judged: the block and the answers taken off (what the report wrote after them). */
export function judgedSummary(summary: string): string {
  let rest = summary;
  if (rest.startsWith(DATA_OPEN)) {
    const end = rest.indexOf(DATA_CLOSE, DATA_OPEN.length);
    rest = end < 0 ? rest : rest.slice(end + DATA_CLOSE.length).replace(/^\n/, "");
  }
  if (rest.startsWith(ANSWERS_OPEN)) {
    const end = rest.indexOf(ANSWERS_CLOSE);
    if (end >= 0) rest = rest.slice(end + ANSWERS_CLOSE.length).replace(/^\n+/, "");
  }
  return rest;
}

export interface AnsweredCheckRun {
  readonly conclusion: VerdictData["conclusion"];
  readonly title: string;
  readonly summary: string;
}

/**
 * A check run with its answers: success when every failing verdict is a regression accepted
 * on this commit, the judged conclusion otherwise; the accepts and the wrong marks given on
 * this check run's verdicts listed above what was judged. `judged`: the summary as the
 * report wrote it (judgedSummary of the current one).
 */
export function answerCheckRun(
  data: VerdictData,
  judged: string,
  answers: { accepts: readonly Accept[]; wrong: readonly WrongMark[] },
): AnsweredCheckRun {
  const byTask = new Map(data.tasks.map((verdict) => [verdict.task, verdict]));
  const accepts = answers.accepts.filter((entry) => byTask.get(entry.task)?.outcome === "slower");
  const wrong = answers.wrong.filter((entry) => byTask.has(entry.task));
  const accepted = new Set(accepts.map((entry) => entry.task));
  const failing = data.tasks.filter((verdict) => FAILING_OUTCOMES.has(verdict.outcome));
  const passes =
    data.conclusion === "failure" &&
    failing.length > 0 &&
    failing.every((verdict) => verdict.outcome === "slower" && accepted.has(verdict.task));
  const lines = [
    ...accepts.map(
      (entry) =>
        `- ${nameOf(byTask, entry.task)}: regression accepted by ${mdText(`@${entry.login}`)}: ${mdText(entry.reason)}`,
    ),
    ...wrong.map(
      (entry) =>
        `- ${nameOf(byTask, entry.task)}: verdict marked wrong by ${mdText(`@${entry.login}`)}: ${mdText(entry.reason)} (recorded; the night lists it, and the next verdict on this kernel says so)`,
    ),
  ];
  const left = failing.filter((verdict) => !accepted.has(verdict.task));
  if (lines.length > 0 && !passes && data.conclusion === "failure" && accepts.length > 0)
    lines.push(
      `- Still failing: ${left.map((verdict) => codeSpan(verdict.name)).join(", ")} (only a regression can be accepted).`,
    );
  const section =
    lines.length === 0
      ? ""
      : `${ANSWERS_OPEN}\n**Answered by a maintainer**\n\n${lines.join("\n")}\n${ANSWERS_CLOSE}\n\n`;
  const title = passes ? acceptedTitle(accepts) : data.title;
  return {
    conclusion: passes ? "success" : data.conclusion,
    title: title.length > 200 ? `${title.slice(0, 199)}…` : title,
    summary: `${verdictBlock(data)}\n${section}${judged}`,
  };
}

function acceptedTitle(accepts: readonly Accept[]): string {
  const first = accepts[0];
  if (first === undefined) return "";
  // A title is plain text on GitHub (no markdown, no mention): the words as given, on one line.
  if (accepts.length === 1) return `Regression accepted by @${first.login}: ${first.reason}`;
  const logins = [...new Set(accepts.map((entry) => `@${entry.login}`))].join(", ");
  return `${accepts.length} regressions accepted by ${logins}: ${first.reason}`;
}

function nameOf(byTask: ReadonlyMap<string, Verdict>, task: string): string {
  return codeSpan(byTask.get(task)?.name ?? task);
}

/**
 * The note on a verdict whose kernel (the same content) a maintainer marked wrong before:
 * in the PR comment and the check run, so a reader weighs the verdict knowing it. "" for none.
 */
export function wrongBeforeNote(marks: readonly { name: string; mark: WrongMark }[]): string {
  if (marks.length === 0) return "";
  const lines = marks.map(({ name, mark }) => {
    const where =
      mark.evidence.checkUrl === null ? "" : `, ${link("its check run", mark.evidence.checkUrl)}`;
    return `- ${codeSpan(name)}: ${mdText(`@${mark.login}`)} marked evokernel's verdict on this same kernel wrong on ${mdText(mark.at.slice(0, 10))} (it said: ${mdText(mark.evidence.verdict.headline)}; PR ${mdText(`#${mark.evidence.pr}`)}${where}): ${mdText(mark.reason)}`;
  });
  return [
    "**Marked wrong before**: a maintainer marked evokernel's verdict on a kernel judged here (the same file content) as wrong:",
    "",
    ...lines,
  ].join("\n");
}

/** The night's issue listing the verdicts marked wrong, newest first: the team's false positives. */
export function renderWrongIssue(marks: readonly WrongMark[], limit = 100): string {
  const shown = [...marks].reverse().slice(0, limit);
  const rows = shown.map((mark) => {
    const { evidence } = mark;
    const check = evidence.checkUrl === null ? "" : ` ${link("check run", evidence.checkUrl)}`;
    const run = evidence.runUrl === null ? "" : ` ${link("run", evidence.runUrl)}`;
    const seeds = [
      evidence.verdict.verifySeed === null ? "" : `verify seed ${evidence.verdict.verifySeed}`,
      evidence.verdict.benchSeed === null ? "" : `bench seed ${evidence.verdict.benchSeed}`,
    ]
      .filter((part) => part !== "")
      .join(", ");
    return [
      `- ${mdText(mark.at.slice(0, 10))} ${codeSpan(mark.task)} (kernel ${codeSpan(evidence.verdict.kernel ?? "?")} blob ${codeSpan(mark.blob.slice(0, 12))}), marked by ${mdText(`@${mark.login}`)}: ${mdText(mark.reason)}`,
      `  - evokernel said: ${mdText(evidence.verdict.headline)} (${mdText(evidence.verdict.outcome)}${evidence.verdict.reason === null ? "" : `, ${codeSpan(evidence.verdict.reason)}`}) on PR ${mdText(`#${evidence.pr}`)} at ${codeSpan(evidence.sha.slice(0, 7))}${evidence.gpu === null ? "" : `, ${mdText(evidence.gpu)}`}${seeds === "" ? "" : `, ${seeds}`}.${check}${run}`,
    ].join("\n");
  });
  const more =
    marks.length > shown.length ? [`… and ${marks.length - shown.length} older ones.`] : [];
  return [
    WRONG_ISSUE_MARKER,
    `Verdicts of evokernel that a maintainer marked wrong (\`/evokernel wrong <task> <reason>\`), newest first: ${marks.length} in all. Each keeps the run's evidence on the \`evokernel-state\` branch (\`answers.json\`); the next verdict on the same kernel says it was marked.`,
    ...rows,
    ...more,
    "<sub>evokernel's night updates this issue when the list changes.</sub>",
  ].join("\n\n");
}

function cut(value: string, max: number): string {
  return value.length <= max ? value : `${value.slice(0, max - 1)}…`;
}
