// A native task folder checked without Python: task.json against the schema, and the files
// it names. The one place the runner reads a task.json: a run reads it once (loadTarget)
// and passes the parsed task on.
import { join } from "node:path";
import { describeIssues, taskSchema, type Task } from "../tasks/schema.js";
import { kindOf, readText } from "./files.js";

export type TaskCheck = { ok: true; task: Task } | { ok: false; errors: string[] };

/** Parses the text of a task.json; `file` names it in the messages. */
export function checkTaskJson(text: string, file = "task.json"): TaskCheck {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { ok: false, errors: [`${file}: not valid JSON (${(error as Error).message})`] };
  }
  const parsed = taskSchema.safeParse(data);
  if (parsed.success) return { ok: true, task: parsed.data };
  return { ok: false, errors: describeIssues(parsed.error.issues, file) };
}

export async function checkNativeTask(folder: string): Promise<TaskCheck> {
  const file = join(folder, "task.json");
  const text = await readText(file).catch(() => null);
  if (text === null) return { ok: false, errors: [`${file}: cannot be read`] };
  const checked = checkTaskJson(text, file);
  if (!checked.ok) return checked;
  const named = [
    { key: "reference", file: checked.task.reference },
    ...(checked.task.kernel === undefined ? [] : [{ key: "kernel", file: checked.task.kernel }]),
  ];
  const missing = await Promise.all(
    named.map(async ({ key, file: name }) =>
      (await kindOf(join(folder, name))) !== null
        ? []
        : [`${file} ${key}: "${name}" does not exist in ${folder}`],
    ),
  );
  const errors = missing.flat();
  return errors.length === 0 ? checked : { ok: false, errors };
}
