// The webhook payload fields the handlers rely on, as zod schemas: a payload is parsed here,
// never trusted by its TypeScript type.
import { z } from "zod";

const repository = z.object({
  name: z.string(),
  owner: z.object({ login: z.string() }),
  full_name: z.string(),
  default_branch: z.string(),
});

const installation = z.object({ id: z.number().int() });

export const pullRequestEventSchema = z.object({
  action: z.string(),
  installation,
  repository,
  /** synchronize only: the head before the push. */
  before: z.string().optional(),
  sender: z.object({ login: z.string() }),
  pull_request: z.object({
    number: z.number().int(),
    draft: z.boolean().optional(),
    state: z.string(),
    /** closed only: merged, and when. */
    merged: z.boolean().nullable().optional(),
    merged_at: z.string().nullable().optional(),
    head: z.object({
      sha: z.string(),
      ref: z.string(),
      repo: z.object({ full_name: z.string() }).nullable(),
    }),
    base: z.object({ sha: z.string(), ref: z.string(), repo: z.object({ full_name: z.string() }) }),
  }),
});
export type PullRequestEvent = z.infer<typeof pullRequestEventSchema>;

export const issueCommentEventSchema = z.object({
  action: z.string(),
  installation,
  repository,
  issue: z.object({
    number: z.number().int(),
    pull_request: z.object({}).passthrough().optional(),
  }),
  comment: z.object({
    id: z.number().int(),
    body: z.string(),
    // GitHub's schema: the user may be null (a deleted account) and its type absent.
    user: z.object({ login: z.string(), type: z.string().optional() }).nullable(),
  }),
});
export type IssueCommentEvent = z.infer<typeof issueCommentEventSchema>;

export const workflowRunEventSchema = z.object({
  action: z.string(),
  installation,
  repository,
  workflow_run: z.object({
    id: z.number().int(),
    event: z.string(),
    status: z.string().nullable(),
    conclusion: z.string().nullable(),
    html_url: z.string(),
    path: z.string(),
    // The run-name: the example workflow puts the job id in it (a run GitHub did not name
    // at dispatch is matched to its job by it). Absent from older servers' payloads.
    display_title: z.string().optional(),
  }),
});
export type WorkflowRunEvent = z.infer<typeof workflowRunEventSchema>;

export const checkRunEventSchema = z.object({
  // Optional in GitHub's schema for check_run.rerequested; Probot routes by it anyway.
  action: z.string().optional(),
  installation,
  repository,
  sender: z.object({ login: z.string() }),
  // The webhook schema promises requested_action, not its identifier: without one it is
  // not the Apply button (handlers/check-run.ts), not an unreadable payload.
  requested_action: z.object({ identifier: z.string().optional() }).nullable().optional(),
  check_run: z.object({
    id: z.number().int(),
    name: z.string(),
    head_sha: z.string(),
    external_id: z.string().nullable(),
  }),
});
export type CheckRunEvent = z.infer<typeof checkRunEventSchema>;

export const checkSuiteEventSchema = z.object({
  action: z.string(),
  installation,
  repository,
  sender: z.object({ login: z.string() }),
  check_suite: z.object({ id: z.number().int(), head_sha: z.string() }),
});
export type CheckSuiteEvent = z.infer<typeof checkSuiteEventSchema>;

export function repoOf(payload: { repository: z.infer<typeof repository> }): {
  owner: string;
  repo: string;
} {
  return { owner: payload.repository.owner.login, repo: payload.repository.name };
}
