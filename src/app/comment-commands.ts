// PR comment commands: the pure parser of `/optimize`, `/verify`, `/bench`, `/cancel`,
// `/help` and the answers to a verdict (`/evokernel accept|wrong <task> <reason>`; any
// command may be written after `/evokernel`), and the help text. Who may run them and what
// they start lives in the handlers.

import { cleanReason } from "../shared/answers.js";
import { codeSpan } from "../report/escape.js";

export type Proposer = "llm" | "tuner";

/**
 * `sha`: the commit the command names (`@1a2b3c4` or in full), the one its author reviewed. A
 * fork's PR runs only a named commit, and only while it is still exactly the head
 * (approvals.ts): a push in the moment between a maintainer's comment and its handling
 * cannot slip unreviewed code onto a GPU.
 */
export type Command =
  | {
      readonly name: "optimize";
      readonly tasks: readonly string[];
      readonly budget?: number;
      readonly proposer?: Proposer;
      readonly sha?: string;
    }
  | { readonly name: "verify"; readonly tasks: readonly string[]; readonly sha?: string }
  | { readonly name: "bench"; readonly tasks: readonly string[]; readonly sha?: string }
  | { readonly name: "cancel" }
  | { readonly name: "help" }
  | AnswerCommand;

/**
 * A maintainer's answer to a verdict on the PR's head: accept a regression, or mark the
 * verdict wrong. `reason` is one line, cleaned (src/shared/answers.ts), escaped where shown.
 */
export type AnswerCommand = {
  readonly name: "accept" | "wrong";
  readonly task: string;
  readonly reason: string;
  readonly sha?: string;
};

/** What a comment asked for: nothing (not a command), a command, or a command we cannot read. */
export type ParsedComment =
  | { readonly kind: "none" }
  | { readonly kind: "command"; readonly command: Command; readonly line: string }
  | { readonly kind: "invalid"; readonly line: string; readonly error: string };

// `/word` at the start of a line, then a space or the end: "/path/to/file" is prose, not a command.
const COMMAND_LINE = /^\/([a-z][a-z-]*)(?:\s+(.*))?$/i;
// `@` and 7 to 40 hex digits (or 64, SHA-256): the commit a command is for.
const SHA_ARG = /^@([0-9a-f]{64}|[0-9a-f]{7,40})$/i;
// Task names reach a job spec and a shell-free argv on the runner; keep them to path characters.
const TASK_NAME = /^(?!.*\.\.)[\w][\w./-]{0,199}$/;

export const HELP_TEXT = [
  "**evokernel commands** (people with write access to this repository):",
  "",
  "| Command | What it does |",
  "| --- | --- |",
  "| `/bench [task …]` | verify the PR's kernels and time them against the base branch |",
  "| `/verify [task …]` | verify only, held-out shapes included |",
  "| `/optimize [task …] [--budget N] [--proposer llm\\|tuner]` | search for a faster kernel that still verifies and suggest it |",
  "| `/cancel` | stop this PR's running jobs |",
  '| `/evokernel accept <task> [@SHA] <reason>` | let the task\'s regression on the head commit pass: the check run concludes success with "accepted by @you: reason" (a new push is judged afresh) |',
  "| `/evokernel wrong <task> [@SHA] <reason>` | record that evokernel's verdict on the task's kernel is wrong, with the run's evidence: the night lists it, and the next verdict on the same kernel says so |",
  "| `/help` | this list |",
  "",
  "Without task names a command covers the tasks whose files this PR changes. A job runs on the",
  "PR's head commit at the time of the command; after a new push, comment again. `@SHA` after a",
  "command runs it only if that commit is exactly the head (a short SHA is resolved by GitHub and",
  "must give the head's full SHA); a pull request from a fork needs it: name the commit you",
  "reviewed, best in full (`/bench @<40 hex digits>`). Every command may also be written after",
  "`/evokernel` (`/evokernel bench`).",
].join("\n");

/** Reads the first command line of a comment (lines in quotes and code blocks are skipped). */
export function parseComment(body: string): ParsedComment {
  const line = firstCommandLine(body);
  if (line === undefined) return { kind: "none" };
  const match = COMMAND_LINE.exec(line);
  if (!match) return { kind: "none" };
  const name = (match[1] ?? "").toLowerCase();
  const args = (match[2] ?? "").split(/\s+/).filter((word) => word.length > 0);
  const result = parseCommand(name, args);
  if (typeof result === "string") return { kind: "invalid", line, error: result };
  return { kind: "command", command: result, line };
}

/**
 * The first command line in what GitHub shows as plain text: not inside an HTML comment (an
 * unclosed one hides the rest), a fenced code block (closed only by a fence of its own
 * character at least as long), an indented code block or a quote. A command someone quotes,
 * shows as code or hides is not a command.
 */
function firstCommandLine(body: string): string | undefined {
  const visible = body.replace(/<!--[\s\S]*?(?:-->|$)/g, "");
  let fence: { char: string; length: number } | undefined;
  let previousBlank = true;
  let inIndented = false;
  for (const raw of visible.split(/\r?\n/)) {
    const line = raw.trim();
    const opener = /^(`{3,}|~{3,})/.exec(line);
    const indented = /^(?: {4}|\t| {0,3}\t)/.test(raw) && line !== "";
    if (fence) {
      if (
        opener?.[1]?.[0] === fence.char &&
        opener[1].length >= fence.length &&
        /^[`~]+$/.test(line)
      )
        fence = undefined;
    } else if (indented && (previousBlank || inIndented)) {
      // An indented code block starts after a blank line (it cannot interrupt a paragraph).
      inIndented = true;
    } else if (opener?.[1] !== undefined && !indented) {
      fence = { char: opener[1][0] ?? "`", length: opener[1].length };
      inIndented = false;
    } else {
      if (line !== "") inIndented = false;
      if (!line.startsWith(">") && COMMAND_LINE.test(line)) return line;
    }
    previousBlank = line === "";
  }
  return undefined;
}

function parseCommand(name: string, args: readonly string[]): Command | string {
  switch (name) {
    case "help":
      return { name: "help" };
    case "evokernel": {
      const sub = (args[0] ?? "help").toLowerCase();
      if (sub === "accept" || sub === "wrong") return parseAnswer(sub, args.slice(1));
      if (sub === "evokernel")
        return "`/evokernel` takes a command, e.g. `/evokernel accept softmax <reason>`.";
      return parseCommand(sub, args.slice(1));
    }
    case "cancel":
      return args.length === 0 ? { name: "cancel" } : "`/cancel` takes no arguments.";
    case "verify":
    case "bench": {
      const named = takeSha(args);
      if (typeof named === "string") return named;
      const tasks = parseTasks(named.rest);
      if (typeof tasks === "string") return tasks;
      return { name, tasks, ...(named.sha === undefined ? {} : { sha: named.sha }) };
    }
    case "optimize": {
      const named = takeSha(args);
      if (typeof named === "string") return named;
      const parsed = parseOptimize(named.rest);
      if (typeof parsed === "string" || named.sha === undefined) return parsed;
      return { ...parsed, sha: named.sha } as Command;
    }
    default:
      return `\`/${name}\` is not a command I know.`;
  }
}

/** `accept|wrong <task> [@SHA] <reason…>`: the reason is the rest of the line. */
function parseAnswer(name: "accept" | "wrong", args: readonly string[]): Command | string {
  const usage = `\`/evokernel ${name} <task> <reason>\`, e.g. \`/evokernel ${name} softmax ${name === "accept" ? "trades speed for memory, see #12" : "the shapes it failed on are outside the contract"}\``;
  const task = args[0];
  if (task === undefined) return `name the task and give a reason: ${usage}.`;
  if (task.startsWith("@") || task.startsWith("--") || !TASK_NAME.test(task))
    return `${codeSpan(task)} is not a task name: ${usage}.`;
  let rest = args.slice(1);
  let sha: string | undefined;
  if (rest[0]?.startsWith("@") === true && SHA_ARG.test(rest[0])) {
    const named = takeSha([rest[0]]);
    if (typeof named === "string") return named;
    sha = named.sha;
    rest = rest.slice(1);
  }
  const reason = cleanReason(rest.join(" "));
  if (reason === "") return `give a reason after the task: ${usage}.`;
  return { name, task, reason, ...(sha === undefined ? {} : { sha }) };
}

/** The `@SHA` argument, if any, and the other arguments. */
function takeSha(
  args: readonly string[],
): { sha: string | undefined; rest: readonly string[] } | string {
  const named = args.filter((arg) => arg.startsWith("@"));
  if (named.length === 0) return { sha: undefined, rest: args };
  if (named.length > 1) return "name one commit (`@SHA`), not several.";
  const match = SHA_ARG.exec(named[0] ?? "");
  if (!match)
    return `${codeSpan(named[0] ?? "")} is not a commit: write @ and 7 to 40 hex digits, e.g. \`@1a2b3c4\`.`;
  return { sha: (match[1] ?? "").toLowerCase(), rest: args.filter((arg) => !arg.startsWith("@")) };
}

function parseTasks(args: readonly string[]): readonly string[] | string {
  for (const arg of args) {
    if (arg.startsWith("--")) return `${codeSpan(arg)} is not an option of this command.`;
    if (!TASK_NAME.test(arg))
      return `${codeSpan(arg)} is not a task name (a name or path under the repository).`;
  }
  return [...new Set(args)];
}

function parseOptimize(args: readonly string[]): Command | string {
  const tasks: string[] = [];
  let budget: number | undefined;
  let proposer: Proposer | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    const [flag, inline] = arg.startsWith("--") ? splitFlag(arg) : [undefined, undefined];
    if (flag === undefined) {
      tasks.push(arg);
      continue;
    }
    const value = inline ?? args[++i];
    if (value === undefined) return `\`--${flag}\` needs a value.`;
    if (flag === "budget") {
      const parsed = Number(value);
      if (!Number.isInteger(parsed) || parsed < 1 || parsed > 10_000)
        return `\`--budget ${value}\`: give a whole number of candidates from 1 to 10000.`;
      budget = parsed;
    } else if (flag === "proposer") {
      if (value !== "llm" && value !== "tuner")
        return `\`--proposer ${value}\`: use \`llm\` or \`tuner\`.`;
      proposer = value;
    } else {
      return `\`--${flag}\` is not an option of \`/optimize\` (use --budget N or --proposer llm|tuner).`;
    }
  }
  const checked = parseTasks(tasks);
  if (typeof checked === "string") return checked;
  return {
    name: "optimize",
    tasks: checked,
    ...(budget === undefined ? {} : { budget }),
    ...(proposer === undefined ? {} : { proposer }),
  };
}

function splitFlag(arg: string): [string, string | undefined] {
  const body = arg.slice(2);
  const eq = body.indexOf("=");
  return eq < 0 ? [body, undefined] : [body.slice(0, eq), body.slice(eq + 1)];
}

/** The same command on the same commit twice is one job: this key says when two are the same. */
export function commandKey(command: Command): string {
  switch (command.name) {
    case "optimize":
      return `optimize ${[...command.tasks].sort().join(",")} b=${command.budget ?? ""} p=${command.proposer ?? ""}`;
    case "verify":
    case "bench":
      return `${command.name} ${[...command.tasks].sort().join(",")}`;
    default:
      return command.name;
  }
}
