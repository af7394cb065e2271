// Which tasks a change touches: the app's planner (from a pull request's file list) and
// `evokernel review` (from `git diff`) decide it with the same rule.
import { pathFilter } from "./glob.js";
import { taskHolds } from "./task-id.js";

/** A task by where it lives: a folder, or a KernelBench file; relative to the repository root. */
export type TaskLocation = { path: string };

export type TouchedTask = { path: string; inBase: boolean; inHead: boolean };

/**
 * The one rule for which tasks a change touches, however the tasks are known (the app: by the
 * config's roots, from a pull request's file list; `evokernel review`: the tasks found in the
 * trees, from `git diff`). `ownersOf(file)`: the tasks the file lies in, none when it lies
 * outside every task. Without `paths`, a changed file touches the tasks it lies in. With
 * `paths`, only changed files matching one count: inside a task they touch it, outside every
 * task they touch all of them (a shared header, say: `outside`).
 */
export function touchedTasks(
  changed: readonly string[],
  ownersOf: (file: string) => readonly string[],
  paths?: readonly string[],
): { tasks: Set<string>; outside: boolean } {
  const counted = paths === undefined ? changed : changed.filter(pathFilter(paths));
  const tasks = new Set<string>();
  let outside = false;
  for (const file of counted) {
    const owners = ownersOf(file);
    for (const owner of owners) tasks.add(owner);
    if (owners.length === 0 && paths !== undefined) outside = true;
  }
  return { tasks, outside };
}

/** The tasks to review, by path, sorted, by `touchedTasks`'s rule over the trees' tasks. */
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
  const touched = touchedTasks(
    changed,
    (file) => all.filter((task) => taskHolds(task, file)),
    paths,
  );
  return all
    .filter((task) => touched.outside || touched.tasks.has(task))
    .map((path) => ({ path, inBase: basePaths.has(path), inHead: headPaths.has(path) }));
}
