// The rules of task.json that span fields: names bound in every configuration, shapes that
// come out whole, an odd-sized configuration, gradients for backward tasks. Each issue says
// what to fix, at the path where the fix goes.
import { parseConstraint } from "./constraints.js";
import { parseExpression, type Expression } from "./expression.js";
import { FLOAT_DTYPES } from "#shared/contract/dtypes.js";
import type { TaskShape } from "./fields.js";

type Path = (string | number)[];
type Issue = { message: string; path: Path };
type Use = { name: string; where: string; path: Path };

export function crossFieldIssues(task: TaskShape): Issue[] {
  const uses = dimensionUses(task);
  return [
    ...duplicateNames(
      task.inputs.map((item, index) => ({ name: item.name, path: ["inputs", index, "name"] })),
      "input",
    ),
    ...duplicateNames(
      [
        ...task.configs.map((item, index) => ({
          name: item.name,
          path: ["configs", index, "name"],
        })),
        ...task.heldout.map((item, index) => ({
          name: item.name,
          path: ["heldout", index, "name"],
        })),
      ],
      "configuration",
    ),
    ...unboundDimensions(task, uses),
    ...wholeShapes(task),
    ...oddSizeRule(task),
    ...gradientRules(task),
    ...constraintRules(task),
  ];
}

/** Each constraint parses and reads only declared tunables. */
function constraintRules(task: TaskShape): Issue[] {
  const names = new Set(Object.keys(task.tunables ?? {}));
  return (task.constraints ?? []).flatMap(function checkConstraint(text, index): Issue[] {
    const path = ["constraints", index];
    if (names.size === 0) return [{ message: "constraints need tunables to constrain", path }];
    try {
      const unknown = parseConstraint(text).names.filter((name) => !names.has(name));
      if (unknown.length > 0) {
        return [
          { message: `names no tunable: ${unknown.join(", ")} (declare it in "tunables")`, path },
        ];
      }
    } catch (err) {
      return [{ message: (err as Error).message, path }];
    }
    return [];
  });
}

function duplicateNames(named: { name: string; path: Path }[], what: string): Issue[] {
  const seen = new Set<string>();
  return named.flatMap(function flagRepeat({ name, path }) {
    if (!seen.has(name)) {
      seen.add(name);
      return [];
    }
    return [{ message: `${what} name "${name}" is used twice: names must be unique`, path }];
  });
}

export function pathText(path: readonly (string | number)[]): string {
  return path
    .map((part, index) => (typeof part === "number" ? `[${part}]` : `${index ? "." : ""}${part}`))
    .join("");
}

/** The parsed expression, or null when it does not parse (reported where the text is). */
function tryParse(text: string): Expression | null {
  try {
    return parseExpression(text);
  } catch {
    return null;
  }
}

/** Every dimension name used, with where it is used. */
function dimensionUses(task: TaskShape): Use[] {
  const texts: { text: string; path: Path }[] = [];
  task.inputs.forEach((item, index) => {
    item.shape.forEach((entry, axis) => {
      if (typeof entry === "string")
        texts.push({ text: entry, path: ["inputs", index, "shape", axis] });
    });
    const randint = typeof item.init === "object" ? item.init.randint : [];
    randint.forEach((entry, side) => {
      if (typeof entry === "string") {
        texts.push({ text: entry, path: ["inputs", index, "init", "randint", side] });
      }
    });
  });
  for (const key of ["flops", "bytes"] as const) {
    const value = task[key];
    if (typeof value === "string") texts.push({ text: value, path: [key] });
  }
  return texts.flatMap(({ text, path }) =>
    (tryParse(text)?.names ?? []).map((name) => ({ name, where: pathText(path), path })),
  );
}

type Located = { config: TaskShape["configs"][number]; path: Path };

/** Visible and held-out configurations, each with its path. */
function everyConfig(task: TaskShape): Located[] {
  const visible = task.configs.map((config, index): Located => ({
    config,
    path: ["configs", index],
  }));
  const heldout = task.heldout.map((config, index): Located => ({
    config,
    path: ["heldout", index],
  }));
  return [...visible, ...heldout];
}

function unboundDimensions(task: TaskShape, uses: Use[]): Issue[] {
  return everyConfig(task).flatMap(({ config: item, path }) => {
    const missing = new Map<string, string>();
    for (const use of uses)
      if (!(use.name in item.dims) && !missing.has(use.name)) missing.set(use.name, use.where);
    return [...missing].map(([name, where]) => ({
      message:
        `configuration "${item.name}" does not bind dimension "${name}" (used in ${where}): ` +
        `add "${name}": <positive integer> to ${pathText([...path, "dims"])}`,
      path: [...path, "dims"],
    }));
  });
}

/** Each shape entry must come out a whole, positive number in every configuration. */
function wholeShapes(task: TaskShape): Issue[] {
  return everyConfig(task).flatMap(({ config: item }) =>
    task.inputs.flatMap((entry, index) =>
      entry.shape.flatMap((axis, position) => {
        const parsed = typeof axis === "string" ? tryParse(axis) : null;
        if (parsed === null) return [];
        if (!parsed.names.every((name) => name in item.dims)) return []; // reported as unbound
        const size = parsed.evaluate(item.dims);
        if (Number.isInteger(size) && size > 0) return [];
        return [
          {
            message:
              `shape entry "${axis}" is ${size} in configuration "${item.name}": ` +
              `a size must be a whole, positive number there (change the expression or the dims)`,
            path: ["inputs", index, "shape", position],
          },
        ];
      }),
    ),
  );
}

/** Divides by neither 32 nor 8: not a multiple of 8 (so not of 32 either). */
function isOdd(size: number): boolean {
  return size % 8 !== 0;
}

function oddSizeRule(task: TaskShape): Issue[] {
  if (task.configs.some((item) => Object.values(item.dims).some(isOdd))) return [];
  return [
    {
      message:
        "no visible configuration has a dimension that divides by neither 32 nor 8: add one " +
        '(e.g. { "name": "odd", "dims": { "N": 1999 } }), because kernels that hard-code ' +
        "shapes or skip bounds checks otherwise pass (shape-specific hack)",
      path: ["configs"],
    },
  ];
}

function gradientRules(task: TaskShape): Issue[] {
  const nonFloat = task.inputs.flatMap((item, index) =>
    item.requiresGrad && !(FLOAT_DTYPES as readonly string[]).includes(item.dtype)
      ? [
          {
            message: `input "${item.name}" is ${item.dtype}: only float inputs can have requiresGrad`,
            path: ["inputs", index, "requiresGrad"],
          },
        ]
      : [],
  );
  if (!task.backward || task.inputs.some((item) => item.requiresGrad)) return nonFloat;
  return [
    ...nonFloat,
    {
      message:
        'a backward task needs at least one input with "requiresGrad": true (the gradients to compare)',
      path: ["inputs"],
    },
  ];
}
