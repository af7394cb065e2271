// The task a command works on, checked before any Python starts, and its candidates.
import { access } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { TaskError, UsageError } from "../errors.js";
import { checkNativeTask } from "../tasks/check-native.js";
import { resolveTask, type DiscoveredTask } from "../tasks/discover.js";
import { allowRead } from "../sandbox/sandbox.js";

export type Target = { task: DiscoveredTask; baseline: string | null };

export async function loadTarget(nameOrPath: string | undefined, cwd: string): Promise<Target> {
  if (nameOrPath === undefined)
    throw new UsageError("name a task (a path, or a folder under ./kernels)");
  const task = await resolveTask(nameOrPath, cwd);
  allowRead(task.path);
  if (task.format !== "native") return { task, baseline: null };
  const checked = await checkNativeTask(task.path);
  if (!checked.ok)
    throw new TaskError(
      `task ${task.name} is invalid:\n${checked.errors.map((line) => `  - ${line}`).join("\n")}`,
    );
  const kernel = checked.task.kernel;
  return { task, baseline: kernel === undefined ? null : join(task.path, kernel) };
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
    await access(file).catch(() => {
      throw new UsageError(`candidate ${file} does not exist`);
    });
    allowRead(dirname(file));
  }
  return files;
}
