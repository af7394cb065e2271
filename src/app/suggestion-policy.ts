// Which of a job's suggested files the app will write (issue 16.4). A suggestion's path comes
// from the job's artifact, which code from the pull request may have shaped, so the app
// decides on its own: a suggestion may only change the kernel source file of a task in the
// plan the app made for the job, exactly as task.json names it at the job's head commit, an
// existing regular file reached through folders only (no symlink, no submodule), with no
// hidden segment (.github, .git, .gitattributes), and against that file's content at head.
// Everything else is dropped, and the report says what and why.
import { createHash } from "node:crypto";
import { posix } from "node:path";
import { codeSpan, mdText } from "../report/escape.js";
import type { TreeEntry } from "./github.js";
import { taskOf } from "./planner.js";
import { KERNEL_SOURCE, pathShapeProblem } from "../shared/suggestion-path.js";
import { taskFolder } from "../shared/task-id.js";

export interface Suggestion {
  readonly path: string;
  readonly before: string;
  readonly after: string;
}

export interface DroppedSuggestion {
  readonly path: string;
  /** Markdown: untrusted parts are already in code spans. */
  readonly why: string;
}

/** The job's plan as the app made it: named task paths, or (none named) every task under roots. */
export interface PlanScope {
  readonly tasks: readonly string[];
  readonly roots: readonly string[];
}

/** Git reads at the job's head commit: the one seam to GitHub here. */
export interface TreeSource {
  readTree(treeish: string): Promise<TreeEntry[]>;
  readBlob(sha: string): Promise<string>;
}

const REGULAR_FILE = "100644";
const MAX_TASK_JSON = 65_536;
const FOLDER = "040000";

export async function screenSuggestions(
  source: TreeSource,
  headSha: string,
  plan: PlanScope,
  suggestions: readonly Suggestion[],
): Promise<{ kept: Suggestion[]; dropped: DroppedSuggestion[] }> {
  const reader = cachedReader(source);
  const kept: Suggestion[] = [];
  const dropped: DroppedSuggestion[] = [];
  const seen = new Set<string>();
  for (const suggestion of suggestions) {
    let why: string | undefined;
    if (seen.has(suggestion.path)) why = "the job suggested this file twice";
    else {
      seen.add(suggestion.path);
      try {
        why = await problemOf(reader, headSha, plan, suggestion);
      } catch (error) {
        // Fail closed: a file the app could not check is not written.
        const message = error instanceof Error ? error.message : String(error);
        why = `it could not be checked against the head commit (${mdText(message)})`;
      }
    }
    if (why === undefined) kept.push(suggestion);
    else dropped.push({ path: suggestion.path, why });
  }
  return { kept, dropped };
}

/** Why a suggestion may not be written, or undefined when it may. */
async function problemOf(
  reader: TreeSource,
  headSha: string,
  plan: PlanScope,
  suggestion: Suggestion,
): Promise<string | undefined> {
  const { path } = suggestion;
  const shape = pathShapeProblem(path);
  if (shape !== undefined) return shape;
  if (!KERNEL_SOURCE.test(path))
    return "it is not a kernel source file (.cu, .cuh, .cpp, .h, .py…)";
  const task = plannedTaskOf(plan, path);
  if (task === undefined) return "it lies outside every task this job was planned for";
  const walked = await walk(reader, headSha, path);
  if (typeof walked === "string") return walked;
  const named = await kernelNamedBy(reader, task, walked.folders);
  if (named.kernel === undefined) return named.why;
  if (named.kernel !== path)
    return `it is not the task's kernel (${codeSpan(`${task}/task.json`)} names ${codeSpan(named.kernel)})`;
  if (named.reference === path) return "task.json names it as the task's reference too";
  if (blobSha(suggestion.before, walked.file.sha) !== walked.file.sha)
    return "the job's copy of the file differs from the head commit's";
  return undefined;
}

/** The planned task folder holding `path` (the deepest one), if any. */
function plannedTaskOf(plan: PlanScope, path: string): string | undefined {
  const folders =
    plan.tasks.length > 0
      ? plan.tasks.map(taskFolder)
      : [taskOf(plan.roots, path)].flatMap((task) => (task === undefined ? [] : [task]));
  return folders
    .filter((folder) => pathShapeProblem(folder) === undefined && path.startsWith(`${folder}/`))
    .sort((a, b) => b.length - a.length)[0];
}

type Walked = { file: TreeEntry; folders: Map<string, TreeEntry[]> };

/** The file's entry at head, reached through folders only; each folder's entries by path. */
async function walk(reader: TreeSource, headSha: string, path: string): Promise<Walked | string> {
  const segments = path.split("/");
  const folders = new Map<string, TreeEntry[]>();
  let entries = await reader.readTree(headSha);
  folders.set("", entries);
  for (let depth = 0; depth < segments.length; depth++) {
    const prefix = segments.slice(0, depth + 1).join("/");
    const entry = entries.find((item) => item.name === segments[depth]);
    if (entry === undefined)
      return depth === segments.length - 1
        ? "it does not exist at the head commit (a new file)"
        : `${codeSpan(prefix)} does not exist at the head commit (a new file)`;
    if (entry.mode === "120000") return `${codeSpan(prefix)} is a symbolic link at the head commit`;
    if (entry.mode === "160000") return `${codeSpan(prefix)} is a submodule at the head commit`;
    if (depth === segments.length - 1) {
      if (entry.type !== "blob") return "it is not a file at the head commit";
      if (entry.mode !== REGULAR_FILE)
        return `it has mode ${entry.mode} at the head commit; the suggestion would change it to ${REGULAR_FILE}`;
      return { file: entry, folders };
    }
    if (entry.type !== "tree" || entry.mode !== FOLDER)
      return `${codeSpan(prefix)} is not a folder at the head commit`;
    entries = await reader.readTree(entry.sha);
    folders.set(prefix, entries);
  }
  return "it does not exist at the head commit";
}

/** The kernel (and reference) the task's task.json names, normalised inside the task folder. */
async function kernelNamedBy(
  reader: TreeSource,
  task: string,
  folders: Map<string, TreeEntry[]>,
): Promise<{ kernel: string; reference: string | undefined } | { kernel: undefined; why: string }> {
  const entry = folders.get(task)?.find((item) => item.name === "task.json");
  if (entry === undefined || entry.type !== "blob" || entry.mode !== REGULAR_FILE)
    return { kernel: undefined, why: `the task has no ${codeSpan("task.json")} naming its kernel` };
  // A task.json is a few hundred bytes; a huge one is not read at all.
  if (entry.size !== undefined && entry.size > MAX_TASK_JSON)
    return { kernel: undefined, why: `${codeSpan(`${task}/task.json`)} is over 64 KB` };
  let data: unknown;
  try {
    data = JSON.parse(await reader.readBlob(entry.sha));
  } catch {
    return { kernel: undefined, why: `${codeSpan(`${task}/task.json`)} is not JSON` };
  }
  const kernel = fieldOf(data, "kernel");
  if (kernel === undefined)
    return { kernel: undefined, why: `${codeSpan(`${task}/task.json`)} names no kernel` };
  const resolved = insideTask(task, kernel);
  if (resolved === undefined)
    return {
      kernel: undefined,
      why: `${codeSpan(`${task}/task.json`)} names a kernel outside its folder (${codeSpan(kernel)})`,
    };
  const reference = fieldOf(data, "reference");
  return {
    kernel: resolved,
    reference: reference === undefined ? undefined : insideTask(task, reference),
  };
}

function fieldOf(data: unknown, key: string): string | undefined {
  if (typeof data !== "object" || data === null || !(key in data)) return undefined;
  const value = (data as Record<string, unknown>)[key];
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

/** `task/name` normalised, or undefined when it leaves the task folder. */
function insideTask(task: string, name: string): string | undefined {
  if (name.startsWith("/") || name.includes("\\")) return undefined;
  const joined = posix.normalize(`${task}/${name}`);
  return joined.startsWith(`${task}/`) ? joined : undefined;
}

/** Git's object name of `text` as a blob, in the hash the repository uses (by `like`'s length). */
function blobSha(text: string, like: string): string {
  const bytes = Buffer.from(text, "utf8");
  const hash = createHash(like.length === 64 ? "sha256" : "sha1");
  hash.update(`blob ${bytes.length}\0`);
  hash.update(bytes);
  return hash.digest("hex");
}

function cachedReader(source: TreeSource): TreeSource {
  const trees = new Map<string, Promise<TreeEntry[]>>();
  const blobs = new Map<string, Promise<string>>();
  return {
    readTree(treeish) {
      let tree = trees.get(treeish);
      if (tree === undefined) trees.set(treeish, (tree = source.readTree(treeish)));
      return tree;
    },
    readBlob(sha) {
      let blob = blobs.get(sha);
      if (blob === undefined) blobs.set(sha, (blob = source.readBlob(sha)));
      return blob;
    },
  };
}

/** The report's note on what was dropped, or "" when nothing was. */
export function droppedNote(dropped: readonly DroppedSuggestion[]): string {
  if (dropped.length === 0) return "";
  const lines = dropped.map((item) => `- ${codeSpan(item.path)}: ${item.why}.`);
  return [
    `**Suggestions not posted:** evokernel changes only the kernel file of a task this job was planned for, and left out ${dropped.length === 1 ? "one file" : `${dropped.length} files`}:`,
    "",
    ...lines,
  ].join("\n");
}
