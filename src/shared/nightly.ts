// What the nightly run remembers from one night to the next, for one repository: the nights
// so far (the PR body's history), the kernels on the nightly branch now, the ones a
// maintainer turned down (a closed, unmerged PR), the last night's times and runner (the
// drift watch's baseline), the last window an instance claimed, and where the maintainers'
// answers to verdicts are (src/shared/answers.ts). It lives in GitHub
// itself, on the branch `evokernel-state` (a documented place: refs/heads/, no custom ref),
// each night's commit on top of the last, so it survives restarts and is shared by every
// app instance without a database; moving the branch only as a fast-forward makes each
// write a compare-and-swap. Bounded: `nightly.json` keeps no sources (each proposal's
// source is a blob of its own, `sources/<hash>`, kept while the proposal is on the nightly
// branch), at most MAX_NIGHTS nights and MAX_REJECTED hashes, so it stays far below the 1 MB
// past which the contents API returns no content. Parsed with zod when read: the branch is
// writable by anyone with push access.
import { z } from "zod";
import { ANSWERS_FILE, answersSchema, serializeAnswers } from "./answers.js";
import { spreadSchema, type Spread } from "./result.js";

export const STATE_BRANCH = "evokernel-state";
export const STATE_FILE = "nightly.json";
/** A proposal's source on the state branch. */
export function sourcePath(hash: string): string {
  return `sources/${hash}`;
}
/** Nights kept; the PR body shows fewer when it would not fit. */
export const MAX_NIGHTS = 90;
/** Rejected kernels remembered (oldest forgotten first). */
export const MAX_REJECTED = 500;

const runnerSchema = z.object({
  gpu: z.string(),
  driver: z.string().nullable(),
  cuda: z.string().nullable(),
  torch: z.string(),
});
export type Runner = z.infer<typeof runnerSchema>;

export const proposalSchema = z.object({
  task: z.string(),
  /** The kernel file the change replaces, relative to the repository root. */
  path: z.string(),
  /** sha256 of the proposed source (first 16 hex digits): how a rejection is recognised. */
  hash: z.string(),
  /** Geometric-mean times over the configurations that count, in ms. */
  beforeMs: z.number().nonnegative(),
  afterMs: z.number().nonnegative(),
  speedup: z.number().positive(),
  lowerBound: z.number().positive(),
  eager: z.number().positive().nullable(),
  compile: z.number().positive().nullable(),
  /** The night (ISO time) that found it. */
  night: z.string(),
  /** In memory for the night that found it; stored as the blob `sourceBlob`, not here. */
  source: z.string().optional(),
  /** The git blob of the source on the state branch (sourcePath(hash)). */
  sourceBlob: z.string().optional(),
});
export type Proposal = z.infer<typeof proposalSchema>;

const nightSchema = z.object({
  at: z.string(),
  sha: z.string(),
  runner: runnerSchema,
  /** What the night proposed: task and speedup. */
  proposed: z.array(z.object({ task: z.string(), speedup: z.number().positive() })),
  /** Tasks timed (the drift watch) and how many drifted. */
  timed: z.number().int().nonnegative(),
  drifted: z.number().int().nonnegative(),
  /** What happened to the PR: opened, updated, rebuilt, unchanged, none. */
  pull: z.enum(["opened", "updated", "rebuilt", "unchanged", "none"]),
});
export type Night = z.infer<typeof nightSchema>;

export const timedConfigSchema = z.object({
  name: z.string(),
  kernel: spreadSchema,
  eager: spreadSchema.nullable(),
  compile: spreadSchema.nullable(),
});
export type TimedConfig = z.infer<typeof timedConfigSchema>;

export const ledgerSchema = z.object({
  schema: z.literal(1),
  nights: z.array(nightSchema),
  /** The kernels on the nightly branch now, and the commit the branch is built on. */
  branch: z.object({ base: z.string(), pr: z.number().int().positive().nullable() }).nullable(),
  proposals: z.array(proposalSchema),
  rejected: z.array(z.string()),
  /** The latest window (ISO time) an instance claimed: each window runs once. */
  claimed: z.string().nullable().optional(),
  /** The last night's times of every configured task's current kernel. */
  timings: z
    .object({
      at: z.string(),
      runner: runnerSchema,
      tasks: z.array(z.object({ task: z.string(), configs: z.array(timedConfigSchema) })),
    })
    .nullable(),
  /**
   * The maintainers' answers to verdicts (src/shared/answers.ts) are the blob `answers.json`
   * beside this file, named here as a proposal's source is; in memory only when changed.
   */
  answersBlob: z.string().optional(),
  answers: answersSchema.optional(),
  /** The wrong marks the night's issue lists now (a digest): it is edited when they change. */
  wrongListed: z.string().nullable().optional(),
});
export type Ledger = z.infer<typeof ledgerSchema>;

export const EMPTY_LEDGER: Ledger = {
  schema: 1,
  nights: [],
  branch: null,
  proposals: [],
  rejected: [],
  claimed: null,
  timings: null,
};

/** The stored text as a ledger; unreadable or foreign text starts afresh (said in the log). */
export function parseLedger(text: string | undefined): { ledger: Ledger; error?: string } {
  if (text === undefined) return { ledger: EMPTY_LEDGER };
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { ledger: EMPTY_LEDGER, error: `not JSON: ${(error as Error).message}` };
  }
  const parsed = ledgerSchema.safeParse(data);
  if (!parsed.success) {
    return { ledger: EMPTY_LEDGER, error: parsed.error.issues[0]?.message ?? "invalid" };
  }
  return { ledger: parsed.data };
}

/**
 * The state branch's files for a ledger: `nightly.json` without sources, and each proposal's
 * source as its own blob (its text when the night has it, else the blob already stored).
 */
export type StateFile = { path: string; content: string } | { path: string; sha: string };

export function stateFiles(ledger: Ledger): StateFile[] {
  const sources = ledger.proposals.flatMap((proposal): StateFile[] => {
    const path = sourcePath(proposal.hash);
    if (proposal.source !== undefined) return [{ path, content: proposal.source }];
    return proposal.sourceBlob === undefined ? [] : [{ path, sha: proposal.sourceBlob }];
  });
  const answers: StateFile[] =
    ledger.answers !== undefined
      ? [{ path: ANSWERS_FILE, content: serializeAnswers(ledger.answers) }]
      : ledger.answersBlob === undefined
        ? []
        : [{ path: ANSWERS_FILE, sha: ledger.answersBlob }];
  return [{ path: STATE_FILE, content: serializeLedger(ledger) }, ...sources, ...answers];
}

export function serializeLedger(ledger: Ledger): string {
  // The answers are a blob of their own (stateFiles); answersBlob names them.
  const stored = (({ answers: _answers, ...kept }: Ledger) => kept)(ledger);
  const trimmed: Ledger = {
    ...stored,
    nights: ledger.nights.slice(-MAX_NIGHTS),
    rejected: ledger.rejected.slice(-MAX_REJECTED),
    // Sources are blobs of their own (stateFiles); sourceBlob names them.
    proposals: ledger.proposals.map(({ source: _source, ...kept }) => kept),
  };
  return `${JSON.stringify(trimmed, null, 1)}\n`;
}

/**
 * A change on the runner (driver, CUDA or PyTorch on the same GPU) that moved a kernel's
 * time beyond the noise and the threshold: the kernel got slower than it was, or
 * torch.compile got faster than the kernel where it was not before.
 */
export interface Drift {
  readonly task: string;
  readonly config: string;
  readonly kind: "kernel-slower" | "compile-faster";
  readonly before: { readonly kernel: Spread; readonly compile: Spread | null };
  readonly now: { readonly kernel: Spread; readonly compile: Spread | null };
}
