// Who runs a job when several ask for it at once: two app instances handling one delivery or
// one pull request head, two comments with the same command on one commit. GitHub decides,
// the only state the instances share, and the job's own check run is the claim: a contender
// creates its check run first (external_id: the job id and the claim key, what work on which
// commit), then lists the app's check runs of that name on the commit, and the lowest id
// among its rivals wins. GitHub's ids only grow, so a contender that sees itself lowest stays
// lowest whatever comes later: exactly one wins, however the requests interleave. A loser
// steps out of the job's check-run name (required checks take the latest run of a name, and
// the loser's is later) and concludes its run as skipped, saying who runs the job.
//
// Check runs rather than a ref created atomically (POST /git/refs, 422 when it exists, as the
// nightly window does): every job makes its check run anyway and its external_id names the
// job already, so the claim costs one list. A ref per job would be a branch per job (GitHub
// documents refs only under heads/ and tags/), a push that runs the repository's workflows,
// and one more thing to delete.
import { createHash } from "node:crypto";
import type { JobSpec } from "../../shared/job.js";
import type { AppState } from "../app-state.js";
import type { CheckRun, GitHub } from "../github.js";
import { checkName, parseExternalId } from "../job-registry.js";

/** What work a job does, as 8 hex digits: its pull request, kind, tasks, budget, proposer. */
export function claimKey(spec: JobSpec): string {
  const work = [
    spec.pr ?? "",
    spec.kind,
    [...spec.tasks].sort().join(","),
    spec.budget?.candidates ?? "",
    spec.proposer ?? "",
  ].join("\n");
  return createHash("sha256").update(work).digest("hex").slice(0, 8);
}

/** Who holds the job, as GitHub says now. */
export type Claim =
  | { readonly holder: "none" }
  | { readonly holder: "self" }
  /** `sameJob`: the same delivery or comment (a twin instance, a redelivery). */
  | { readonly holder: "rival"; readonly rival: CheckRun; readonly sameJob: boolean };

/**
 * The app's check runs of the job's name on its commit, and the lowest-numbered rival among
 * them and `own` (the contender's check run, once created): a run of the same job, or an
 * open one, not past its deadline, doing the same work.
 */
export async function readClaim(
  state: AppState,
  github: GitHub,
  spec: JobSpec,
  own?: number,
): Promise<Claim> {
  const key = claimKey(spec);
  const now = Date.now();
  let first: { run: CheckRun; sameJob: boolean } | undefined;
  for (const run of await ownCheckRuns(state, github, spec.sha, checkName(spec.kind))) {
    if (run.id === own) continue;
    const ids = parseExternalId(run.externalId);
    if (ids === undefined) continue;
    const sameJob = ids.jobId === spec.id;
    const sameWork =
      ids.claim === key &&
      run.status !== "completed" &&
      (ids.deadline === undefined || ids.deadline > now);
    if (!sameJob && !sameWork) continue;
    if (first === undefined || run.id < first.run.id) first = { run, sameJob };
  }
  // Our own run counts even where the list does not show it yet.
  if (first === undefined || (own !== undefined && own < first.run.id))
    return own === undefined ? { holder: "none" } : { holder: "self" };
  return { holder: "rival", rival: first.run, sameJob: first.sameJob };
}

/** The app's own check runs of one name on a commit, every one of them (not only the latest). */
export async function ownCheckRuns(
  state: AppState,
  github: GitHub,
  sha: string,
  name: string,
): Promise<CheckRun[]> {
  const runs = await github.listCheckRuns(sha, {
    checkName: name,
    ...(state.appId === undefined ? {} : { appId: state.appId }),
  });
  return runs.filter(
    (run) => run.name === name && (state.appId === undefined || run.appId === state.appId),
  );
}

/** The losing contender's check run: out of the job's name, skipped, naming the holder. */
export async function standDown(
  github: GitHub,
  spec: JobSpec,
  own: number,
  rival: CheckRun,
  sameJob: boolean,
): Promise<void> {
  const holder = parseExternalId(rival.externalId)?.jobId ?? spec.id;
  await github.updateCheckRun(own, {
    name: `${checkName(spec.kind)} (duplicate)`,
    status: "completed",
    conclusion: "skipped",
    output: sameJob
      ? {
          title: "Run by another instance",
          summary: `Another instance of evokernel started job \`${holder}\` for the same request at the same moment; its check run (${rival.id}) has the result.`,
        }
      : {
          title: "Already running",
          summary: `The same ${spec.kind} job is already running on ${spec.sha.slice(0, 7)} (job \`${holder}\`, check run ${rival.id}); its check run will have the result. Ask again once it has finished to run it again.`,
        },
  });
}
