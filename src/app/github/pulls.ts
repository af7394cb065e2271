// Pull requests: reading one (its files, its commits), reviewing it, and the pull requests
// the app opens and updates itself (a suggestion, a nightly run's).
import { z } from "zod";
import { COMMENT_LIMIT, fitTitle, trimTo } from "../limits.js";
import { type AreaContext, fit } from "./common.js";

export interface PullFile {
  readonly filename: string;
  readonly previousFilename?: string;
  readonly status: string;
  /** The unified diff hunk text; absent for binary or very large files. */
  readonly patch?: string;
}

export interface Pull {
  readonly number: number;
  readonly headSha: string;
  readonly headRef: string;
  readonly baseSha: string;
  readonly baseRef: string;
  readonly draft: boolean;
  readonly state: string;
  /** The head lives in another repository: its code runs only on a maintainer's command. */
  readonly fork: boolean;
}

export interface ReviewComment {
  readonly path: string;
  readonly body: string;
  readonly line: number;
  readonly side: "LEFT" | "RIGHT";
  readonly start_line?: number;
  readonly start_side?: "LEFT" | "RIGHT";
}

export interface PullSummary {
  readonly number: number;
  readonly state: "open" | "closed";
  readonly merged: boolean;
  readonly url: string;
}

export interface PullsApi {
  getPull(pr: number): Promise<Pull>;
  listPullFiles(pr: number): Promise<PullFile[]>;
  /** The full SHAs of a pull request's commits, oldest first (GitHub lists at most 250). */
  listPullCommits(pr: number): Promise<string[]>;
  /** One review; with `key` (the job id), found among the app's own first and posted once. */
  createReview(
    pr: number,
    commitId: string,
    body: string,
    comments: readonly ReviewComment[],
    key?: string,
  ): Promise<void>;
  createPull(head: string, base: string, title: string, body: string): Promise<string>;
  /** Pull requests from `branch` of this repository, open and closed, newest first. */
  listPullsByHead(branch: string): Promise<PullSummary[]>;
  /** The head commits of the newest `limit` open pull requests (start-up recovery). */
  listOpenPullHeads(limit: number): Promise<{ number: number; headSha: string }[]>;
  /** Opens a pull request; returns its number and address. */
  openPull(head: string, base: string, title: string, body: string): Promise<PullSummary>;
  updatePull(pr: number, title: string, body: string): Promise<void>;
}

const pullSchema = z.object({
  number: z.number().int(),
  state: z.string(),
  draft: z.boolean().optional(),
  head: z.object({
    sha: z.string(),
    ref: z.string(),
    repo: z.object({ full_name: z.string() }).nullable(),
  }),
  base: z.object({ sha: z.string(), ref: z.string(), repo: z.object({ full_name: z.string() }) }),
});

const fileSchema = z.object({
  filename: z.string(),
  previous_filename: z.string().optional(),
  status: z.string(),
  patch: z.string().optional(),
});

const pullSummarySchema = z.object({
  number: z.number().int(),
  state: z.enum(["open", "closed"]),
  merged_at: z.string().nullable().optional(),
  html_url: z.string(),
});

function toPullSummary(pull: z.infer<typeof pullSummarySchema>): PullSummary {
  return {
    number: pull.number,
    state: pull.state,
    merged: typeof pull.merged_at === "string",
    url: pull.html_url,
  };
}

export function createPulls({ octokit, base, owner, identity, call }: AreaContext): PullsApi {
  return {
    async getPull(pr) {
      const { data } = await call(`get PR #${pr}`, () =>
        octokit.rest.pulls.get({ ...base, pull_number: pr }),
      );
      const pull = pullSchema.parse(data);
      return {
        number: pull.number,
        headSha: pull.head.sha,
        headRef: pull.head.ref,
        baseSha: pull.base.sha,
        baseRef: pull.base.ref,
        draft: pull.draft ?? false,
        state: pull.state,
        fork: pull.head.repo?.full_name !== pull.base.repo.full_name,
      };
    },
    async listPullFiles(pr) {
      const data = await call(`list the files of PR #${pr}`, () =>
        octokit.paginate(octokit.rest.pulls.listFiles, { ...base, pull_number: pr, per_page: 100 }),
      );
      return z
        .array(fileSchema)
        .parse(data)
        .map((file) => ({
          filename: file.filename,
          status: file.status,
          ...(file.previous_filename === undefined
            ? {}
            : { previousFilename: file.previous_filename }),
          ...(file.patch === undefined ? {} : { patch: file.patch }),
        }));
    },
    async listPullCommits(pr) {
      const shas: string[] = [];
      // GitHub lists at most 250 commits of a pull request: three pages of 100.
      for (let page = 1; page <= 3; page++) {
        const { data } = await call(`list the commits of PR #${pr}`, () =>
          octokit.rest.pulls.listCommits({ ...base, pull_number: pr, per_page: 100, page }),
        );
        const commits = z.array(z.object({ sha: z.string() })).parse(data);
        shas.push(...commits.map((commit) => commit.sha.toLowerCase()));
        if (commits.length < 100) break;
      }
      return shas;
    },
    async createReview(pr, commitId, body, comments, key) {
      const marker = key === undefined ? undefined : `<!-- evokernel:review ${key} -->`;
      if (marker !== undefined) {
        // A retried report, a redelivery or a second instance: the review is posted once.
        const login = await identity.login();
        const reviews = z
          .array(
            z.object({
              body: z.string().nullable().optional(),
              user: z.object({ login: z.string(), type: z.string() }).nullable(),
            }),
          )
          .parse(
            await call(`list the reviews of PR #${pr}`, () =>
              octokit.paginate(octokit.rest.pulls.listReviews, {
                ...base,
                pull_number: pr,
                per_page: 100,
              }),
            ),
          );
        const posted = reviews.some(
          (review) =>
            review.user?.type === "Bot" &&
            (login === undefined || review.user.login === login) &&
            review.body?.includes(marker) === true,
        );
        if (posted) return;
      }
      await call(`review PR #${pr}`, () =>
        octokit.rest.pulls.createReview({
          ...base,
          pull_number: pr,
          commit_id: commitId,
          event: "COMMENT",
          // The marker follows the body: the body is trimmed to leave room for it.
          body:
            marker === undefined
              ? fit(body)
              : `${trimTo(body, { ...COMMENT_LIMIT, max: COMMENT_LIMIT.max - marker.length - 2 })}\n\n${marker}`,
          comments: comments.map((comment) => ({ ...comment, body: fit(comment.body) })),
        }),
      );
    },
    async createPull(head, baseRef, title, body) {
      const { data } = await call(`open a PR from ${head}`, () =>
        octokit.rest.pulls.create({
          ...base,
          head,
          base: baseRef,
          title: fitTitle(title),
          body: fit(body),
        }),
      );
      return z.object({ html_url: z.string() }).parse(data).html_url;
    },
    async listPullsByHead(branch) {
      const { data } = await call(`list the PRs from ${branch}`, () =>
        octokit.rest.pulls.list({
          ...base,
          head: `${owner}:${branch}`,
          state: "all",
          sort: "created",
          direction: "desc",
          per_page: 20,
        }),
      );
      return z.array(pullSummarySchema).parse(data).map(toPullSummary);
    },
    async listOpenPullHeads(limit) {
      const { data } = await call("list the open PRs", () =>
        octokit.rest.pulls.list({
          ...base,
          state: "open",
          sort: "updated",
          direction: "desc",
          per_page: Math.min(100, limit),
        }),
      );
      return z
        .array(z.object({ number: z.number().int(), head: z.object({ sha: z.string() }) }))
        .parse(data)
        .map((pull) => ({ number: pull.number, headSha: pull.head.sha }));
    },
    async openPull(head, baseRef, title, body) {
      const { data } = await call(`open a PR from ${head}`, () =>
        octokit.rest.pulls.create({
          ...base,
          head,
          base: baseRef,
          title: fitTitle(title),
          body: fit(body),
        }),
      );
      return toPullSummary(pullSummarySchema.parse(data));
    },
    async updatePull(pr, title, body) {
      await call(`update PR #${pr}`, () =>
        octokit.rest.pulls.update({
          ...base,
          pull_number: pr,
          title: fitTitle(title),
          body: fit(body),
        }),
      );
    },
  };
}
