// The native task format (task.json, docs/DESIGN.md "Native task") as one zod schema: the
// field rules (fields.ts), the cross-field rules (cross-field.ts), and through z.toJSONSchema
// the published JSON Schema. Every message says what to fix, and the issue path says where.
import { z } from "zod";
import { crossFieldIssues, pathText } from "./cross-field.js";
import { taskShape } from "./fields.js";

export const taskSchema = taskShape.superRefine(function checkAcrossFields(task, ctx) {
  for (const issue of crossFieldIssues(task)) ctx.addIssue({ code: "custom", ...issue });
});
export type Task = z.infer<typeof taskSchema>;
export type TaskInput = Task["inputs"][number];
export type TaskConfig = Task["configs"][number];

/** One line per issue: "<file> <path>: <message>". */
export function describeIssues(issues: readonly z.core.$ZodIssue[], file = "task.json"): string[] {
  return issues.map((issue) => {
    const where = pathText(issue.path.filter((part) => typeof part !== "symbol"));
    return where === "" ? `${file}: ${issue.message}` : `${file} ${where}: ${issue.message}`;
  });
}

/** The JSON Schema of task.json (for editors: "$schema": ".../runner/schema/task.schema.json"). */
export function taskJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(taskSchema, { io: "input" }),
    title: "evokernel native task (task.json)",
    description:
      "Generated from runner/src/tasks/schema.ts by `npm run schema`; cross-field rules " +
      "(dimension names bound in every configuration, an odd-sized configuration, …) are checked by evokernel only.",
  };
}
