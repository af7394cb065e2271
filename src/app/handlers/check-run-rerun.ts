// check_run rerequested: "Re-run" on one of evokernel's check runs starts the same kind of
// job again on that commit, if it is still the PR's head. A re-run is a person's click, so
// it needs write access like a command, and it approves that commit (a fork's included).
import { jobKindSchema } from "../../shared/job.js";
import type { AppState } from "../app-state.js";
import type { GitHub } from "../github.js";
import { buildJobSpec } from "../job-spec.js";
import { parseExternalId } from "../job-registry.js";
import type { loadConfig } from "../load-config.js";
import { planTasks } from "../planner.js";
import { startJob } from "../jobs/start.js";
import type { CheckRunEvent } from "./payloads.js";

const WRITERS = new Set(["admin", "write", "maintain"]);

export async function handleRerun(
  state: AppState,
  github: GitHub,
  event: CheckRunEvent,
  getConfig: () => ReturnType<typeof loadConfig>,
): Promise<void> {
  const ids = parseExternalId(event.check_run.external_id);
  const [kindText, prText] = ids?.jobId.split("-") ?? [];
  const kind = jobKindSchema.safeParse(kindText);
  const pr = Number(prText);
  if (!kind.success || !Number.isInteger(pr)) return;
  const login = event.sender.login;
  if (!WRITERS.has(await github.permissionOf(login))) {
    await github.createComment(
      pr,
      `@${login} re-running evokernel runs code on GPU machines, so it needs write access to this repository; ask a maintainer to re-run it.`,
    );
    return;
  }
  const pull = await github.getPull(pr);
  // An older commit's check run: its result would describe code the PR no longer has.
  if (pull.state !== "open" || pull.headSha !== event.check_run.head_sha) return;
  const config = await getConfig();
  if (!config.ok) return;
  const plan = planTasks(config.config, await github.listPullFiles(pr));
  if (plan.kind === "none") return;
  await startJob(state, {
    github,
    spec: buildJobSpec({
      kind: kind.data,
      repo: github.repo,
      pull,
      config: config.config,
      tasks: plan.kind === "tasks" ? plan.tasks : [],
      requestedBy: login,
    }),
    config: config.config,
    installationId: event.installation.id,
    defaultBranch: event.repository.default_branch,
    recheckHead: true,
  });
}
