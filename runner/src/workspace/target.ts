// The task a run works on, checked before any Python starts, and its candidates. A native
// task's task.json is read here, once per run: `spec` carries it to whatever needs it (the
// tunables, the reference, the tolerance), so nothing reads it again.
import { join, resolve } from "node:path";
import { TaskError, UsageError } from "../errors.js";
import { allowRead } from "../sandbox/sandbox.js";
import type { Task } from "../tasks/schema.js";
import { resolveTask, type DiscoveredTask } from "./discover.js";
import { kindOf } from "./files.js";
import { checkNativeTask } from "./native-task.js";

/** `spec`: a native task's task.json, parsed (null for the other formats). */
export type Target = { task: DiscoveredTask; spec: Task | null; baseline: string | null };

export async function loadTarget(nameOrPath: string | undefined, cwd: string): Promise<Target> {
  if (nameOrPath === undefined)
    throw new UsageError("name a task (a path, or a folder under ./kernels)");
  const task = await resolveTask(nameOrPath, cwd);
  allowRead(task.folder);
  if (task.format !== "native") return { task, spec: null, baseline: null };
  const checked = await checkNativeTask(task.path);
  if (!checked.ok)
    throw new TaskError(
      `task ${task.name} is invalid:\n${checked.errors.map((line) => `  - ${line}`).join("\n")}`,
    );
  const kernel = checked.task.kernel;
  return {
    task,
    spec: checked.task,
    baseline: kernel === undefined ? null : join(task.path, kernel),
  };
}

/** The task as harness calls take it: its path and, for a native task, its task.json as read here. */
export function taskRef(target: Target): { path: string; spec: Task | null } {
  return { path: target.task.path, spec: target.spec };
}

/** The given candidate files (each must exist), or the task's own kernel when none is given. */
export async function candidatesFor(
  target: Target,
  given: readonly string[],
  cwd: string,
): Promise<string[]> {
  if (given.length === 0) {
    if (target.baseline !== null) return [target.baseline];
    throw new UsageError(
      `task ${target.task.name} has no kernel of its own: pass --candidate FILE`,
    );
  }
  const files = given.map((file) => resolve(cwd, file));
  for (const file of files) {
    if ((await kindOf(file)) === null) throw new UsageError(`candidate ${file} does not exist`);
    // The file, not its folder: the build reads the file alone (it compiles and loads a copy),
    // and a folder such as /tmp or a home folder, shown whole, covered the sandbox's own /tmp
    // (no temporary folder: every command failed) and showed the candidate every file beside it.
    allowRead(file);
  }
  return files;
}
