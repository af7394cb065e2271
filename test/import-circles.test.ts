// No import circles among the TypeScript sources (issue 21.2: tasks/schema.ts and
// cross-field.ts imported each other). Imports are resolved by TypeScript itself, type-only
// ones included: a circle of types still means two modules that cannot be read apart.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
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
});
