// What a person reads after `evokernel tasks`: one row per task, then what is wrong with
// each task that is not usable as written.
import type { TaskInfo } from "#shared/contract/records.js";
import type { TaskFormat } from "#shared/contract/formats.js";
import { renderTable } from "./table.js";

export type TaskRow = {
  name: string;
  format: TaskFormat;
  path: string;
  /** Visible and held-out configurations; null where only the harness can tell. */
  configs: number | null;
  heldout: number | null;
  backward: boolean | null;
  problems: readonly string[];
  probe: TaskInfo["probe"];
  notes: readonly string[];
};

export function renderTasks(rows: readonly TaskRow[]): string {
  if (rows.length === 0) return "no tasks found";
  const table = renderTable(
    ["task", "format", "configs", "held out", "backward", "status", "path"],
    rows.map((row) => [
      row.name,
      row.format,
      row.configs === null ? "?" : String(row.configs),
      row.heldout === null ? "?" : String(row.heldout),
      row.backward === null ? "?" : row.backward ? "yes" : "no",
      status(row),
      row.path,
    ]),
    ["left", "left", "right", "right", "left", "left", "left"],
  );
  const details = rows.flatMap(function detailLines(row) {
    const lines = [
      ...row.problems,
      ...(row.probe?.ok === false ? [row.probe.message] : []),
      ...row.notes,
    ];
    return lines.length === 0
      ? []
      : [`${row.name}:\n${lines.map((line) => `  - ${line}`).join("\n")}`];
  });
  return [table, ...details].join("\n\n");
}

function status(row: TaskRow): string {
  if (row.problems.length > 0) return "invalid";
  if (row.probe === null) return "ok";
  return row.probe.ok ? "ok (probed)" : `probe failed: ${row.probe.reason ?? "error"}`;
}
