// The maintainers' answers on the state branch (src/shared/answers.ts): the blob the nightly
// ledger names, read beside it and changed as the ledger is, a compare-and-swap on the
// branch (tried again when another writer moved it first), so an answer survives restarts
// and every instance sees it. Also the content hash of a judged kernel: its git blob.
import { type Answers, EMPTY_ANSWERS, parseAnswers } from "../../shared/answers.js";
import { STATE_BRANCH } from "../../shared/nightly.js";
import type { GitDataApi, GitHub } from "../github.js";
import { readLedger, type StoredLedger, writeLedger } from "../state-branch.js";

/** The answers the ledger names; an unreadable file gives an error (and no answers). */
export async function readAnswers(
  github: Pick<GitHub, "readBlob">,
  stored: StoredLedger,
): Promise<{ answers: Answers; error?: string }> {
  const blob = stored.ledger.answersBlob;
  if (blob === undefined) return { answers: EMPTY_ANSWERS };
  return parseAnswers(await github.readBlob(blob));
}

/** The answers stored now (none before the first). */
export async function loadAnswers(github: GitDataApi): Promise<Answers> {
  const stored = await readLedger(github);
  const read = await readAnswers(github, stored);
  if (read.error !== undefined)
    throw new Error(`answers.json on ${STATE_BRANCH} is unreadable: ${read.error}`);
  return read.answers;
}

/**
 * The stored answers changed by `change` and written back; `written` false when the change
 * added nothing (the same answer given before: one record). Never writes over a ledger or
 * answers it could not read: that would lose what they hold.
 */
export async function changeAnswers(
  github: GitDataApi,
  change: (answers: Answers) => { answers: Answers; added: boolean },
  message: string,
  tries = 3,
): Promise<{ answers: Answers; written: boolean }> {
  for (let attempt = 0; attempt < tries; attempt++) {
    const stored = await readLedger(github);
    if (stored.error !== undefined)
      throw new Error(
        `nightly.json on ${STATE_BRANCH} is unreadable (${stored.error}), so no answer can be stored beside it: fix or delete the file`,
      );
    const read = await readAnswers(github, stored);
    if (read.error !== undefined)
      throw new Error(
        `answers.json on ${STATE_BRANCH} is unreadable (${read.error}): fix or delete it, then answer again`,
      );
    const { answers, added } = change(read.answers);
    if (!added) return { answers, written: false };
    if (await writeLedger(github, { ...stored.ledger, answers }, stored, message))
      return { answers, written: true };
  }
  throw new Error(
    `${STATE_BRANCH} kept moving while an answer was written (${tries} tries): nothing was recorded; answer again`,
  );
}

/** The git blob of `path` in `commit` (walked tree by tree), or undefined when it is no file there. */
export async function blobAt(
  github: Pick<GitHub, "readTree">,
  commit: string,
  path: string,
): Promise<string | undefined> {
  const parts = path.split("/").filter((part) => part !== "");
  let entries = await github.readTree(commit);
  for (const [index, part] of parts.entries()) {
    const entry = entries.find((candidate) => candidate.name === part);
    if (entry === undefined) return undefined;
    if (index === parts.length - 1) return entry.type === "blob" ? entry.sha : undefined;
    if (entry.type !== "tree") return undefined;
    entries = await github.readTree(entry.sha);
  }
  return undefined;
}
