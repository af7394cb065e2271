// Types for test/helpers/github-standin.mjs, for the TypeScript tests that use it.
import type { ChildProcess } from "node:child_process";
export interface StandinRequest {
  method: string;
  path: string;
  query: string;
  body: Record<string, unknown>;
  at: number;
  status: number;
  routed: boolean;
  /** Answered by a planted fault. */
  fault?: boolean;
}
/** GitHub failing on purpose: `status` (none: the request hangs), `times` times. */
export interface StandinFault {
  method: string;
  path: RegExp;
  status?: number;
  headers?: Record<string, string>;
  message?: string;
  times: number;
}
export interface StandinCheckRun {
  id: number;
  name: string;
  head_sha: string;
  status: string;
  conclusion: string | null;
  external_id: string | null;
  details_url: string | null;
  output?: { title: string; summary: string; text?: string };
  actions?: { label: string; description: string; identifier: string }[];
  updates: Record<string, unknown>[];
}
export interface StandinPull {
  head: string;
  base: string;
  headRef?: string;
  baseRef?: string;
  fork?: boolean;
  draft?: boolean;
  state?: string;
  files?: { filename: string; status: string; patch?: string; previous_filename?: string }[];
}
export interface StandinIssue {
  number: number;
  title: string;
  body: string;
  state: string;
  edits: number;
}
export interface Standin {
  host: string;
  url: string;
  state: {
    config: string | null;
    pulls: Record<string, StandinPull>;
    permissions: Record<string, string>;
    /** A run's result artifact (zip bytes) by run id. */
    artifacts: Record<string, Buffer>;
    owner: string;
    repo: string;
    defaultBranch: string;
  };
  requests: StandinRequest[];
  comments: { id: number; issue: number; body: string; edits: number }[];
  checkRuns: StandinCheckRun[];
  reviews: Record<string, unknown>[];
  dispatches: {
    workflow: string;
    ref: string;
    inputs: { spec: string };
    runId: number;
    at: number;
  }[];
  refs: Map<string, string>;
  /** Git objects the app created (blobs, trees, commits), by sha. */
  objects: Map<string, Record<string, unknown>>;
  /** Pull requests the app opened (the nightly one). */
  openedPulls: (StandinIssue & { head: string; base: string })[];
  /** Issues the app opened (the nightly drift issue). */
  issues: (StandinIssue & { labels: string[] })[];
  faults: StandinFault[];
  /** The text of `path` at a branch or commit (one the app wrote, or the clone's). */
  readFile(ref: string, path: string): string | undefined;
  /** A commit the app wrote. */
  commit(sha: string): { message: string; tree: string; parents: string[] } | undefined;
  waitFor(test: () => boolean, ms?: number, what?: string): Promise<void>;
  unknown(): StandinRequest[];
  close(): Promise<void>;
}
export function startStandin(state?: {
  config?: string | null;
  pulls?: Record<string, StandinPull>;
  permissions?: Record<string, string>;
  /** A local clone: git trees, blobs, commit names and branches are read from its objects. */
  repoDir?: string;
  /** The one repository (octo/kernels, default branch main). */
  owner?: string;
  repo?: string;
  defaultBranch?: string;
}): Promise<Standin>;
export function generateAppKey(): string;
export function workflowRunEvent(options: {
  owner?: string;
  repo?: string;
  runId: number;
  conclusion?: string;
}): Record<string, unknown>;
export function signWebhook(secret: string, body: string): string;
export function sendWebhook(
  appUrl: string,
  secret: string,
  name: string,
  payload: unknown,
  id: string,
): Promise<{ status: number; ms: number }>;
export interface AppProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}
export function startApp(options: {
  entry: string;
  standin: Standin;
  /** What the app binds; 0 (the default): a port the system chooses, reported back. */
  port?: number;
  secret: string;
  privateKey: string;
  env?: Record<string, string>;
  cwd?: string;
  log?: boolean;
  inheritEnv?: boolean;
  /** Node's options before the entry (the bench's memory probe, a heap limit). */
  nodeArgs?: string[];
}): Promise<AppProcess>;
export function pullRequestEvent(options: {
  owner?: string;
  repo?: string;
  number: number;
  head: string;
  base: string;
  action?: string;
  before?: string;
  fork?: boolean;
  headRef?: string;
}): Record<string, unknown>;
export function issueCommentEvent(options: {
  owner?: string;
  repo?: string;
  number: number;
  body: string;
  commentId: number;
  login?: string;
  action?: string;
  title?: string;
  at?: string;
}): Record<string, unknown>;
