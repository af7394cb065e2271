// The pure planner: a pull request's changed files and the repository's config in, the
// tasks to review out. No I/O; the handlers fetch, this decides.
import type { EvokernelConfig } from "../shared/config.js";
import { touchedTasks } from "../shared/changed-tasks.js";
import { globMatcher, isGlob } from "../shared/glob.js";

export interface ChangedFile {
  readonly filename: string;
  /** A rename's old path: a task moved away from also changed. */
  readonly previousFilename?: string;
}

/**
 * none: nothing of a kernel task changed (stay quiet); tasks: these task paths; all: a file
 * outside every task that `paths` marks (a shared header) changed, so every task is reviewed.
 */
export type TaskPlan =
  | { readonly kind: "none" }
  | { readonly kind: "tasks"; readonly tasks: readonly string[] }
  | { readonly kind: "all" };

type TaskRootConfig = Pick<EvokernelConfig, "tasks" | "paths">;

/**
 * GitHub lists at most this many files of a pull request (pulls.listFiles, every page); a
 * list this long may be cut short, so the files past it are never seen here.
 */
export const LISTED_FILES_CAP = 3000;

/**
 * Which tasks the changed files touch (a rename's old path too), by the config's `tasks` roots
 * and `paths` globs: the rule is `touchedTasks`, the one `evokernel review` uses.
 */
export function planTasks(config: TaskRootConfig, files: readonly ChangedFile[]): TaskPlan {
  const changed = files.flatMap((file) =>
    file.previousFilename === undefined ? [file.filename] : [file.filename, file.previousFilename],
  );
  const { tasks, outside } = touchedTasks(
    changed,
    (path) => {
      const task = taskOf(config.tasks, path);
      return task === undefined ? [] : [task];
    },
    config.paths,
  );
  // A list GitHub may have cut: the runner's own git diff (a job with no tasks named)
  // finds the changed tasks among all of them, so a task past file 3,000 is not missed.
  if (outside || files.length >= LISTED_FILES_CAP) return { kind: "all" };
  if (tasks.size === 0) return { kind: "none" };
  return { kind: "tasks", tasks: [...tasks].sort() };
}

/**
 * The task a file belongs to: under a folder root (`kernels`), the root's child folder
 * (`kernels/softmax`) or a KernelBench `.py` file directly in the root; under a glob root
 * (`ops/*`), the path prefix the glob matches.
 */
export function taskOf(roots: readonly string[], path: string): string | undefined {
  const segments = path.split("/");
  for (const root of roots) {
    const clean = root.replace(/^\.?\/+/, "").replace(/\/+$/, "");
    if (isGlob(clean)) {
      const match = globMatcher(clean);
      for (let depth = 1; depth <= segments.length; depth++) {
        const prefix = segments.slice(0, depth).join("/");
        if (match(prefix)) return prefix;
      }
      continue;
    }
    if (!path.startsWith(`${clean}/`)) continue;
    const rest = path.slice(clean.length + 1).split("/");
    if (rest.length > 1) return `${clean}/${rest[0] ?? ""}`;
    if (path.endsWith(".py")) return path;
  }
  return undefined;
}

/** Task names a command gives (`softmax`, `kernels/softmax`) as task paths under the roots. */
export function resolveTaskNames(roots: readonly string[], names: readonly string[]): string[] {
  const folderRoot = roots.find((root) => !isGlob(root));
  return names.map((name) => {
    if (name.includes("/") || folderRoot === undefined) return name;
    return `${folderRoot.replace(/\/+$/, "")}/${name}`;
  });
}
