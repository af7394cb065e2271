// The one narrow interface between the app and GitHub, for one repository: everything the app
// reads from or writes to GitHub goes through here. Responses are parsed with zod, and
// Octokit's errors become GitHubError (with the status and the original as cause), once, in
// github/common.ts. Each GitHub area is its own module under github/ with its own interface
// (PullsApi, ChecksApi, ActionsApi, GitDataApi, IssuesApi, RepositoryApi): a caller that needs
// one area takes that one; GitHub is all of them, built here.
import type { ProbotOctokit } from "probot";
import { z } from "zod";
import { createActions, type ActionsApi } from "./github/actions.js";
import { createChecks, type ChecksApi } from "./github/checks.js";
import {
  ANY_BOT,
  type AppIdentity,
  areaContext,
  type RepoRef,
  type RepoScope,
  webOf,
} from "./github/common.js";
import { createGitData, type GitDataApi } from "./github/git-data.js";
import { createIssues, type IssuesApi } from "./github/issues.js";
import { createPulls, type PullsApi } from "./github/pulls.js";
import { createRepository, type RepositoryApi } from "./github/repository.js";

export type { ActionsApi, DispatchedRun } from "./github/actions.js";
export type {
  CheckAction,
  CheckConclusion,
  CheckOutput,
  CheckRun,
  CheckRunFilter,
  CheckRunUpdate,
  ChecksApi,
} from "./github/checks.js";
export { GitHubError, webOf } from "./github/common.js";
export type { AppIdentity, RepoRef, RepoScope } from "./github/common.js";
export type { BranchFile, GitDataApi, TreeEntry } from "./github/git-data.js";
export type { IssuesApi, Reaction } from "./github/issues.js";
export type { Pull, PullFile, PullsApi, PullSummary, ReviewComment } from "./github/pulls.js";
export type { RepositoryApi } from "./github/repository.js";

/** What the app does to GitHub, for one repository: every area's methods. */
export type GitHub = RepoScope &
  PullsApi &
  ChecksApi &
  ActionsApi &
  GitDataApi &
  IssuesApi &
  RepositoryApi;

/** The GitHub interface over an installation's Octokit. */
export function createGitHub(
  octokit: ProbotOctokit,
  repo: RepoRef,
  identity: AppIdentity = ANY_BOT,
): GitHub {
  const context = areaContext(octokit, repo, identity);
  return {
    repo,
    web: webOf(String(octokit.request.endpoint.DEFAULTS.baseUrl)),
    ...createPulls(context),
    ...createChecks(context),
    ...createActions(context),
    ...createGitData(context),
    ...createIssues(context),
    ...createRepository(context),
  };
}

export interface InstalledRepo {
  readonly installationId: number;
  readonly repo: RepoRef;
  readonly defaultBranch: string;
}

/**
 * Every repository the App is installed on, through the App's own Octokit (`auth()` without
 * an installation) and each installation's: what the nightly tick walks.
 */
export async function listInstalledRepos(
  auth: (installationId?: number) => Promise<ProbotOctokit>,
): Promise<InstalledRepo[]> {
  const appOctokit = await auth();
  const installations = z
    .array(z.object({ id: z.number().int(), suspended_at: z.string().nullable().optional() }))
    .parse(await appOctokit.paginate(appOctokit.rest.apps.listInstallations, { per_page: 100 }));
  const repos: InstalledRepo[] = [];
  for (const installation of installations) {
    if (installation.suspended_at) continue;
    const octokit = await auth(installation.id);
    const listed = z
      .array(
        z.object({
          name: z.string(),
          owner: z.object({ login: z.string() }),
          default_branch: z.string(),
          archived: z.boolean().optional(),
        }),
      )
      .parse(
        await octokit.paginate(octokit.rest.apps.listReposAccessibleToInstallation, {
          per_page: 100,
        }),
      );
    for (const repo of listed) {
      if (repo.archived === true) continue;
      repos.push({
        installationId: installation.id,
        repo: { owner: repo.owner.login, repo: repo.name },
        defaultBranch: repo.default_branch,
      });
    }
  }
  return repos;
}
