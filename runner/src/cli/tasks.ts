// evokernel tasks: find tasks, check native ones against the schema, and with --probe have
// the harness load each one and run its reference.
import { join, relative, resolve } from "node:path";
import { ForkServer, inspectTask } from "../harness/client.js";
import { findPython, requirePython } from "../harness/exec.js";
import { kernelsDir } from "../paths.js";
import { renderTasks, type TaskRow } from "../render/tasks-table.js";
import { checkNativeTask } from "../workspace/native-task.js";
import { discoverTasks, type DiscoveredTask } from "../workspace/discover.js";
import { flag, printJson, type Command } from "./command.js";
import { requireWritableCache } from "../pipeline/session.js";
import { allowRead } from "../sandbox/sandbox.js";
import { existsNow } from "../workspace/files.js";

export const tasksCommand: Command = {
  name: "tasks",
  usage: `usage: evokernel tasks [PATH…] [--probe] [--json]

Finds tasks under each PATH (default ./kernels): folders with task.json, robust-kbench
folders (func_forward.py) and KernelBench .py files. Native tasks are checked against the
task schema; --probe also has the harness load every task and run its reference on the
smallest configuration (needs Python with torch; no GPU).

      --probe   load each task in the harness and run its reference
      --json    print one JSON document: { tasks: [...] }

exit: 0 all tasks usable, 1 a task invalid or its probe failed, 2 usage,
      3 no Python with torch (--probe), 4 internal error`,
  options: { probe: { type: "boolean" }, json: { type: "boolean" } },
  async run(parsed, io) {
    const paths =
      parsed.positionals.length > 0
        ? parsed.positionals.map((path) => resolve(io.cwd, path))
        : [defaultKernels(io.cwd)];
    const found = await discoverTasks(paths);
    for (const task of found) allowRead(task.folder);
    const checked = await Promise.all(
      found.map(async (task) => ({ task, row: await checkedRow(task, io.cwd) })),
    );
    const say = (line: string) => io.stderr(`${line}\n`);
    const rows = flag(parsed, "probe")
      ? await probeRows(checked, say)
      : await inspectRows(checked, say);
    if (flag(parsed, "json")) printJson(io, { tasks: rows });
    else io.stdout(`${renderTasks(rows)}\n`);
    return rows.every(usable) ? 0 : 1;
  },
};

function defaultKernels(cwd: string): string {
  const local = join(cwd, "kernels");
  return existsNow(local) ? local : kernelsDir();
}

function usable(row: TaskRow): boolean {
  return row.problems.length === 0 && row.probe?.ok !== false;
}

async function checkedRow(task: DiscoveredTask, cwd: string): Promise<TaskRow> {
  const row: TaskRow = {
    name: task.name,
    format: task.format,
    path: relative(cwd, task.path) || ".",
    configs: null,
    heldout: null,
    backward: task.format === "kernelbench" ? false : task.backward || null,
    problems: [],
    probe: null,
    notes: [],
  };
  if (task.format !== "native") return row;
  const checked = await checkNativeTask(task.path);
  if (!checked.ok) return { ...row, problems: checked.errors };
  const { name, configs, heldout, backward } = checked.task;
  return { ...row, name, configs: configs.length, heldout: heldout.length, backward };
}

type Checked = readonly { task: DiscoveredTask; row: TaskRow }[];

/**
 * Without --probe: only the harness can count a KernelBench or robust-kbench task's
 * configurations (it derives or expands them), so those tasks are loaded, not run, when a
 * Python with torch is here; without one their counts stay "?" and a note says why.
 */
async function inspectRows(checked: Checked, say: Say): Promise<TaskRow[]> {
  const needsHarness = checked.some(
    ({ task, row }) => task.format !== "native" && row.problems.length === 0,
  );
  if (!needsHarness) return checked.map(({ row }) => row);
  if ((await findPython()) === null) {
    const note =
      "configurations: counted by the harness, which needs a Python with torch (EVOKERNEL_PYTHON)";
    return checked.map(({ task, row }) =>
      task.format === "native" ? row : { ...row, notes: [note] },
    );
  }
  return harnessRows(checked, false, say);
}

/** Loads every schema-valid task in one fork server, one after another. */
function probeRows(checked: Checked, say: Say): Promise<TaskRow[]> {
  return harnessRows(checked, true, say);
}

type Say = (line: string) => void;

async function harnessRows(checked: Checked, probe: boolean, say: Say): Promise<TaskRow[]> {
  // The first answer waits for torch's import; say so at once rather than sit silent.
  await requirePython();
  await requireWritableCache();
  say("starting the harness: Python imports torch (10–30 s) …");
  const server = new ForkServer();
  try {
    const rows: TaskRow[] = [];
    const loaded = checked.filter(
      ({ task, row }) => row.problems.length === 0 && (probe || task.format !== "native"),
    );
    for (const { task, row } of checked) {
      if (row.problems.length > 0 || (!probe && task.format === "native")) {
        rows.push(row);
        continue;
      }
      const index = loaded.findIndex((entry) => entry.task === task) + 1;
      say(`${probe ? "probing" : "loading"} ${task.name} (${index}/${loaded.length}) …`);
      const info = await inspectTask(task.path, { probe, runner: server.run });
      rows.push({
        ...row,
        name: task.backward ? task.name : info.name,
        configs: info.configs.filter((config) => !config.heldout).length,
        heldout: info.configs.filter((config) => config.heldout).length,
        backward: info.backward,
        // A failed probe is reported as the probe, not again as a problem.
        problems:
          info.ok || info.probe?.ok === false
            ? []
            : [info.error ?? "the harness could not load the task"],
        probe: info.probe,
        notes: info.notes,
      });
    }
    return rows;
  } finally {
    await server.close();
  }
}
