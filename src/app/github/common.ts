// What every GitHub area (pulls.ts, checks.ts, actions.ts, git-data.ts, issues.ts,
// repository.ts) shares: the repository a GitHub object speaks for, the one place Octokit's
// errors become GitHubError, and the small parsers and trims each area's requests use.
// ../github.ts composes the areas into the one GitHub interface.
import type { ProbotOctokit } from "probot";
import { z } from "zod";
import { COMMENT_LIMIT, trimTo } from "../limits.js";

export class GitHubError extends Error {
  override readonly name = "GitHubError";
  constructor(
    message: string,
    readonly status: number | undefined,
    options: { cause: unknown },
  ) {
    super(message, options);
  }
}

export interface RepoRef {
  readonly owner: string;
  readonly repo: string;
}

/** Which repository a GitHub object speaks for, and where people see it. */
export interface RepoScope {
  readonly repo: RepoRef;
  /**
   * Where people see the repository's files: https://github.com, or the Enterprise Server's
   * address (absent in stand-ins: links then name github.com).
   */
  readonly web?: string;
}

/**
 * Who the app is on GitHub: its bot's login (`<slug>[bot]`). What the app finds and edits
 * (its comment, its reviews) must be its own, not another bot's carrying the same marker.
 * Undefined only where no App is known (a plain token in a test): then any bot's counts.
 */
export interface AppIdentity {
  login(): Promise<string | undefined>;
}

export const ANY_BOT: AppIdentity = { login: () => Promise.resolve(undefined) };

/** What an area's factory is given: one installation's Octokit, for one repository. */
export interface AreaContext {
  readonly octokit: ProbotOctokit;
  readonly repo: RepoRef;
  /** The owner and name every request carries. */
  readonly base: { readonly owner: string; readonly repo: string };
  readonly owner: string;
  readonly name: string;
  readonly identity: AppIdentity;
  /** Runs one request; its failure becomes GitHubError("GitHub: <what> failed (<status>)"). */
  readonly call: <T>(what: string, request: () => Promise<T>) => Promise<T>;
}

export function areaContext(
  octokit: ProbotOctokit,
  repo: RepoRef,
  identity: AppIdentity,
): AreaContext {
  const { owner, repo: name } = repo;
  return {
    octokit,
    repo,
    base: { owner, repo: name },
    owner,
    name,
    identity,
    async call<T>(what: string, request: () => Promise<T>): Promise<T> {
      try {
        return await request();
      } catch (error) {
        const status = statusOf(error);
        throw new GitHubError(`GitHub: ${what} failed${status ? ` (${status})` : ""}`, status, {
          cause: error,
        });
      }
    },
  };
}

/** The web address of the GitHub whose REST API is at `api`: api.github.com, or <host>/api/v3. */
export function webOf(api: string): string {
  let url: URL;
  try {
    url = new URL(api);
  } catch {
    return "https://github.com";
  }
  if (url.hostname === "api.github.com") return "https://github.com";
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/api\/v3\/?$/, "").replace(/\/+$/, "")}`;
}

/**
 * Every comment, review, pull request and issue body the app sends, inside GitHub's 65,536
 * characters (a longer one is refused with 422), however its caller built it.
 */
export function fit(body: string): string {
  return trimTo(body, COMMENT_LIMIT);
}

export function shaOf(data: unknown): string {
  return z.object({ sha: z.string() }).parse(data).sha;
}

export function statusOf(error: unknown): number | undefined {
  if (typeof error !== "object" || error === null || !("status" in error)) return undefined;
  return typeof error.status === "number" ? error.status : undefined;
}
