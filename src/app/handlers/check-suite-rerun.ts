// check_suite rerequested: "Re-run all checks" on a commit. GitHub sends it for the suite of
// the app's own check runs on that commit; each evokernel job that ran there (one check run
// per job, named by its external_id) is re-run as its own Re-run button would
// (check-run-rerun.ts: write access, the commit still the PR's head).
import type { AppState } from "../app-state.js";
import type { GitHub } from "../github.js";
import { CHECK_NAME_PREFIX, parseExternalId } from "../job-registry.js";
import type { loadConfig } from "../load-config.js";
import { handleRerun } from "./check-run-rerun.js";
import type { CheckSuiteEvent } from "./payloads.js";

export async function handleSuiteRerun(
  state: AppState,
  github: GitHub,
  event: CheckSuiteEvent,
  getConfig: () => ReturnType<typeof loadConfig>,
): Promise<void> {
  const sha = event.check_suite.head_sha;
  const runs = (await github.listCheckRuns(sha)).filter(
    (run) => run.name.startsWith(CHECK_NAME_PREFIX) && run.headSha === sha,
  );
  // One re-run per kind of job and PR: superseded or repeated runs of it are one job again.
  const seen = new Set<string>();
  for (const run of runs) {
    const jobId = parseExternalId(run.externalId)?.jobId;
    const key = jobId?.split("-").slice(0, 2).join("-");
    if (key === undefined || seen.has(key)) continue;
    seen.add(key);
    await handleRerun(
      state,
      github,
      {
        action: "rerequested",
        installation: event.installation,
        repository: event.repository,
        sender: event.sender,
        check_run: { id: run.id, name: run.name, head_sha: sha, external_id: run.externalId },
      },
      getConfig,
    );
  }
}
