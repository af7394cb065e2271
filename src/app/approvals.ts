// What a command approves (issue 16.5): exactly one commit, by its full SHA. A command may
// name the commit short (`/bench @1a2b3c4`); GitHub resolves that name, and the full SHA it
// gives must be the PR's head, character for character. A prefix is never compared with the
// head: a commit sharing the head's first hex digits can be ground in minutes and pushed
// after a maintainer read the other one.
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
  github: Pick<GitHub, "resolveCommit">,
  command: Command,
  pull: Pick<Pull, "headSha" | "fork">,
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
  const full = FULL_SHA.test(named) ? named : await github.resolveCommit(named);
  if (full === undefined)
    return (
      `GitHub knows no single commit named \`${named}\` (none, or several share those digits): nothing ran. ` +
      `Name the commit in full: ${again} if you reviewed the head.`
    );
  if (full === head) return undefined;
  return (
    `the head of this pull request is \`${head}\` now, not \`${full}\`: nothing ran. ` +
    `Review the new commits, then comment ${again}.`
  );
}
