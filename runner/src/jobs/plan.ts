// Which tasks a job works on, found in the two commits themselves: the task folders of
// head (and base) written out of git, the tasks discovered there, and the ones whose files
// changed between them (or the ones the job names).
import { join, relative, sep } from "node:path";
import { selectChangedTasks } from "#shared/changed-tasks.js";
import { DEFAULT_CONFIG } from "#shared/config.js";
import type { JobSpec } from "#shared/job.js";
import { taskFolder } from "#shared/task-id.js";
import type { Git } from "../git.js";
import type { TaskFormat } from "#shared/contract/formats.js";
import { discoverTasks, type DiscoveredTask } from "../workspace/discover.js";
import { writeTree, type Tree } from "../workspace/checkout.js";

export type PlannedTask = {
  /** Relative to the repository root (a robust-kbench backward task ends in #backward). */
  path: string;
  name: string;
  format: TaskFormat;
  /** The files of the task differ between base and head (always true without a base). */
  changed: boolean;
  /** The task in the head tree, or null when head removed it. */
  head: DiscoveredTask | null;
  /** The task in the base tree, or null when it is new (or the job has no base). */
  base: DiscoveredTask | null;
};

/** `ignored`: paths the job named that hold no task at either commit. */
export type Plan = { head: Tree; base: Tree | null; tasks: PlannedTask[]; ignored: string[] };

export async function planJob(git: Git, spec: JobSpec, work: string): Promise<Plan> {
  const named = spec.tasks.map(taskFolder);
  const roots = named.length > 0 ? named : (spec.roots ?? DEFAULT_CONFIG.tasks);
  const head = await writeTree(git, spec.sha, roots, join(work, "head"));
  // A pull request changes what its merge base had (GitHub's three-dot diff): the base
  // branch may have moved on since, and those changes are not the pull request's.
  const baseCommit =
    spec.baseSha === undefined
      ? null
      : ((await git.mergeBase(spec.baseSha, spec.sha)) ?? spec.baseSha);
  const base =
    baseCommit === null ? null : await writeTree(git, baseCommit, roots, join(work, "base"));
  const headTasks = await discoverIn(head);
  const baseTasks = base === null ? new Map<string, DiscoveredTask>() : await discoverIn(base);
  const changed = base === null ? null : await git.changedFiles(base.commit, head.commit);

  const touched =
    changed === null
      ? [...headTasks.keys()].map((path) => ({ path, inBase: false, inHead: true }))
      : selectChangedTasks({
          changed,
          baseTasks: [...baseTasks.keys()].map((path) => ({ path })),
          headTasks: [...headTasks.keys()].map((path) => ({ path })),
          paths: spec.paths,
        });
  const touchedPaths = new Set(touched.map((task) => task.path));
  const known = [...new Set([...headTasks.keys(), ...baseTasks.keys()])].sort();
  // A named folder that is no task itself stands for the tasks under it.
  const expanded = spec.tasks.map((path) => ({
    path,
    tasks: known.includes(path) ? [path] : known.filter((task) => task.startsWith(`${path}/`)),
  }));
  const selected =
    spec.tasks.length > 0
      ? [...new Set(expanded.flatMap((entry) => entry.tasks))]
      : touched.map((task) => task.path);

  return {
    head,
    base,
    ignored: expanded.filter((entry) => entry.tasks.length === 0).map((entry) => entry.path),
    tasks: selected.flatMap((path) => {
      const inHead = headTasks.get(path) ?? null;
      const inBase = baseTasks.get(path) ?? null;
      const either = inHead ?? inBase;
      if (either === null) return [];
      return [
        {
          path,
          name: either.name,
          format: either.format,
          changed: changed === null || touchedPaths.has(path),
          head: inHead,
          base: inBase,
        },
      ];
    }),
  };
}

/** The tasks under a tree's roots, by their path relative to the repository root. */
async function discoverIn(tree: Tree): Promise<Map<string, DiscoveredTask>> {
  const found = await discoverTasks(tree.roots.map((root) => join(tree.dir, ...root.split("/"))));
  return new Map(found.map((task) => [relative(tree.dir, task.path).split(sep).join("/"), task]));
}
