// The one narrow interface between the app and GitHub, for one repository: everything the app
// reads from or writes to GitHub goes through here. Responses are parsed with zod, and
// Octokit's errors become GitHubError (with the status and the original as cause) here, once.
import type { ProbotOctokit } from "probot";
import { z } from "zod";
import { boundedChunks, checkAnnounced } from "./bounded-read.js";
import { ConfigFileError, fetchConfig } from "./config-file.js";
import { COMMENT_LIMIT, fitCheckOutput, fitTitle, trimTo } from "./limits.js";
import { acceptsRunDetails } from "./server-features.js";

/** A result artifact is small; its download (from blob storage) gets two minutes at most. */
const ARTIFACT_DOWNLOAD_TIMEOUT_MS = 120_000;

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

export interface ReviewComment {
  readonly path: string;
  readonly body: string;
  readonly line: number;
  readonly side: "LEFT" | "RIGHT";
  readonly start_line?: number;
  readonly start_side?: "LEFT" | "RIGHT";
}

export interface DispatchedRun {
  readonly runId?: number;
  readonly runUrl?: string;
}

export type Reaction = "+1" | "rocket" | "eyes" | "confused";

/** One entry of a git tree: mode 100644 a file, 100755 an executable, 120000 a symlink, 040000 a folder, 160000 a submodule. */
export interface TreeEntry {
  readonly name: string;
  readonly mode: string;
  readonly type: string;
  readonly sha: string;
  /** Bytes, for a blob. */
  readonly size?: number;
}

/**
 * A file of a commit writeBranchFiles makes: its text, a blob already in the repository, or
 * (`tree`) a whole folder already in it, carried over as it is.
 */
export type BranchFile =
  | { readonly path: string; readonly content: string }
  | { readonly path: string; readonly sha: string; readonly tree?: boolean };

/** What the app does to GitHub, for one repository. */
export interface GitHub {
  readonly repo: RepoRef;
  /**
   * Where people see the repository's files: https://github.com, or the Enterprise Server's
   * address (absent in stand-ins: links then name github.com).
   */
  readonly web?: string;
  getPull(pr: number): Promise<Pull>;
  listPullFiles(pr: number): Promise<PullFile[]>;
  permissionOf(login: string): Promise<string>;
  addReaction(commentId: number, content: Reaction): Promise<void>;
  createComment(issue: number, body: string): Promise<void>;
  /**
   * Edits the app's own comment that holds `marker` (by the app's login, not any bot's), or
   * creates one; duplicates from a race with another instance are deleted.
   */
  upsertComment(issue: number, marker: string, body: string): Promise<void>;
  createCheckRun(name: string, headSha: string, update: CheckRunUpdate): Promise<number>;
  updateCheckRun(id: number, update: CheckRunUpdate): Promise<void>;
  getCheckRun(id: number): Promise<CheckRun>;
  /**
   * The check runs of a commit; with `only`, those of one name (and one app), every one of
   * them: GitHub's default lists only the latest run of each name.
   */
  listCheckRuns(ref: string, only?: CheckRunFilter): Promise<CheckRun[]>;
  dispatchWorkflow(
    workflow: string,
    ref: string,
    inputs: Record<string, string>,
  ): Promise<DispatchedRun>;
  /**
   * The run a dispatch without run details started, by the job id in its run-name (listed
   * from `since`); undefined when it is not (yet) there.
   */
  findDispatchedRun(
    workflow: string,
    jobId: string,
    since: Date,
  ): Promise<DispatchedRun | undefined>;
  cancelWorkflowRun(runId: number): Promise<void>;
  /**
   * The named artifact's zip as a stream of bytes, or undefined when the run has none by that
   * name. Over `maxBytes` (as listed, as announced, or as it arrives): TooLargeError.
   */
  downloadArtifact(
    runId: number,
    name: string,
    maxBytes: number,
  ): Promise<AsyncIterable<Uint8Array> | undefined>;
  /** One review; with `key` (the job id), found among the app's own first and posted once. */
  createReview(
    pr: number,
    commitId: string,
    body: string,
    comments: readonly ReviewComment[],
    key?: string,
  ): Promise<void>;
  /** A commit of `files` on top of `parentSha`, pushed to `branch` (created or moved). */
  commitFiles(
    branch: string,
    parentSha: string,
    files: readonly { path: string; content: string }[],
    message: string,
  ): Promise<string>;
  /** One tree's entries, not recursive; a commit SHA reads its root tree. */
  readTree(treeish: string): Promise<TreeEntry[]>;
  /** A blob's content as UTF-8 text. */
  readBlob(sha: string): Promise<string>;
  /**
   * The full SHA GitHub resolves a commit name (a hex prefix) to, or undefined when it finds
   * no such commit or the prefix is ambiguous.
   */
  resolveCommit(name: string): Promise<string | undefined>;
  /** The full SHAs of a pull request's commits, oldest first (GitHub lists at most 250). */
  listPullCommits(pr: number): Promise<string[]>;
  /** The commit a branch points at, or undefined when there is no such branch. */
  branchHead(branch: string): Promise<string | undefined>;
  /** Moves a branch to `sha` only if that is a fast-forward; false when it is not. */
  fastForward(branch: string, sha: string): Promise<boolean>;
  createPull(head: string, base: string, title: string, body: string): Promise<string>;
  /** The repository's default branch. */
  defaultBranch(): Promise<string>;
  /**
   * `.github/evokernel.yml` from the default branch (null when there is none); a file the
   * user must fix throws ConfigFileError.
   */
  readConfig(): Promise<unknown>;
  /**
   * `path` in the commit `branch` points at (text undefined when the commit has no such
   * file), or undefined when there is no such branch.
   */
  readBranchFile(
    branch: string,
    path: string,
  ): Promise<{ commit: string; text: string | undefined } | undefined>;
  /**
   * A commit whose tree is exactly `files` (a text, or a blob already in the repository),
   * on `parent`, and `branch` moved to it only as a fast-forward from `parent` (created when
   * `parent` is undefined): a compare-and-swap. The commit, or undefined when another writer
   * moved or created the branch first (GitHub's 422).
   */
  writeBranchFiles(
    branch: string,
    parent: string | undefined,
    files: readonly BranchFile[],
    message: string,
  ): Promise<string | undefined>;
  /** Pull requests from `branch` of this repository, open and closed, newest first. */
  listPullsByHead(branch: string): Promise<PullSummary[]>;
  /** The head commits of the newest `limit` open pull requests (start-up recovery). */
  listOpenPullHeads(limit: number): Promise<{ number: number; headSha: string }[]>;
  /** Opens a pull request; returns its number and address. */
  openPull(head: string, base: string, title: string, body: string): Promise<PullSummary>;
  updatePull(pr: number, title: string, body: string): Promise<void>;
  /** Edits the open issue labelled `label` whose body holds `marker`, or opens one. */
  upsertIssue(marker: string, label: string, title: string, body: string): Promise<number>;
}

export interface PullSummary {
  readonly number: number;
  readonly state: "open" | "closed";
  readonly merged: boolean;
  readonly url: string;
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

const dispatchDetailsSchema = z.object({
  workflow_run_id: z.number().int().optional(),
  run_url: z.string().optional(),
  html_url: z.string().optional(),
});

const commentSchema = z.object({
  id: z.number().int(),
  body: z.string().nullable().optional(),
  user: z.object({ type: z.string(), login: z.string().optional() }).nullable(),
});

/**
 * Who the app is on GitHub: its bot's login (`<slug>[bot]`). What the app finds and edits
 * (its comment, its reviews) must be its own, not another bot's carrying the same marker.
 * Undefined only where no App is known (a plain token in a test): then any bot's counts.
 */
export interface AppIdentity {
  login(): Promise<string | undefined>;
}

const ANY_BOT: AppIdentity = { login: () => Promise.resolve(undefined) };

// Edits of one PR's comment in this process, one at a time (two jobs finishing together).
const commentLocks = new Map<string, Promise<unknown>>();

async function withLock<T>(key: string, work: () => Promise<T>): Promise<T> {
  const before = commentLocks.get(key) ?? Promise.resolve();
  const run = before.then(work, work);
  const settled = run.catch(() => undefined);
  commentLocks.set(key, settled);
  try {
    return await run;
  } finally {
    if (commentLocks.get(key) === settled) commentLocks.delete(key);
  }
}

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

/** The GitHub interface over an installation's Octokit. */
export function createGitHub(
  octokit: ProbotOctokit,
  repo: RepoRef,
  identity: AppIdentity = ANY_BOT,
): GitHub {
  const { owner, repo: name } = repo;
  const base = { owner, repo: name };

  async function call<T>(what: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      const status = statusOf(error);
      throw new GitHubError(`GitHub: ${what} failed${status ? ` (${status})` : ""}`, status, {
        cause: error,
      });
    }
  }

  async function branchHead(branch: string): Promise<string | undefined> {
    try {
      const { data } = await octokit.rest.git.getRef({ ...base, ref: `heads/${branch}` });
      return z.object({ object: z.object({ sha: z.string() }) }).parse(data).object.sha;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw new GitHubError(`GitHub: read ${branch} failed`, statusOf(error), { cause: error });
    }
  }

  return {
    repo,
    web: webOf(String(octokit.request.endpoint.DEFAULTS.baseUrl)),
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
    async permissionOf(login) {
      try {
        const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({
          ...base,
          username: login,
        });
        return z.object({ permission: z.string() }).parse(data).permission;
      } catch (error) {
        // Not a collaborator at all: GitHub answers 404.
        if (statusOf(error) === 404) return "none";
        throw new GitHubError(`GitHub: permission of ${login} failed`, statusOf(error), {
          cause: error,
        });
      }
    },
    async addReaction(commentId, content) {
      await call("add a reaction", () =>
        octokit.rest.reactions.createForIssueComment({ ...base, comment_id: commentId, content }),
      );
    },
    async createComment(issue, body) {
      await call(`comment on #${issue}`, () =>
        octokit.rest.issues.createComment({ ...base, issue_number: issue, body: fit(body) }),
      );
    },
    async upsertComment(issue, marker, text) {
      // The marker leads the body (the report's renderer puts it first): trimming keeps it.
      const body = fit(text);
      await withLock(`${owner}/${name}#${issue}`, async () => {
        const login = await identity.login();
        const ours = async () =>
          z
            .array(commentSchema)
            .parse(
              await call(`list the comments of #${issue}`, () =>
                octokit.paginate(octokit.rest.issues.listComments, {
                  ...base,
                  issue_number: issue,
                  per_page: 100,
                }),
              ),
            )
            .filter(
              (comment) =>
                comment.user?.type === "Bot" &&
                (login === undefined || comment.user.login === login) &&
                comment.body?.includes(marker) === true,
            )
            .sort((a, b) => a.id - b.id);
        const found = (await ours())[0];
        if (found) {
          await call("edit the comment", () =>
            octokit.rest.issues.updateComment({ ...base, comment_id: found.id, body }),
          );
          return;
        }
        await call(`comment on #${issue}`, () =>
          octokit.rest.issues.createComment({ ...base, issue_number: issue, body }),
        );
        // Another instance (or a retried request) may have created one at the same moment:
        // the oldest stays, the others go, so the PR keeps one comment.
        const all = await ours();
        for (const extra of all.slice(1)) {
          await call("delete a duplicate comment", () =>
            octokit.rest.issues.deleteComment({ ...base, comment_id: extra.id }),
          );
        }
        const kept = all[0];
        if (all.length > 1 && kept)
          await call("edit the comment", () =>
            octokit.rest.issues.updateComment({ ...base, comment_id: kept.id, body }),
          );
      });
    },
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
    async dispatchWorkflow(workflow, ref, inputs) {
      // return_run_details (2026-02-19) makes GitHub answer 200 with the run; only where the
      // server documents it (server-features.ts). Without it GitHub answers 204 and the run
      // is found by listing (findDispatchedRun), or later by its job id.
      const details = await acceptsRunDetails(
        String(octokit.request.endpoint.DEFAULTS.baseUrl),
        async () => (await octokit.request("GET /meta")).data,
      );
      const response = await call(`dispatch ${workflow}`, () =>
        octokit.request("POST /repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches", {
          ...base,
          workflow_id: workflow,
          ref,
          inputs,
          ...(details ? { return_run_details: true } : {}),
        }),
      );
      const parsed = dispatchDetailsSchema.safeParse(response.data);
      if (!parsed.success) return {};
      return {
        ...(parsed.data.workflow_run_id === undefined
          ? {}
          : { runId: parsed.data.workflow_run_id }),
        ...(parsed.data.html_url === undefined ? {} : { runUrl: parsed.data.html_url }),
      };
    },
    async findDispatchedRun(workflow, jobId, since) {
      const { data } = await call(`list the runs of ${workflow}`, () =>
        octokit.rest.actions.listWorkflowRuns({
          ...base,
          workflow_id: workflow,
          event: "workflow_dispatch",
          created: `>=${since.toISOString()}`,
          per_page: 30,
        }),
      );
      const runs = z
        .object({
          workflow_runs: z.array(
            z.object({
              id: z.number().int(),
              html_url: z.string(),
              display_title: z.string().optional(),
            }),
          ),
        })
        .parse(data).workflow_runs;
      // The workflow's run-name holds the job id (action/example-workflow.yml).
      const run = runs.find((item) => item.display_title?.split(/\s+/).includes(jobId) === true);
      return run === undefined ? undefined : { runId: run.id, runUrl: run.html_url };
    },
    async cancelWorkflowRun(runId) {
      try {
        await octokit.rest.actions.cancelWorkflowRun({ ...base, run_id: runId });
      } catch (error) {
        // 409: the run has finished already; nothing to cancel.
        if (statusOf(error) === 409) return;
        throw new GitHubError(`GitHub: cancel run ${runId} failed`, statusOf(error), {
          cause: error,
        });
      }
    },
    async downloadArtifact(runId, artifactName, maxBytes) {
      const { data } = await call(`list the artifacts of run ${runId}`, () =>
        octokit.rest.actions.listWorkflowRunArtifacts({
          ...base,
          run_id: runId,
          name: artifactName,
          per_page: 100,
        }),
      );
      const listed = z
        .object({
          artifacts: z.array(
            z.object({
              id: z.number().int(),
              name: z.string(),
              expired: z.boolean(),
              size_in_bytes: z.number().optional(),
            }),
          ),
        })
        .parse(data);
      const artifact = listed.artifacts.find((item) => item.name === artifactName && !item.expired);
      if (!artifact) return undefined;
      // The listed size first: an oversized artifact is refused without a byte downloaded.
      checkAnnounced(artifact.size_in_bytes, maxBytes, `artifact ${artifactName}`);
      const download = await call(`download artifact ${artifact.id}`, () =>
        octokit.request(
          "GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}",
          {
            ...base,
            artifact_id: artifact.id,
            archive_format: "zip",
            // The body as a stream (Octokit would buffer it whole), read under the cap below.
            request: {
              parseSuccessResponseBody: false,
              signal: AbortSignal.timeout(ARTIFACT_DOWNLOAD_TIMEOUT_MS),
            },
          },
        ),
      );
      const body: unknown = download.data;
      if (!(body instanceof ReadableStream))
        throw new GitHubError(
          `GitHub: artifact ${artifact.id} came back without a body`,
          undefined,
          {
            cause: undefined,
          },
        );
      try {
        checkAnnounced(download.headers["content-length"], maxBytes, `artifact ${artifactName}`);
      } catch (error) {
        await body.cancel().catch(() => undefined);
        throw error;
      }
      return boundedChunks(
        body as ReadableStream<Uint8Array>,
        maxBytes,
        `artifact ${artifactName}`,
      );
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
    async commitFiles(branch, parentSha, files, message) {
      const parent = await call("read the parent commit", () =>
        octokit.rest.git.getCommit({ ...base, commit_sha: parentSha }),
      );
      const baseTree = z.object({ tree: z.object({ sha: z.string() }) }).parse(parent.data)
        .tree.sha;
      const tree: { path: string; mode: "100644"; type: "blob"; sha: string }[] = [];
      for (const file of files) {
        const blob = await call(`create a blob for ${file.path}`, () =>
          octokit.rest.git.createBlob({ ...base, content: file.content, encoding: "utf-8" }),
        );
        tree.push({
          path: file.path,
          mode: "100644" as const,
          type: "blob" as const,
          sha: shaOf(blob.data),
        });
      }
      const newTree = await call("create a tree", () =>
        octokit.rest.git.createTree({ ...base, base_tree: baseTree, tree }),
      );
      const commit = await call("create a commit", () =>
        octokit.rest.git.createCommit({
          ...base,
          message,
          tree: shaOf(newTree.data),
          parents: [parentSha],
        }),
      );
      const commitSha = shaOf(commit.data);
      try {
        await octokit.rest.git.createRef({ ...base, ref: `refs/heads/${branch}`, sha: commitSha });
      } catch (error) {
        // 422: the branch exists (an earlier job on this commit): move it.
        if (statusOf(error) !== 422)
          throw new GitHubError(`GitHub: create ${branch} failed`, statusOf(error), {
            cause: error,
          });
        await call(`move ${branch}`, () =>
          octokit.rest.git.updateRef({
            ...base,
            ref: `heads/${branch}`,
            sha: commitSha,
            force: true,
          }),
        );
      }
      return commitSha;
    },
    async readTree(treeish) {
      const { data } = await call(`read the tree ${treeish}`, () =>
        octokit.rest.git.getTree({ ...base, tree_sha: treeish }),
      );
      return z
        .object({
          tree: z.array(
            z.object({
              path: z.string(),
              mode: z.string(),
              type: z.string(),
              sha: z.string(),
              size: z.number().int().nonnegative().optional(),
            }),
          ),
        })
        .parse(data)
        .tree.map((entry) => ({
          name: entry.path,
          mode: entry.mode,
          type: entry.type,
          sha: entry.sha,
          ...(entry.size === undefined ? {} : { size: entry.size }),
        }));
    },
    async readBlob(sha) {
      const { data } = await call(`read the blob ${sha}`, () =>
        octokit.rest.git.getBlob({ ...base, file_sha: sha }),
      );
      const blob = z.object({ content: z.string(), encoding: z.string() }).parse(data);
      if (blob.encoding !== "base64" && blob.encoding !== "utf-8")
        throw new GitHubError(`GitHub: blob ${sha} came in ${blob.encoding}`, undefined, {
          cause: undefined,
        });
      return blob.encoding === "base64"
        ? Buffer.from(blob.content, "base64").toString("utf8")
        : blob.content;
    },
    async resolveCommit(name) {
      try {
        // The sha media type answers the full SHA as plain text, without the commit's diff.
        const { data } = await octokit.rest.repos.getCommit({
          ...base,
          ref: name,
          mediaType: { format: "sha" },
        });
        const sha = z.string().trim().parse(data).toLowerCase();
        return /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(sha) ? sha : undefined;
      } catch (error) {
        // 404: no such commit; 422: not a commit name GitHub can resolve (ambiguous, say).
        const status = statusOf(error);
        if (status === 404 || status === 422) return undefined;
        throw new GitHubError(`GitHub: resolve commit ${name} failed`, status, { cause: error });
      }
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
    branchHead,
    async fastForward(branch, sha) {
      try {
        await octokit.rest.git.updateRef({ ...base, ref: `heads/${branch}`, sha, force: false });
        return true;
      } catch (error) {
        if (statusOf(error) === 422) return false;
        throw new GitHubError(`GitHub: move ${branch} failed`, statusOf(error), { cause: error });
      }
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
    async defaultBranch() {
      const { data } = await call("read the repository", () => octokit.rest.repos.get(base));
      return z.object({ default_branch: z.string() }).parse(data).default_branch;
    },
    async readConfig() {
      // The default branch, the org's .github repository, _extends; bounded (config-file.ts).
      try {
        const config = await fetchConfig(octokit, repo);
        // An empty file, like a missing one, reads as "not configured" (the plugin's rule).
        return config === null || Object.keys(config).length === 0 ? null : config;
      } catch (error) {
        if (error instanceof ConfigFileError) throw error;
        throw new GitHubError("GitHub: read .github/evokernel.yml failed", statusOf(error), {
          cause: error,
        });
      }
    },
    async readBranchFile(branch, path) {
      const commit = await branchHead(branch);
      if (commit === undefined) return undefined;
      try {
        const { data } = await octokit.rest.repos.getContent({ ...base, path, ref: commit });
        const file = z.object({ content: z.string(), encoding: z.literal("base64") }).parse(data);
        return { commit, text: Buffer.from(file.content, "base64").toString("utf8") };
      } catch (error) {
        if (statusOf(error) === 404) return { commit, text: undefined };
        throw new GitHubError(`GitHub: read ${path} on ${branch} failed`, statusOf(error), {
          cause: error,
        });
      }
    },
    async writeBranchFiles(branch, parent, files, message) {
      const tree = await call("create a tree", () =>
        octokit.rest.git.createTree({
          ...base,
          tree: files.map((file) =>
            "sha" in file
              ? file.tree === true
                ? { path: file.path, mode: "040000" as const, type: "tree" as const, sha: file.sha }
                : { path: file.path, mode: "100644" as const, type: "blob" as const, sha: file.sha }
              : {
                  path: file.path,
                  mode: "100644" as const,
                  type: "blob" as const,
                  content: file.content,
                },
          ),
        }),
      );
      const commit = await call("create a commit", () =>
        octokit.rest.git.createCommit({
          ...base,
          message,
          tree: shaOf(tree.data),
          parents: parent === undefined ? [] : [parent],
        }),
      );
      const sha = shaOf(commit.data);
      try {
        if (parent === undefined)
          await octokit.rest.git.createRef({ ...base, ref: `refs/heads/${branch}`, sha });
        // Not forced: a writer that moved the branch in between makes this fail, not vanish.
        else
          await octokit.rest.git.updateRef({ ...base, ref: `heads/${branch}`, sha, force: false });
      } catch (error) {
        if (statusOf(error) === 422) return undefined;
        throw new GitHubError(`GitHub: move ${branch} failed`, statusOf(error), { cause: error });
      }
      return sha;
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
    async upsertIssue(marker, label, title, body) {
      const { data } = await call(`list the issues labelled ${label}`, () =>
        octokit.rest.issues.listForRepo({ ...base, labels: label, state: "open", per_page: 100 }),
      );
      const ours = z
        .array(z.object({ number: z.number().int(), body: z.string().nullable().optional() }))
        .parse(data)
        .find((issue) => issue.body?.includes(marker) === true);
      if (ours) {
        await call(`update issue #${ours.number}`, () =>
          octokit.rest.issues.update({
            ...base,
            issue_number: ours.number,
            title: fitTitle(title),
            body: fit(body),
          }),
        );
        return ours.number;
      }
      const created = await call("open an issue", () =>
        octokit.rest.issues.create({
          ...base,
          title: fitTitle(title),
          body: fit(body),
          labels: [label],
        }),
      );
      return z.object({ number: z.number().int() }).parse(created.data).number;
    },
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

/**
 * Every comment, review, pull request and issue body the app sends, inside GitHub's 65,536
 * characters (a longer one is refused with 422), however its caller built it.
 */
function fit(body: string): string {
  return trimTo(body, COMMENT_LIMIT);
}

function shaOf(data: unknown): string {
  return z.object({ sha: z.string() }).parse(data).sha;
}

function statusOf(error: unknown): number | undefined {
  if (typeof error !== "object" || error === null || !("status" in error)) return undefined;
  return typeof error.status === "number" ? error.status : undefined;
}
