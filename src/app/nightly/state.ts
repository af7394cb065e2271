// The nightly ledger on the branch `evokernel-state` (src/shared/nightly.ts says what it
// holds): read it, write it back as a compare-and-swap (a fast-forward from the commit it
// was read at), and claim a night's window with the same swap, so exactly one instance runs
// each window without a database or a ref outside refs/heads/.
import { serializeAnswers } from "../../shared/answers.js";
import {
  type Ledger,
  parseLedger,
  STATE_BRANCH,
  STATE_FILE,
  stateFiles,
} from "../../shared/nightly.js";
import type { GitHub } from "../github.js";
import { gitBlobSha } from "./night.js";

export interface StoredLedger {
  readonly ledger: Ledger;
  /** The state branch's commit it was read at; undefined before the first write. */
  readonly commit: string | undefined;
  /** Why the stored text was not used (then the ledger starts afresh). */
  readonly error?: string;
}

export async function readLedger(github: GitHub): Promise<StoredLedger> {
  const stored = await github.readBranchFile(STATE_BRANCH, STATE_FILE);
  const parsed = parseLedger(stored?.text);
  return {
    ledger: parsed.ledger,
    commit: stored?.commit,
    ...(parsed.error === undefined ? {} : { error: parsed.error }),
  };
}

/** The ledger written on top of `commit`; false when another instance wrote first. */
export async function writeLedger(
  github: GitHub,
  ledger: Ledger,
  commit: string | undefined,
  message: string,
): Promise<boolean> {
  // A source the night brought is stored as a blob; the ledger names it.
  const named: Ledger = {
    ...ledger,
    proposals: ledger.proposals.map((proposal) =>
      proposal.source === undefined
        ? proposal
        : { ...proposal, sourceBlob: gitBlobSha(proposal.source) },
    ),
    // Changed answers are stored as a blob too; the ledger names it.
    ...(ledger.answers === undefined
      ? {}
      : { answersBlob: gitBlobSha(serializeAnswers(ledger.answers)) }),
  };
  return (
    (await github.writeBranchFiles(STATE_BRANCH, commit, stateFiles(named), message)) !== undefined
  );
}

/** Claims `window` (ISO time): true for exactly one caller, however many instances tick. */
export async function claimWindow(github: GitHub, window: string): Promise<boolean> {
  const { ledger, commit } = await readLedger(github);
  if (ledger.claimed !== undefined && ledger.claimed !== null && ledger.claimed >= window)
    return false;
  return writeLedger(
    github,
    { ...ledger, claimed: window },
    commit,
    `evokernel nightly: claim ${window}`,
  );
}
