// check_run requested_action: the "Apply" button of a job whose evolved kernel could not go
// into suggestions. The branch evokernel/<pr>-<sha7> is fast-forwarded onto the PR's branch
// when the PR still sits on that commit in this repository; otherwise a PR into the PR's
// branch is opened. Only people with write access may press it.
import type { AppState } from "../app-state.js";
import type { GitHub } from "../github.js";
import { APPLY_ACTION, parseExternalId, suggestionBranch } from "../job-registry.js";
import type { CheckRunEvent } from "./payloads.js";
import { codeSpan } from "../../report/escape.js";

const WRITERS = new Set(["admin", "write", "maintain"]);

export async function handleCheckRun(
  state: AppState,
  github: GitHub,
  event: CheckRunEvent,
): Promise<void> {
  if (
    event.action !== "requested_action" ||
    event.requested_action?.identifier !== APPLY_ACTION.identifier
  )
    return;
  const ids = parseExternalId(event.check_run.external_id);
  const pr = ids ? Number(ids.jobId.split("-")[1]) : NaN;
  if (!ids || !Number.isInteger(pr)) return;
  if (!state.seen.first(`apply:${github.repo.owner}/${github.repo.repo}:${event.check_run.id}`))
    return;
  const sha = event.check_run.head_sha;
  const login = event.sender.login;
  if (!WRITERS.has(await github.permissionOf(login))) {
    state.seen.forget(`apply:${github.repo.owner}/${github.repo.repo}:${event.check_run.id}`);
    await github.createComment(
      pr,
      `@${login} applying evokernel's kernel pushes to this PR's branch, which needs write access; ask a maintainer to press **Apply**.`,
    );
    return;
  }
  const branch = suggestionBranch(pr, sha);
  const pull = await github.getPull(pr);
  if (pull.fork) {
    await github.createComment(
      pr,
      `@${login} this PR's branch is in a fork, where evokernel cannot push, and a fork's code never becomes a branch of this repository: the evolved kernel's diff is in evokernel's comment; apply it to the fork's branch.`,
    );
    return;
  }
  const head = await github.branchHead(branch);
  if (
    head !== undefined &&
    pull.headSha === sha &&
    (await github.fastForward(pull.headRef, head))
  ) {
    await github.createComment(
      pr,
      `@${login} applied the evolved kernel from ${codeSpan(branch)} to ${codeSpan(pull.headRef)}; a new run checks it.`,
    );
    return;
  }
  if (head === undefined) {
    await github.createComment(
      pr,
      `@${login} the branch ${codeSpan(branch)} is gone; comment \`/optimize\` to evolve the kernel again.`,
    );
    return;
  }
  const url = await github.createPull(
    branch,
    pull.headRef,
    `evokernel: evolved kernel for #${pr}`,
    `The evolved kernel from evokernel's run on ${sha.slice(0, 7)}. ${codeSpan(pull.headRef)} has moved since, so it comes as a PR into it: merge it, or close it.`,
  );
  await github.createComment(
    pr,
    `@${login} ${codeSpan(pull.headRef)} has moved since the run, so the evolved kernel comes as a PR into it: ${url}`,
  );
}
