// What a command approves (issue 16.5): exactly one commit, by its full SHA. A command may
// name the commit short (`/bench @1a2b3c4`); GitHub resolves that name, and the full SHA it
// gives must be the PR's head, character for character. A prefix is never compared with the
// head: a commit sharing the head's first hex digits can be ground in minutes and pushed
// after a maintainer read the other one. Nor does a refusal of a short name offer the head's
// SHA to run (issue 34.5): it lists what the name matches and asks for the reviewed one.
import type { Command } from "./comment-commands.js";
import type { GitHub, Pull } from "./github.js";

const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/** The command that runs a fork's head, with the full SHA a maintainer can copy. */
export function approvalCommand(name: string, headSha: string): string {
  return `\`/${name} @${headSha}\``;
}

/**
 * Why a job command may not run on the PR's head, or undefined when it may: a fork's PR runs
 * only a commit its command names (the one the maintainer read), and a named commit must
 * resolve, through GitHub, to exactly the head.
 */
export async function namedCommitProblem(
  github: Pick<GitHub, "resolveCommit" | "listPullCommits">,
  command: Command,
  pull: Pick<Pull, "number" | "headSha" | "fork">,
): Promise<string | undefined> {
  if (command.name !== "optimize" && command.name !== "verify" && command.name !== "bench")
    return undefined;
  const head = pull.headSha.toLowerCase();
  const again = approvalCommand(command.name, head);
  if (command.sha === undefined) {
    if (!pull.fork) return undefined;
    return (
      `this pull request comes from a fork, so a command runs only the commit it names, the one you reviewed: ` +
      `the head is \`${head}\` now; to run it, comment ${again}.`
    );
  }
  const named = command.sha.toLowerCase();
  if (FULL_SHA.test(named)) {
    if (named === head) return undefined;
    return (
      `the head of this pull request is \`${head}\` now, not \`${named}\`: nothing ran. ` +
      `Review the new commits, then comment ${again}.`
    );
  }
  const full = await github.resolveCommit(named);
  if (full === head) return undefined;
  // A short name that is not the head: where a force-push ground a twin of the reviewed
  // commit's prefix, the head is the attacker's. The reply lists what the name matches and
  // asks for the full SHA the maintainer read; it never offers the head as the thing to run.
  const matches = (await github.listPullCommits(pull.number).catch(() => undefined))?.filter(
    (sha) => sha.startsWith(named),
  );
  return refusedShortName(command.name, named, full, matches);
}

/**
 * The reply to a short commit name that did not resolve to the head: what GitHub matched it
 * to (one commit, or none or several), which of the PR's commits begin with it, and a request
 * for the full SHA of the commit the maintainer reviewed. No SHA in it is offered to run.
 */
export function refusedShortName(
  name: string,
  named: string,
  resolved: string | undefined,
  prCommits: readonly string[] | undefined,
): string {
  const matched =
    resolved === undefined
      ? `GitHub matches \`${named}\` to no single commit (it names none, or several share those digits)`
      : `GitHub matches \`${named}\` to \`${resolved}\`, which is not this pull request's head`;
  const listed =
    prCommits === undefined
      ? ""
      : prCommits.length === 0
        ? ` None of this pull request's commits begins with \`${named}\`.`
        : ` This pull request's commits that begin with \`${named}\`: ${prCommits.map((sha) => `\`${sha}\``).join(", ")}${prCommits.length > 1 ? " (several: a short name cannot tell them apart)" : ""}.`;
  return (
    `${matched}: nothing ran.${listed} ` +
    `A short name can match a commit pushed after you read the code, so name in full the commit you reviewed: ` +
    `copy its SHA from the commit you read (not from this reply) and comment \`/${name} @<full SHA>\`.`
  );
}
