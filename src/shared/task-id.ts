// A task's id, as a plan, a job spec and a review name it: its path relative to the repository
// root (a folder, or a KernelBench .py file), and for a robust-kbench backward task the
// folder's path with `#backward` (the backward pass of the task in that folder). The app and
// the runner read the suffix here, and only here. Pure.

/** What a robust-kbench folder's path takes to name its backward task. */
export const BACKWARD_SUFFIX = "#backward";

/** The id of a robust-kbench folder's backward task. */
export function backwardTaskId(folder: string): string {
  return `${folder}${BACKWARD_SUFFIX}`;
}

/** Whether the id names a backward task (`folder#backward`). */
export function isBackwardTaskId(id: string): boolean {
  return id.endsWith(BACKWARD_SUFFIX);
}

/**
 * The folder (or file) a task id names: the id less its `#…` suffix, so a backward task's id
 * gives the folder of its forward task, where both live.
 */
export function taskFolder(id: string): string {
  return id.replace(/#[^/]*$/, "");
}

/** Whether `path` is the task's folder or a file beneath it (a backward task's: its folder's). */
export function taskHolds(id: string, path: string): boolean {
  const folder = taskFolder(id);
  return path === folder || path.startsWith(`${folder}/`);
}
