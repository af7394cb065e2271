// The source of a shape-keyed kernel: one evk kernel compiled once per distinct set of
// tunable values, each copy in a namespace of its own with its values written in as
// #defines, and an evk_forward (or evk_backward) that picks the copy from the call's shapes
// (shape-classes.ts). The result is one plain .cu file, built and verified like any
// candidate and readable alone: a header with the table, the copies, the dispatcher. Pure.
//
// How a copy stays apart from the others: the kernel's #include lines are hoisted to the
// top (evokernel.h and the system headers are include-guarded, so each is read once); the
// entry point is renamed by a macro to evk_shape_vN_forward (an extern "C" name is one name
// whatever its namespace); every macro the copy defines is #undef'd after it, so the next
// copy's #ifndef guards see their own values.
import { z } from "zod";
import { allClasses, targetOf, type ClassRule, type ShapeClass } from "./shape-classes.js";
import type { TunableValue } from "./detect-tunables.js";

/** One copy: its source (the tuner's edits applied) and the -D values written in as #defines. */
export type Variant = { source: string; defines: Readonly<Record<string, string>> };

export type ShapeTable = {
  rule: ClassRule;
  /** The kept classes (those with a visible configuration), in the rule's order. */
  classes: string[];
  /** Per class: tunable id → the value chosen. */
  values: Record<string, TunableValue>[];
};

const TABLE_MARK = "evk-shape-table:";

const tableSchema = z.object({
  rule: z.object({ row: z.number().int().nullable(), size: z.number().int().nullable() }),
  classes: z.array(z.string()),
  values: z.array(z.record(z.string(), z.union([z.number(), z.string(), z.null()]))),
});

/** The entry point a kernel defines, or null for a kernel this cannot wrap. */
export function entryOf(source: string): "evk_forward" | "evk_backward" | null {
  if (/\bPYBIND11_MODULE\b/.test(source)) return null;
  if (/\bevk_backward\s*\(/.test(source)) return "evk_backward";
  if (/\bevk_forward\s*\(/.test(source)) return "evk_forward";
  return null;
}

/**
 * The dispatching source. `variants[classVariant[k]]` serves kept class k; `labels[k]` says
 * what that class's values are, for the header.
 */
export function dispatchSource(options: {
  baseline: string;
  table: ShapeTable;
  kept: readonly ShapeClass[];
  variants: readonly Variant[];
  classVariant: readonly number[];
  labels: readonly string[];
}): string {
  const { baseline, table, kept, variants, classVariant, labels } = options;
  const entry = entryOf(baseline);
  if (entry === null) throw new Error("dispatchSource needs an evk kernel (evk_forward/backward)");
  const suffix = entry === "evk_forward" ? "forward" : "backward";
  const includes = [
    ...new Set(
      baseline
        .split("\n")
        .filter(isInclude)
        .map((l) => l.trim()),
    ),
  ];

  const header = [
    "// Shape-keyed build (evokernel's tuner): the kernel below is compiled once per set of",
    "// tunable values, each copy in its own namespace, and " +
      `${entry} picks the copy from the call's`,
    "// first input (its last dimension is the row length). The table:",
    ...kept.map((cls, k) => `//   ${cls.id.padEnd(22)} → copy v${classVariant[k]}: ${labels[k]}`),
    `// ${TABLE_MARK} ${JSON.stringify(table)}`,
    ...includes,
    "",
  ];

  const copies = variants.map((variant, v) => {
    const body = variant.source
      .split("\n")
      .filter((line) => !isInclude(line))
      .join("\n")
      .replace(/\n+$/, "");
    const defined = [
      ...Object.keys(variant.defines),
      ...[...body.matchAll(/^[ \t]*#[ \t]*define[ \t]+(\w+)/gm)].map((m) => m[1] ?? ""),
    ].filter((name, i, all) => name !== "" && all.indexOf(name) === i);
    const served = kept.filter((_, k) => classVariant[k] === v).map((cls) => cls.id);
    return [
      `// ---- copy v${v}: ${served.join(", ")} ----`,
      `namespace evk_shape_v${v} {`,
      `#define ${entry} evk_shape_v${v}_${suffix}`,
      ...Object.entries(variant.defines).map(([name, value]) => `#define ${name} ${value}`),
      body,
      `#undef ${entry}`,
      ...defined.map((name) => `#undef ${name}`),
      `}  // namespace evk_shape_v${v}`,
      "",
    ].join("\n");
  });

  const branches = allClasses(table.rule).map((cls) => {
    const v = classVariant[targetOf(cls, kept)] ?? 0;
    const call = `return evk_shape_v${v}::evk_shape_v${v}_${suffix}(call);`;
    const tests = [
      cls.short === null ? null : `row ${cls.short ? "<=" : ">"} ${table.rule.row}`,
      cls.small === null ? null : `size ${cls.small ? "<=" : ">"} ${table.rule.size}`,
    ].filter((test): test is string => test !== null);
    return { id: cls.id, tests, call };
  });
  const dispatcher = [
    `extern "C" int ${entry}(const EvkCall* call) {`,
    "  const EvkTensor* first = call->n_inputs > 0 ? &call->inputs[0] : nullptr;",
    "  const int64_t row = first == nullptr || first->ndim == 0 ? 1 : first->shape[first->ndim - 1];",
    "  const int64_t size = first == nullptr ? 0 : evk_numel(first);",
    "  (void)row;",
    "  (void)size;",
    ...branches.map((branch, i) =>
      i === branches.length - 1 || branch.tests.length === 0
        ? `  ${branch.call}  // ${branch.id}`
        : `  if (${branch.tests.join(" && ")}) ${branch.call}  // ${branch.id}`,
    ),
    "}",
    "",
  ];
  return [...header, ...copies, ...dispatcher].join("\n");
}

/** The table a dispatching source carries, or null for any other source. */
export function tableOf(source: string): ShapeTable | null {
  const line = source.split("\n").find((l) => l.includes(TABLE_MARK));
  if (line === undefined) return null;
  try {
    const parsed = tableSchema.safeParse(
      JSON.parse(line.slice(line.indexOf(TABLE_MARK) + TABLE_MARK.length)),
    );
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

function isInclude(line: string): boolean {
  return /^[ \t]*#[ \t]*include\b/.test(line);
}
