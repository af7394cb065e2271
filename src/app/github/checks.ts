// The check runs the app writes and reads on a commit (GitHub's Checks API): each job's run,
// its answers' buttons, and the listing a rerun or an answer finds its run by.
import { z } from "zod";
import { fitCheckOutput } from "../limits.js";
import type { AreaContext } from "./common.js";

export type CheckConclusion =
  "success" | "failure" | "neutral" | "cancelled" | "action_required" | "timed_out" | "skipped";

export interface CheckOutput {
  readonly title: string;
  readonly summary: string;
  readonly text?: string;
}

export interface CheckAction {
  readonly label: string;
  readonly description: string;
  readonly identifier: string;
}

export interface CheckRunUpdate {
  /** A new name (an update only): a twin's check run steps out of the job's name. */
  readonly name?: string;
  readonly status?: "queued" | "in_progress" | "completed";
  readonly conclusion?: CheckConclusion;
  readonly detailsUrl?: string;
  readonly externalId?: string;
  readonly output?: CheckOutput;
  readonly actions?: readonly CheckAction[];
}

export interface CheckRun {
  readonly id: number;
  readonly name: string;
  readonly headSha: string;
  readonly status: string;
  readonly externalId: string | null;
  readonly detailsUrl: string | null;
  readonly appId: number | null;
  /** Where GitHub shows it (absent where the answer did not say). */
  readonly htmlUrl?: string | null;
  readonly conclusion?: string | null;
  /** Its output's title and summary as last written (an answer rewrites them). */
  readonly output?: { readonly title: string | null; readonly summary: string | null };
}

export interface CheckRunFilter {
  readonly checkName: string;
  readonly appId?: number;
}

export interface ChecksApi {
  createCheckRun(name: string, headSha: string, update: CheckRunUpdate): Promise<number>;
  updateCheckRun(id: number, update: CheckRunUpdate): Promise<void>;
  getCheckRun(id: number): Promise<CheckRun>;
  /**
   * The check runs of a commit; with `only`, those of one name (and one app), every one of
   * them: GitHub's default lists only the latest run of each name.
   */
  listCheckRuns(ref: string, only?: CheckRunFilter): Promise<CheckRun[]>;
}

const checkRunSchema = z.object({
  id: z.number().int(),
  name: z.string(),
  head_sha: z.string(),
  status: z.string(),
  external_id: z.string().nullable().optional(),
  details_url: z.string().nullable().optional(),
  html_url: z.string().nullable().optional(),
  conclusion: z.string().nullable().optional(),
  output: z
    .object({ title: z.string().nullable().optional(), summary: z.string().nullable().optional() })
    .nullable()
    .optional(),
  app: z.object({ id: z.number().int() }).nullable().optional(),
});

export function createChecks({ octokit, base, call }: AreaContext): ChecksApi {
  return {
    async createCheckRun(checkName, headSha, update) {
      const { data } = await call("create a check run", () =>
        octokit.rest.checks.create({
          ...base,
          name: checkName,
          head_sha: headSha,
          ...checkFields(update),
        }),
      );
      return z.object({ id: z.number().int() }).parse(data).id;
    },
    async updateCheckRun(id, update) {
      await call("update a check run", () =>
        octokit.rest.checks.update({ ...base, check_run_id: id, ...checkFields(update) }),
      );
    },
    async getCheckRun(id) {
      const { data } = await call("get a check run", () =>
        octokit.rest.checks.get({ ...base, check_run_id: id }),
      );
      return toCheckRun(checkRunSchema.parse(data));
    },
    async listCheckRuns(ref, only) {
      const filter =
        only === undefined
          ? {}
          : {
              check_name: only.checkName,
              filter: "all" as const,
              ...(only.appId === undefined ? {} : { app_id: only.appId }),
            };
      const runs = await call(`list the check runs of ${ref}`, () =>
        octokit.paginate(octokit.rest.checks.listForRef, {
          ...base,
          ref,
          ...filter,
          per_page: 100,
        }),
      );
      return z.array(checkRunSchema).parse(runs).map(toCheckRun);
    },
  };
}

function checkFields(update: CheckRunUpdate) {
  return {
    ...(update.name === undefined ? {} : { name: update.name }),
    ...(update.status === undefined ? {} : { status: update.status }),
    ...(update.conclusion === undefined ? {} : { conclusion: update.conclusion }),
    ...(update.detailsUrl === undefined ? {} : { details_url: update.detailsUrl }),
    ...(update.externalId === undefined ? {} : { external_id: update.externalId }),
    // Every check-run output goes through here: trimmed to GitHub's byte limits.
    ...(update.output === undefined ? {} : { output: fitCheckOutput({ ...update.output }) }),
    ...(update.actions === undefined
      ? {}
      : { actions: update.actions.map((action) => ({ ...action })) }),
  };
}

function toCheckRun(run: z.infer<typeof checkRunSchema>): CheckRun {
  return {
    id: run.id,
    name: run.name,
    headSha: run.head_sha,
    status: run.status,
    externalId: run.external_id ?? null,
    detailsUrl: run.details_url ?? null,
    appId: run.app?.id ?? null,
    ...(run.html_url === undefined ? {} : { htmlUrl: run.html_url }),
    ...(run.conclusion === undefined ? {} : { conclusion: run.conclusion }),
    ...(run.output == null
      ? {}
      : { output: { title: run.output.title ?? null, summary: run.output.summary ?? null } }),
  };
}
