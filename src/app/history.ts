// The task histories on the state branch `evokernel-state` (src/shared/history.ts says what
// they hold), read and written through the GitHub interface: a pull request's timings kept
// when its review is reported, moved into each task's history (and its chart redrawn) when
// it is merged, dropped when it is closed; a night's timings written in the ledger's own
// commit (state-branch.ts). The branch's commits hold exactly the files they name, so every
// write carries the files it does not change (the ledger and sources; the other tasks'
// histories) by their blobs, and lands only as a fast-forward: a writer that lost the race
// reads again and retries.
import {
  addEntry,
  addPending,
  chartUrl,
  HISTORY_FOLDER,
  type HistoryEntry,
  type HistoryIndex,
  historyPaths,
  INDEX_FILE,
  indexTask,
  PAGE_FILE,
  parseHistoryIndex,
  parseTaskHistory,
  reviewTimings,
  serializeHistory,
  takePending,
} from "../shared/history.js";
import { STATE_BRANCH } from "../shared/nightly.js";
import type { ReviewResult } from "../shared/review.js";
import { renderHistoryChart, renderHistoryPage } from "../report/history-chart.js";
import type { BranchFile, GitDataApi, GitHub, RepoScope, TreeEntry } from "./github.js";

/** Writes tried before giving up when other writers keep moving the branch. */
const WRITE_ATTEMPTS = 4;

/** The state branch's files at one commit: its root, and the history folder's files. */
export interface StateTree {
  readonly root: readonly TreeEntry[];
  readonly history: readonly TreeEntry[];
}

export const EMPTY_TREE: StateTree = { root: [], history: [] };

export async function readStateTree(
  github: GitDataApi,
  commit: string | undefined,
): Promise<StateTree> {
  if (commit === undefined) return EMPTY_TREE;
  const root = await github.readTree(commit);
  const folder = root.find((entry) => entry.name === HISTORY_FOLDER && entry.type === "tree");
  return { root, history: folder === undefined ? [] : await github.readTree(folder.sha) };
}

/** A history file's text at the tree, or undefined when there is none. */
export async function readHistoryFile(
  github: GitDataApi,
  tree: StateTree,
  path: string,
): Promise<string | undefined> {
  const name = path.slice(HISTORY_FOLDER.length + 1);
  const entry = tree.history.find((file) => file.name === name && file.type === "blob");
  return entry === undefined ? undefined : github.readBlob(entry.sha);
}

/** The history folder's files that `written` does not replace, carried by their blobs. */
export function carriedHistory(tree: StateTree, written: readonly BranchFile[]): BranchFile[] {
  const replaced = new Set(written.map((file) => file.path));
  return tree.history.flatMap((entry) => {
    const path = `${HISTORY_FOLDER}/${entry.name}`;
    return entry.type !== "blob" || replaced.has(path) ? [] : [{ path, sha: entry.sha }];
  });
}

/**
 * The files that record `runs` (each a task's new entry): every touched task's history and
 * chart, the index, and the page. `index` is the one to update (pending pulls already
 * changed by the caller).
 */
export async function historyFiles(
  github: GitDataApi & RepoScope,
  tree: StateTree,
  index: HistoryIndex,
  runs: readonly { task: string; entry: HistoryEntry }[],
): Promise<{ files: BranchFile[]; index: HistoryIndex }> {
  const files: BranchFile[] = [];
  let updated = index;
  for (const run of runs) {
    const paths = historyPaths(run.task);
    const stored = parseTaskHistory(run.task, await readHistoryFile(github, tree, paths.json));
    const history = addEntry(stored.history, run.entry);
    files.push(
      { path: paths.json, content: serializeHistory(history) },
      { path: paths.svg, content: await renderHistoryChart(history) },
    );
    updated = indexTask(updated, history);
  }
  files.push({ path: INDEX_FILE, content: serializeHistory(updated) });
  if (runs.length > 0)
    files.push({
      path: PAGE_FILE,
      content: renderHistoryPage(`${github.repo.owner}/${github.repo.repo}`, updated),
    });
  return { files, index: updated };
}

/** The tasks with a chart, and where a reader sees each. */
export function chartLinks(
  github: RepoScope,
  index: HistoryIndex,
  tasks: readonly string[],
): { task: string; url: string }[] {
  const charted = new Set(index.tasks.map((task) => task.task));
  return tasks
    .filter((task) => charted.has(task))
    .map((task) => ({ task, url: chartUrl(github.repo, task, github.web) }));
}

/**
 * One change of the history folder, as a compare-and-swap on the state branch: `change`
 * gets the tree and index at the branch's head and returns the files to write (or
 * undefined: nothing to write); every other file of the branch is carried as it is.
 * Returns the index after the change (the stored one when nothing was written).
 */
async function updateHistory(
  github: GitHub,
  message: string,
  change: (
    tree: StateTree,
    index: HistoryIndex,
  ) => Promise<{ files: BranchFile[]; index: HistoryIndex } | undefined>,
): Promise<HistoryIndex> {
  for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
    const head = await github.branchHead(STATE_BRANCH);
    const tree = await readStateTree(github, head);
    const index = parseHistoryIndex(await readHistoryFile(github, tree, INDEX_FILE)).index;
    const changed = await change(tree, index);
    if (changed === undefined) return index;
    const others = tree.root.flatMap((entry): BranchFile[] =>
      entry.name === HISTORY_FOLDER || (entry.type !== "blob" && entry.type !== "tree")
        ? []
        : [{ path: entry.name, sha: entry.sha, tree: entry.type === "tree" }],
    );
    const files = [...others, ...carriedHistory(tree, changed.files), ...changed.files];
    if ((await github.writeBranchFiles(STATE_BRANCH, head, files, message)) !== undefined)
      return changed.index;
  }
  throw new Error(
    `${STATE_BRANCH} kept moving while its history was written (${WRITE_ATTEMPTS} tries); the history misses this run, and the next one is recorded as usual`,
  );
}

/**
 * A pull request's review reported: its head's timings kept until it is merged (replacing an
 * earlier review's). Returns the links to the charts of its tasks that have one.
 */
export async function recordPullReview(
  github: GitHub,
  pr: number,
  review: ReviewResult,
): Promise<{ task: string; url: string }[]> {
  const tasks = reviewTimings(review);
  if (tasks.length === 0) return [];
  const index = await updateHistory(
    github,
    `evokernel history: #${pr} reviewed at ${review.job.sha.slice(0, 7)}`,
    (_tree, stored) => {
      const updated = addPending(stored, {
        pr,
        sha: review.job.sha,
        at: review.finishedAt,
        gpu: review.device.gpu,
        tasks,
      });
      return Promise.resolve({
        files: [{ path: INDEX_FILE, content: serializeHistory(updated) }],
        index: updated,
      });
    },
  );
  return chartLinks(
    github,
    index,
    tasks.map((task) => task.task),
  );
}

/**
 * A pull request closed: merged, its last review's timings join each task's history (at the
 * merge's time and commit); closed unmerged, they are forgotten. Nothing is written for a
 * pull request without kept timings.
 */
export async function recordPullClosed(
  github: GitHub,
  pr: number,
  merged: { at: string; headSha: string } | null,
): Promise<void> {
  await updateHistory(
    github,
    `evokernel history: #${pr} ${merged === null ? "closed" : "merged"}`,
    async (tree, stored) => {
      const taken = takePending(stored, pr);
      if (taken.pull === undefined) return undefined;
      const pull = taken.pull;
      // Timings of another commit than the one merged do not describe it.
      if (merged === null || pull.sha !== merged.headSha)
        return {
          files: [{ path: INDEX_FILE, content: serializeHistory(taken.index) }],
          index: taken.index,
        };
      const runs = pull.tasks.map((task) => ({
        task: task.task,
        entry: {
          kind: "pr" as const,
          at: merged.at,
          sha: pull.sha,
          pr,
          gpu: pull.gpu,
          configs: task.configs,
        },
      }));
      return historyFiles(github, tree, taken.index, runs);
    },
  );
}

/** A night's entries: every task it timed, at the night's end and commit. */
export function nightRuns(
  review: ReviewResult,
  at: string,
): { task: string; entry: HistoryEntry }[] {
  return reviewTimings(review).map((task) => ({
    task: task.task,
    entry: {
      kind: "nightly",
      at,
      sha: review.job.sha,
      pr: null,
      gpu: review.device.gpu,
      configs: task.configs,
    },
  }));
}
