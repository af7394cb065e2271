// The contract as JSON Schemas for the harness (runner/harness/evokernel_harness/contract/,
// written by `npm run contract`, checked against these by test/shared/contract/contract.test.ts): file name →
// schema. Records are described as the harness writes them (io "input": fields with a
// default may be absent).
import { z } from "zod";
import { DTYPES, FLOAT_DTYPES, INITS, TASK_DTYPES } from "./dtypes.js";
import { EXPRESSION_CASES, EXPRESSION_GRAMMAR } from "./expressions.js";
import { CANDIDATE_FORMATS, FORMAT_DETECTION_CASES, TASK_FORMATS } from "./formats.js";
import {
  EVALUATE_STAGES,
  harnessCommandSchema,
  harnessRequestSchema,
  harnessResponseSchema,
  harnessStartedSchema,
  harnessWaitingSchema,
} from "./harness-request.js";
import {
  benchRecordSchema,
  buildRecordSchema,
  deviceRecordSchema,
  staticContextSchema,
  staticRecordSchema,
  taskInfoSchema,
  verifyRecordSchema,
} from "./records.js";
import { hackClassesSchema, REASONS } from "./reasons.js";

const SOURCE = "src/shared/contract";

function schemaOf(type: z.ZodType, title: string): Record<string, unknown> {
  return { ...z.toJSONSchema(type, { io: "input" }), title, $comment: `generated from ${SOURCE}` };
}

function enumOf(values: readonly string[], title: string): Record<string, unknown> {
  return schemaOf(z.enum(values as [string, ...string[]]), title);
}

/** Every file of the generated contract folder, by name, as its JSON value. */
export function contractJsonSchemas(): Record<string, unknown> {
  return {
    "task-record.schema.json": schemaOf(taskInfoSchema, "inspect record (TaskInfo)"),
    "static-record.schema.json": schemaOf(staticRecordSchema, "static record"),
    "static-context.schema.json": schemaOf(staticContextSchema, "static-context record"),
    "build-record.schema.json": schemaOf(buildRecordSchema, "build record"),
    "verify-record.schema.json": schemaOf(verifyRecordSchema, "verify record"),
    "bench-record.schema.json": schemaOf(benchRecordSchema, "bench record"),
    "device-record.schema.json": schemaOf(deviceRecordSchema, "device record"),
    "harness-command.schema.json": schemaOf(harnessCommandSchema, "harness command request"),
    "harness-request.schema.json": schemaOf(harnessRequestSchema, "fork server request"),
    "harness-response.schema.json": schemaOf(
      z.union([harnessResponseSchema, harnessStartedSchema, harnessWaitingSchema]),
      "fork server answer (started, waiting, or the child's end)",
    ),
    "evaluate-stage.schema.json": enumOf(EVALUATE_STAGES, "evaluate's stages, in order"),
    "candidate-format.schema.json": enumOf(CANDIDATE_FORMATS, "candidate format"),
    "task-format.schema.json": enumOf(TASK_FORMATS, "task format"),
    "dtype.schema.json": enumOf(DTYPES, "dtype the harness names"),
    "task-dtype.schema.json": enumOf(TASK_DTYPES, "dtype a native task may declare"),
    "float-dtype.schema.json": enumOf(FLOAT_DTYPES, "floating dtype"),
    "init.schema.json": enumOf(INITS, "input initialisation"),
    "reason.schema.json": enumOf(REASONS, "verdict reason code"),
    "hack-classes.schema.json": schemaOf(hackClassesSchema, "hack class of each hack reason"),
    "expression-grammar.json": {
      $comment: `generated from ${SOURCE}/expressions.ts: task.json's arithmetic (tokens, operators by level)`,
      ...EXPRESSION_GRAMMAR,
    },
    "expression-cases.json": {
      $comment: `generated from ${SOURCE}/expressions.ts: each source gives value, or an error`,
      cases: EXPRESSION_CASES,
    },
    "format-detection.json": {
      $comment: `generated from ${SOURCE}/formats.ts: each source must be detected as format (null: refused)`,
      cases: FORMAT_DETECTION_CASES,
    },
  };
}

/** A file's text as written: two-space JSON and a final newline. */
export function contractFileText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}
