// The field rules of task.json (docs/DESIGN.md "Native task"): each key's type, range and
// message. The rules that span fields are cross-field.ts's; schema.ts joins the two.
// Every message says what to fix, and the issue path says where.
import { z } from "zod";
import { ExpressionError, parseExpression } from "./expression.js";
import { FLOAT_DTYPES, INITS, TASK_DTYPES as DTYPES } from "#shared/contract/dtypes.js";

function strict<T extends z.ZodRawShape>(what: string, shape: T) {
  const allowed = Object.keys(shape);
  // A misspelt key is the usual cause ("heldOut"): name the key it was probably meant to be.
  const describeKey = (key: string) => {
    const meant = allowed.find((name) => name.toLowerCase() === key.toLowerCase());
    return meant === undefined ? `"${key}"` : `"${key}" (did you mean "${meant}"?)`;
  };
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `${what} has unknown key(s) ${issue.keys.map(describeKey).join(", ")}; ` +
          `allowed: ${allowed.join(", ")}`
        : undefined,
  });
}

const expression = z.string().superRefine(function checkExpression(text, ctx) {
  try {
    parseExpression(text);
  } catch (error) {
    if (!(error instanceof ExpressionError)) throw error;
    ctx.addIssue({
      code: "custom",
      message: `${error.message}: write arithmetic over dimension names`,
    });
  }
});

const dimName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "a dimension name is a letter or _ then letters, digits, _");

const dtype = z.enum(DTYPES, { error: `dtype is one of ${DTYPES.join(", ")}` });
const floatDtype = z.enum(FLOAT_DTYPES, {
  error: `a configuration's dtype overrides the float inputs: one of ${FLOAT_DTYPES.join(", ")}`,
});
const namedInit = z.enum(INITS, { error: `init is one of ${INITS.join(", ")}` });

const bound = z.union([z.int(), expression], {
  error: "a randint bound is an integer or an expression over dimension names",
});
const inputInit = z.union([namedInit, strict("init", { randint: z.tuple([bound, bound]) })], {
  error: `init is one of ${INITS.map((init) => `"${init}"`).join(", ")} or { "randint": [lo, hi] }`,
});

const shapeEntry = z.union([z.int().positive(), expression], {
  error: 'a shape entry is a positive integer or a dimension name/expression ("N", "N/2")',
});

const input = strict("an input", {
  name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an input name is a Python identifier"),
  shape: z.array(shapeEntry).describe("sizes: integers or dimension names/expressions"),
  dtype,
  init: inputInit.optional().describe("how values are drawn (float default: the config's init)"),
  requiresGrad: z.boolean().optional().describe("backward tasks: compare this input's gradient"),
});

const config = strict("a configuration", {
  name: z.string().regex(/^[A-Za-z0-9_.x-]+$/, "a configuration name is letters, digits, _ . x -"),
  dims: z.record(
    dimName,
    z
      .int({ error: "a dimension is a positive integer" })
      .positive("a dimension is a positive integer"),
  ),
  init: namedInit.optional().describe("default init of float inputs that declare none"),
  dtype: floatDtype.optional().describe("overrides the dtype of every float input"),
});

const tolerance = strict("a tolerance", {
  atol: z.number().nonnegative().optional(),
  rtol: z.number().nonnegative().optional(),
  norm: z.number().nonnegative().optional(),
});

const estimate = z.union([z.number().nonnegative(), expression], {
  error: "flops and bytes are a number or an expression over dimension names",
});

export const taskShape = strict("task.json", {
  $schema: z.string().optional(),
  name: z.string().regex(/^[a-z0-9_-]+$/, "a task name is lower-case letters, digits, _ and -"),
  description: z.string().optional(),
  reference: z
    .string()
    .min(1)
    .default("reference.py")
    .describe("Python file defining forward(*inputs) (or backward)"),
  kernel: z.string().min(1).optional().describe("the baseline kernel, in any candidate format"),
  backward: z.boolean().default(false).describe("the function under test is the backward pass"),
  libraries: z
    .enum(["allow", "deny"])
    .default("allow")
    .describe(
      "allow: a candidate may call vendor libraries (cuBLAS through at::mm) for part of the work; deny: no library or reference kernel may run (the strict benchmark rule)",
    ),
  inputs: z.array(input).min(1, "a task needs at least one input"),
  configs: z
    .array(config)
    .min(
      2,
      "a task needs at least 2 visible configurations (one of them with a size dividing by neither 32 nor 8)",
    ),
  heldout: z.array(config).default([]).describe("configurations used only in final verification"),
  tolerance: z.partialRecord(dtype, tolerance).optional().describe("per-dtype overrides"),
  flops: estimate.optional().describe("flops of one call, for the roofline floor"),
  bytes: estimate
    .optional()
    .describe("bytes moved by one call (default: inputs read + outputs written)"),
  tunables: z
    .record(
      z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "a tunable is a C macro name"),
      z.array(z.union([z.int(), z.string()])).min(1, "a tunable lists at least one value"),
    )
    .optional()
    .describe("-D values an offline tuner may try"),
  constraints: z
    .array(z.string().min(1))
    .optional()
    .describe(
      'rules every combination of tunables the tuner tries must satisfy: C-like expressions over the tunables\' names (integers, + - * / %, comparisons, && || !, parentheses), e.g. "THREADS_PER_ROW * ROWS_PER_BLOCK <= 1024"',
    ),
});

/** task.json after the field rules, before the cross-field ones. */
export type TaskShape = z.infer<typeof taskShape>;
