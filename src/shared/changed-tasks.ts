// Which tasks a change touches: the app's planner (from a pull request's file list) and
// `evokernel review` (from `git diff`) decide it with the same rule.
import { isUnder, pathFilter } from "./glob.js";

/** A task by where it lives: a folder, or a KernelBench file; relative to the repository root. */
export type TaskLocation = { path: string };

export type TouchedTask = { path: string; inBase: boolean; inHead: boolean };

/**
 * Whether any changed file lies under the task roots (config `tasks`) or matches `paths`:
 * the app's cheap first question before it dispatches anything.
 */
export function touchesKernels(
  changed: readonly string[],
  roots: readonly string[],
  paths?: readonly string[],
): boolean {
  const marks = paths === undefined ? undefined : pathFilter(paths);
  return changed.some(
    (file) => roots.some((root) => isUnder(file, root)) || (marks?.(file) ?? false),
  );
}

/**
 * The tasks to review, by path, sorted. Without `paths`, a task is touched when a changed
 * file lies in its folder (or is its file). With `paths`, only changed files matching one
 * count: inside a task's folder they touch that task, outside every task they touch all of
 * them (a shared header, say).
 */
export function selectChangedTasks(options: {
  changed: readonly string[];
  baseTasks: readonly TaskLocation[];
  headTasks: readonly TaskLocation[];
  paths?: readonly string[] | undefined;
}): TouchedTask[] {
  const { changed, baseTasks, headTasks, paths } = options;
  const basePaths = new Set(baseTasks.map((task) => task.path));
  const headPaths = new Set(headTasks.map((task) => task.path));
  const all = [...new Set([...basePaths, ...headPaths])].sort();
  const counted = paths === undefined ? changed : changed.filter(pathFilter(paths));
  const touched = new Set<string>();
  for (const file of counted) {
    const owners = all.filter((task) => contains(task, file));
    if (owners.length > 0) for (const owner of owners) touched.add(owner);
    else if (paths !== undefined) for (const task of all) touched.add(task);
  }
  return all
    .filter((task) => touched.has(task))
    .map((path) => ({ path, inBase: basePaths.has(path), inHead: headPaths.has(path) }));
}

/** A robust-kbench backward task (`folder#backward`) lives in its forward task's folder. */
function contains(task: string, file: string): boolean {
  const folder = task.replace(/#[^/]*$/, "");
  return file === folder || file.startsWith(`${folder}/`);
}
