// Finds tasks on disk in their three shapes (docs/DESIGN.md, "Tasks"): a folder with
// task.json, a robust-kbench folder with func_forward.py (and, with func_backward.py, its
// backward task, named `folder#backward`), a KernelBench .py file.
import { basename, dirname, join, resolve } from "node:path";
import { UsageError } from "../errors.js";
import { closest } from "../util/suggest.js";
import type { TaskFormat } from "#shared/contract/formats.js";
import { backwardTaskId, isBackwardTaskId, taskFolder } from "#shared/task-id.js";
import { kernelsDir } from "../paths.js";
import { kindOf, listFolder, readText } from "./files.js";

/**
 * `path` is what the harness is given (a robust-kbench backward task ends in `#backward`);
 * `folder` is the task's file or folder on disk.
 */
export type DiscoveredTask = {
  name: string;
  format: TaskFormat;
  path: string;
  folder: string;
  backward: boolean;
};

const SKIPPED_FOLDERS = new Set(["node_modules", "__pycache__", "dist"]);

/** The task a file or folder is (its forward task), or null when it is none. */
export async function classifyTask(path: string): Promise<DiscoveredTask | null> {
  const kind = await kindOf(path);
  if (kind === "file") return (await isKernelBench(path)) ? kernelBenchTask(path) : null;
  if (kind !== "folder") return null;
  const task = { name: basename(path), path, folder: path, backward: false };
  if (await isFile(join(path, "task.json"))) return { ...task, format: "native" };
  if (await isFile(join(path, "func_forward.py"))) return { ...task, format: "robust-kbench" };
  return null;
}

/** A robust-kbench folder's backward task, or null when it has no func_backward.py. */
async function backwardTask(task: DiscoveredTask): Promise<DiscoveredTask | null> {
  if (task.format !== "robust-kbench") return null;
  if (!(await isFile(join(task.folder, "func_backward.py")))) return null;
  return {
    ...task,
    name: backwardTaskId(task.name),
    path: backwardTaskId(task.folder),
    backward: true,
  };
}

/** Every task at or under the given paths, each once, sorted by path. */
export async function discoverTasks(paths: readonly string[]): Promise<DiscoveredTask[]> {
  const found = new Map<string, DiscoveredTask>();
  for (const path of paths) {
    for (const task of await tasksUnder(resolve(path))) found.set(task.path, task);
  }
  return [...found.values()].sort((a, b) => a.path.localeCompare(b.path));
}

async function tasksUnder(path: string): Promise<DiscoveredTask[]> {
  const task = await classifyTask(path);
  if (task !== null) {
    const backward = await backwardTask(task);
    return backward === null ? [task] : [task, backward];
  }
  const entries = await listFolder(path);
  const nested = await Promise.all(
    entries
      .filter((entry) => !entry.name.startsWith(".") && !SKIPPED_FOLDERS.has(entry.name))
      .filter((entry) => entry.folder || entry.name.endsWith(".py"))
      .map((entry) => tasksUnder(join(path, entry.name))),
  );
  return nested.flat();
}

/**
 * A task named on the command line: a path to one, or the name of a folder under ./kernels
 * (then under the repository's kernels/); `…#backward` names a robust-kbench folder's
 * backward task.
 */
export async function resolveTask(
  nameOrPath: string,
  cwd = process.cwd(),
): Promise<DiscoveredTask> {
  if (isBackwardTaskId(nameOrPath)) {
    const forward = await resolveTask(taskFolder(nameOrPath), cwd);
    const backward = await backwardTask(forward);
    if (backward !== null) return backward;
    throw new UsageError(
      forward.format === "robust-kbench"
        ? `${forward.folder} has no func_backward.py, so it has no backward task: name the folder alone for its forward task`
        : `${nameOrPath}: only robust-kbench folders have a #backward task (a native task declares "backward": true in its task.json)`,
    );
  }
  const asPath = resolve(cwd, nameOrPath);
  if (await exists(asPath)) {
    const task = await classifyTask(asPath);
    if (task !== null) return task;
    throw new UsageError(
      `${nameOrPath} is not a task: give a folder with task.json or func_forward.py, ` +
        "or a KernelBench .py file (class Model, def get_inputs)",
    );
  }
  for (const folder of [join(cwd, "kernels"), kernelsDir()]) {
    const task = await classifyTask(join(folder, nameOrPath));
    if (task !== null) return task;
  }
  const guess = await nearestTask(nameOrPath, cwd);
  const hint = guess === undefined ? ": give" : `; did you mean "${guess}"? Or give`;
  throw new UsageError(
    `no task "${nameOrPath}"${hint} a path to a task, or the name of a folder under ./kernels ` +
      "(list them with `evokernel tasks`)",
  );
}

/**
 * The task a mistyped name most likely meant: for a path, a task beside it in the folder it
 * names (`mine/sotfmax` → `mine/softmax`); for a bare name, one under ./kernels or the
 * repository's kernels/ (the folders a name is looked up in).
 */
async function nearestTask(nameOrPath: string, cwd: string): Promise<string | undefined> {
  const typed = nameOrPath.replace(/[/\\]+$/, "");
  const at = Math.max(typed.lastIndexOf("/"), typed.lastIndexOf("\\"));
  const folders = at === -1 ? [join(cwd, "kernels"), kernelsDir()] : [resolve(cwd, dirname(typed))];
  const names = new Set<string>();
  for (const folder of folders) {
    for (const entry of await listFolder(folder)) {
      if (entry.name.startsWith(".") || names.has(entry.name)) continue;
      if ((await classifyTask(join(folder, entry.name))) !== null) names.add(entry.name);
    }
  }
  const guess = closest(typed.slice(at + 1), [...names]);
  return guess === undefined ? undefined : `${typed.slice(0, at + 1)}${guess}`;
}

async function isKernelBench(path: string): Promise<boolean> {
  if (!path.endsWith(".py")) return false;
  const text = await readText(path).catch(() => "");
  return /^class Model\b/m.test(text) && /^def get_inputs\b/m.test(text);
}

function kernelBenchTask(path: string): DiscoveredTask {
  return {
    name: basename(path, ".py"),
    format: "kernelbench",
    path,
    folder: path,
    backward: false,
  };
}

async function isFile(path: string): Promise<boolean> {
  return (await kindOf(path)) === "file";
}

async function exists(path: string): Promise<boolean> {
  return (await kindOf(path)) !== null;
}
