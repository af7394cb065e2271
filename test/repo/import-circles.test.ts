// No import circles among the TypeScript sources (issue 21.2: tasks/schema.ts and
// cross-field.ts imported each other). Imports are resolved by TypeScript itself, type-only
// ones included: a circle of types still means two modules that cannot be read apart. Nor
// among the folders of runner/src, src and src/app (issue 37.2: nine folders of runner/src
// were one knot): a folder is read as one piece, which folders importing each other are not.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  // the runner's #shared/… imports (package.json "imports") resolve to the sources, as in tsc
  customConditions: ["evokernel-source"],
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

/** Each module's imports among `files`. */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  return new Map(
    files.map((file) => {
      const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
      const resolved = importedFiles.flatMap(({ fileName }) => {
        const found = ts.resolveModuleName(fileName, file, OPTIONS, ts.sys).resolvedModule;
        return found !== undefined && known.has(found.resolvedFileName)
          ? [found.resolvedFileName]
          : [];
      });
      return [file, resolved];
    }),
  );
}

/** The graph's circles: its strongly connected components of more than one module (Tarjan). */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  function visit(node: string): void {
    order.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!order.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0));
      } else if (stack.includes(next)) {
        low.set(node, Math.min(low.get(node) ?? 0, order.get(next) ?? 0));
      }
    }
    if (low.get(node) !== order.get(node)) return;
    const component: string[] = [];
    let top: string | undefined;
    do {
      top = stack.pop();
      if (top !== undefined) component.push(top);
    } while (top !== undefined && top !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component);
  }
  for (const node of graph.keys()) if (!order.has(node)) visit(node);
  return found;
}

/** The room under `base` that holds `file`: the folder directly under it, or the loose file. */
function room(base: string, file: string): string | undefined {
  const path = relative(base, file);
  if (path.startsWith("..")) return undefined;
  return path.split("/")[0];
}

/**
 * The imports between the rooms of `base` (its folders and loose files): for each room, the
 * rooms it imports and the file imports that draw each arrow.
 */
function roomGraph(
  graph: ReadonlyMap<string, readonly string[]>,
  base: string,
): Map<string, Map<string, string[]>> {
  const rooms = new Map<string, Map<string, string[]>>();
  for (const [file, imported] of graph) {
    const from = room(base, file);
    if (from === undefined) continue;
    const arrows = rooms.get(from) ?? new Map<string, string[]>();
    rooms.set(from, arrows);
    for (const to of imported) {
      const into = room(base, to);
      if (into === undefined || into === from) continue;
      const why = arrows.get(into) ?? [];
      why.push(`${relative(base, file)} -> ${relative(base, to)}`);
      arrows.set(into, why);
    }
  }
  return rooms;
}

/** Each circle of rooms under `base`, with the file imports that tie it, one line an arrow. */
function roomCircles(graph: ReadonlyMap<string, readonly string[]>, base: string): string[] {
  const rooms = roomGraph(graph, base);
  const arrows = new Map([...rooms].map(([from, to]) => [from, [...to.keys()]]));
  return circles(arrows).map((circle) => {
    const inside = new Set(circle);
    const lines = circle
      .sort()
      .flatMap((from) =>
        [...(rooms.get(from) ?? [])]
          .filter(([to]) => inside.has(to))
          .map(([to, why]) => `  ${from} -> ${to}: ${why.join(", ")}`),
      );
    return [`${relative(root, base)}: ${circle.join(", ")}`, ...lines].join("\n");
  });
}

describe("import circles", () => {
  it("the finder finds a circle, type-only imports included", () => {
    const graph = new Map([
      ["schema", ["cross-field", "expression"]],
      ["cross-field", ["expression", "schema"]],
      ["expression", []],
    ]);
    expect(circles(graph).map((circle) => circle.sort())).toEqual([["cross-field", "schema"]]);
  });

  it("none among src/, runner/src and runner/scripts", () => {
    const files = ["src", "runner/src", "runner/scripts"].flatMap((dir) =>
      sources(join(root, dir)),
    );
    const graph = importGraph(files);
    expect(graph.size).toBeGreaterThan(100);
    const named = circles(graph).map((circle) => circle.map((file) => relative(root, file)).sort());
    expect(named).toEqual([]);
  });

  it("follows the runner's imports of src/ (#shared/…, #report/…, #process/…)", () => {
    const files = ["src", "runner/src"].flatMap((dir) => sources(join(root, dir)));
    const into = [...importGraph(files)]
      .filter(([file]) => relative(root, file).startsWith("runner/"))
      .flatMap(([, imported]) =>
        imported.filter((to) => !relative(root, to).startsWith("runner/")),
      );
    expect(into.length).toBeGreaterThan(50);
  });

  it("the rooms of a folder: its subfolders and its loose files, each one room", () => {
    const base = "/r";
    const graph = new Map([
      ["/r/a/x.ts", ["/r/b/y.ts"]],
      ["/r/b/y.ts", ["/r/top.ts"]],
      ["/r/top.ts", ["/r/a/z.ts"]],
      ["/r/a/z.ts", []],
      ["/r/c/w.ts", ["/r/a/x.ts"]],
    ]);
    const found = roomCircles(graph, base);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain("a -> b: a/x.ts -> b/y.ts");
    expect(found[0]).toContain("top.ts -> a: top.ts -> a/z.ts");
    expect(found[0]).not.toContain("c");
  });

  // Issue 37.2: a folder is read as one piece; folders that import each other cannot be.
  it.each(["runner/src", "src", "src/app"])("no circle among the folders of %s", (dir) => {
    const files = ["src", "runner/src"].flatMap((from) => sources(join(root, from)));
    const found = roomCircles(importGraph(files), join(root, dir));
    expect(found.join("\n\n")).toBe("");
  });
});
