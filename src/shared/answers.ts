// A maintainer's answers to evokernel's verdicts, and the verdicts they answer. An accept
// (`/evokernel accept <task> <reason>`) lets one regression pass on one commit of one pull
// request; a wrong mark (`/evokernel wrong <task> <reason>`) records that a verdict on one
// kernel (by its content: the git blob of the kernel file) was a mistake, with the run's
// evidence, so the night lists it and the next verdict on the same kernel says so. The
// answers live on the state branch beside the nightly ledger (`answers.json`, named by the
// ledger like a proposal's source), so they survive restarts and every instance sees them.
// The verdicts they answer are the ones the app wrote into its own check run (a hidden
// block: only the app can write its check runs). Pure: parsed with zod when read (the state
// branch is writable by anyone with push access, the check run's block comes from a run).
import { z } from "zod";

export const ANSWERS_FILE = "answers.json";
/** A reason longer than this is cut (with …) before it is stored. */
export const MAX_REASON = 300;
/** Accepts remembered (oldest forgotten first): one per task, commit and pull request. */
export const MAX_ACCEPTS = 300;
/** Wrong marks remembered (oldest forgotten first): one per task and kernel content. */
export const MAX_WRONG = 200;
/** Tasks a check run's verdict block holds (the rest cannot be answered from the check run). */
export const MAX_VERDICTS = 40;

const text = (max: number) => z.string().max(max);

/** The outcomes a person can answer: the ones the check run judged (not unchanged or removed). */
export const judgedOutcomeSchema = z.enum(["wrong", "error", "slower", "faster", "same"]);
export type JudgedOutcome = z.infer<typeof judgedOutcomeSchema>;

/** One task's verdict as the app's check run gave it: what an answer answers. */
export const verdictSchema = z.object({
  /** The task's path (its id in config and commands). */
  task: text(200),
  name: text(200),
  outcome: judgedOutcomeSchema,
  /** The sentence the check run said, as plain text. */
  headline: text(400),
  /** The kernel file judged, relative to the repository root. */
  kernel: text(300).nullable(),
  /** The harness's reason code for a rejection (`mismatch`, `timing-floor`, …). */
  reason: text(100).nullable(),
  /** The inputs' seeds of the verification and the timing: the run's reproduction. */
  verifySeed: z.number().int().nullable(),
  benchSeed: z.number().int().nullable(),
  /** Geometric-mean speedup against base (above 1 is faster), where timed. */
  speedup: z.number().positive().nullable(),
});
export type Verdict = z.infer<typeof verdictSchema>;

/** The block the app keeps in its check run's summary: the verdicts as judged, before answers. */
export const verdictDataSchema = z.object({
  v: z.literal(1),
  conclusion: z.enum(["success", "failure", "neutral"]),
  title: text(300),
  gpu: text(200).nullable(),
  evokernel: text(100).nullable(),
  tasks: z.array(verdictSchema).max(MAX_VERDICTS),
});
export type VerdictData = z.infer<typeof verdictDataSchema>;

export const acceptSchema = z.object({
  pr: z.number().int().positive(),
  /** The commit it was given on: a new push is judged afresh. */
  sha: text(64),
  task: text(200),
  login: text(100),
  reason: text(MAX_REASON + 1),
  at: text(40),
});
export type Accept = z.infer<typeof acceptSchema>;

export const wrongSchema = z.object({
  task: text(200),
  /** The git blob of the kernel file judged: the same content anywhere is the same kernel. */
  blob: text(64),
  login: text(100),
  reason: text(MAX_REASON + 1),
  at: text(40),
  /** The run's evidence: where and how the verdict was given. */
  evidence: z.object({
    pr: z.number().int().positive(),
    sha: text(64),
    checkRunId: z.number().int(),
    checkUrl: text(500).nullable(),
    runUrl: text(500).nullable(),
    gpu: text(200).nullable(),
    evokernel: text(100).nullable(),
    verdict: verdictSchema,
  }),
});
export type WrongMark = z.infer<typeof wrongSchema>;

export const answersSchema = z.object({
  schema: z.literal(1),
  accepts: z.array(acceptSchema),
  wrong: z.array(wrongSchema),
});
export type Answers = z.infer<typeof answersSchema>;

export const EMPTY_ANSWERS: Answers = { schema: 1, accepts: [], wrong: [] };

/** The stored text as answers; unreadable text starts afresh (the caller says so in the log). */
export function parseAnswers(stored: string | undefined): { answers: Answers; error?: string } {
  if (stored === undefined) return { answers: EMPTY_ANSWERS };
  let data: unknown;
  try {
    data = JSON.parse(stored);
  } catch (error) {
    return { answers: EMPTY_ANSWERS, error: `not JSON: ${(error as Error).message}` };
  }
  const parsed = answersSchema.safeParse(data);
  if (!parsed.success)
    return { answers: EMPTY_ANSWERS, error: parsed.error.issues[0]?.message ?? "invalid" };
  return { answers: parsed.data };
}

export function serializeAnswers(answers: Answers): string {
  const kept: Answers = {
    schema: 1,
    accepts: answers.accepts.slice(-MAX_ACCEPTS),
    wrong: answers.wrong.slice(-MAX_WRONG),
  };
  return `${JSON.stringify(kept, null, 1)}\n`;
}

/**
 * A reason as stored: one line, no control characters, at most MAX_REASON characters. It is
 * escaped where it is shown (src/report/answers.ts), not here: the record keeps the words.
 */
export function cleanReason(reason: string): string {
  const line = reason
    .replace(/[\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069]+/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
  const chars = [...line];
  return chars.length <= MAX_REASON ? line : `${chars.slice(0, MAX_REASON - 1).join("")}…`;
}

/** The answers with `accept` added; unchanged (added false) when that commit's task is accepted. */
export function addAccept(answers: Answers, accept: Accept): { answers: Answers; added: boolean } {
  const known = answers.accepts.some(
    (entry) => entry.pr === accept.pr && entry.sha === accept.sha && entry.task === accept.task,
  );
  if (known) return { answers, added: false };
  return { answers: { ...answers, accepts: [...answers.accepts, accept] }, added: true };
}

/** The answers with `mark` added; unchanged (added false) when that kernel's verdict is marked. */
export function addWrong(answers: Answers, mark: WrongMark): { answers: Answers; added: boolean } {
  if (wrongFor(answers, mark.task, mark.blob) !== undefined) return { answers, added: false };
  return { answers: { ...answers, wrong: [...answers.wrong, mark] }, added: true };
}

/** The accepts given on one commit of one pull request. */
export function acceptsOn(answers: Answers, pr: number, sha: string): Accept[] {
  return answers.accepts.filter((entry) => entry.pr === pr && entry.sha === sha);
}

/** The wrong mark of a task's kernel, by its content. */
export function wrongFor(answers: Answers, task: string, blob: string): WrongMark | undefined {
  return answers.wrong.find((entry) => entry.task === task && entry.blob === blob);
}

/** Outcomes that fail a check: an accept lets `slower` pass, nothing lets the others. */
export const FAILING_OUTCOMES: ReadonlySet<JudgedOutcome> = new Set(["wrong", "error", "slower"]);
