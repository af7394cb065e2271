// The nightly ledger on the branch `evokernel-state` (src/shared/nightly.ts says what it
// holds): read it, write it back as a compare-and-swap (a fast-forward from the commit it
// was read at), and claim a night's window with the same swap, so exactly one instance runs
// each window without a database or a ref outside refs/heads/.
import { createHash } from "node:crypto";
import { serializeAnswers } from "../shared/answers.js";
import {
  HISTORY_FOLDER,
  type HistoryIndex,
  INDEX_FILE,
  parseHistoryIndex,
} from "../shared/history.js";
import {
  type Ledger,
  parseLedger,
  STATE_BRANCH,
  STATE_FILE,
  stateFiles,
} from "../shared/nightly.js";
import type { BranchFile, GitDataApi } from "./github.js";
import { carriedHistory, readHistoryFile, readStateTree, type StateTree } from "./history.js";

/** git's object id of a blob holding `text`: the name GitHub gives the blob it stores. */
export function gitBlobSha(text: string): string {
  const bytes = Buffer.from(text, "utf8");
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/** Writes tried when other writers (a pull request's history) keep moving the branch. */
const WRITE_ATTEMPTS = 4;

export interface StoredLedger {
  readonly ledger: Ledger;
  /** The state branch's commit it was read at; undefined before the first write. */
  readonly commit: string | undefined;
  /** The stored text (undefined when there was none). */
  readonly text?: string;
  /** Why the stored text was not used (then the ledger starts afresh). */
  readonly error?: string;
}

export async function readLedger(github: GitDataApi): Promise<StoredLedger> {
  const stored = await github.readBranchFile(STATE_BRANCH, STATE_FILE);
  const parsed = parseLedger(stored?.text);
  return {
    ledger: parsed.ledger,
    commit: stored?.commit,
    ...(stored?.text === undefined ? {} : { text: stored.text }),
    ...(parsed.error === undefined ? {} : { error: parsed.error }),
  };
}

/** The history files a write adds, from the branch's tree and history index it lands on. */
export type HistoryChange = (
  tree: StateTree,
  index: HistoryIndex,
) => Promise<{ files: BranchFile[] }>;

/**
 * The ledger written on top of `from.commit` (with the files `history` adds, the history
 * folder's others carried); false when another instance changed the ledger first. A writer
 * that moved the branch but left the ledger as it was read (a pull request's history) is no
 * conflict: the write is made again on top of it.
 */
export async function writeLedger(
  github: GitDataApi,
  ledger: Ledger,
  from: { readonly commit: string | undefined; readonly text?: string },
  message: string,
  history?: HistoryChange,
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
  let parent = from.commit;
  for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
    const files = [...stateFiles(named), ...(await historyOn(github, parent, history))];
    if ((await github.writeBranchFiles(STATE_BRANCH, parent, files, message)) !== undefined)
      return true;
    const now = await readLedger(github);
    if (now.commit === undefined || now.text !== from.text) return false;
    parent = now.commit;
  }
  return false;
}

/** The history folder on `parent`, carried, with what `history` writes. */
async function historyOn(
  github: GitDataApi,
  parent: string | undefined,
  history: HistoryChange | undefined,
): Promise<BranchFile[]> {
  if (parent === undefined && history === undefined) return [];
  if (history === undefined) {
    // Carried whole, as the folder it is: one read.
    const folder = (await github.readTree(parent as string)).find(
      (entry) => entry.name === HISTORY_FOLDER && entry.type === "tree",
    );
    return folder === undefined ? [] : [{ path: folder.name, sha: folder.sha, tree: true }];
  }
  const tree = await readStateTree(github, parent);
  const index = parseHistoryIndex(await readHistoryFile(github, tree, INDEX_FILE)).index;
  const { files } = await history(tree, index);
  return [...carriedHistory(tree, files), ...files];
}

/** Claims `window` (ISO time): true for exactly one caller, however many instances tick. */
export async function claimWindow(github: GitDataApi, window: string): Promise<boolean> {
  const stored = await readLedger(github);
  const { ledger } = stored;
  if (ledger.claimed !== undefined && ledger.claimed !== null && ledger.claimed >= window)
    return false;
  return writeLedger(
    github,
    { ...ledger, claimed: window },
    stored,
    `evokernel nightly: claim ${window}`,
  );
}
