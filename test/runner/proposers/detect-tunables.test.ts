// Tunable detection: every built-in kernel has something to tune (the test names any that
// has not, and why), and each detection rule works on a small synthetic source.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  applyTunables,
  detectTunables,
  maskComments,
  type Tunable,
} from "../../../runner/src/proposers/detect-tunables.js";
import { repo } from "../../helpers/cli.js";

const kernelsDir = join(repo, "kernels");
const kernels = readdirSync(kernelsDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();

function loadKernel(name: string) {
  const task = JSON.parse(readFileSync(join(kernelsDir, name, "task.json"), "utf8")) as {
    kernel: string;
    tunables?: Record<string, (string | number)[]>;
  };
  return {
    source: readFileSync(join(kernelsDir, name, task.kernel), "utf8"),
    tunables: task.tunables ?? {},
  };
}

function byId(tunables: Tunable[], id: string): Tunable {
  const found = tunables.find((t) => t.id === id);
  if (found === undefined)
    throw new Error(`no tunable ${id} among ${tunables.map((t) => t.id).join(", ")}`);
  return found;
}

describe("every built-in kernel", () => {
  it("has kernels to look at", () => {
    expect(kernels.length).toBeGreaterThan(0);
  });

  it("has at least one tunable, found in the source alone or declared by the task", () => {
    const without = kernels.filter((name) => {
      const { source, tunables } = loadKernel(name);
      return detectTunables(source, tunables).length === 0;
    });
    const why = without.map((name) => {
      const { source } = loadKernel(name);
      return `${name}: no #define/constexpr knob, literal block size, #pragma unroll N or __launch_bounds__ in ${source.length} characters, and no task tunables`;
    });
    expect(why).toEqual([]);
  });

  it.each(kernels)("%s: the source alone shows a tunable", (name) => {
    const { source } = loadKernel(name);
    expect(detectTunables(source).length).toBeGreaterThan(0);
  });

  it.each(kernels)("%s: declared tunables come first, with the task's values", (name) => {
    const { source, tunables } = loadKernel(name);
    const found = detectTunables(source, tunables);
    const declared = Object.keys(tunables);
    expect(found.slice(0, declared.length).map((t) => t.id)).toEqual(declared);
    for (const t of found.slice(0, declared.length)) {
      expect(t.declared).toBe(true);
      for (const value of tunables[t.id] ?? []) expect(t.values).toContain(value);
    }
  });

  it.each(kernels)("%s: every tunable's current value is among its values", (name) => {
    const { source, tunables } = loadKernel(name);
    for (const t of detectTunables(source, tunables)) expect(t.values).toContain(t.current);
  });

  it("finds the softmax template's knobs: its declared ones, then the register cap", () => {
    const { source, tunables } = loadKernel("softmax");
    const found = detectTunables(source, tunables);
    expect(found.map((t) => [t.id, t.kind])).toEqual([
      ["THREADS_PER_ROW", "define"],
      ["ROWS_PER_BLOCK", "define"],
      ["VEC", "define"],
      ["ONLINE", "define"],
      ["CACHE", "define"],
      ["UNROLL", "define"],
      ["min-blocks", "min-blocks"],
    ]);
    expect(byId(found, "THREADS_PER_ROW").values).toEqual([32, 64, 128, 256, 512, 1024]);
    // the defaults are the first version's: a 256-thread block per row, one online pass
    expect(Object.fromEntries(found.map((t) => [t.id, t.current]))).toMatchObject({
      THREADS_PER_ROW: 256,
      ROWS_PER_BLOCK: 1,
      VEC: 1,
      ONLINE: 1,
      CACHE: 0,
      UNROLL: 4,
    });
  });

  it("edits an unguarded macro in the source instead of passing -D (cross_entropy)", () => {
    const { source, tunables } = loadKernel("cross_entropy");
    const found = detectTunables(source, tunables);
    const final = byId(found, "FINAL_THREADS");
    expect(final.kind).toBe("macro");
    expect(final.values).toEqual([64, 128, 256, 512, 1024]);
    // IGNORE_INDEX means something: never a tunable.
    expect(found.map((t) => t.id)).not.toContain("IGNORE_INDEX");
    const choice = found.map((t) => (t.id === "FINAL_THREADS" ? 512 : t.current));
    const applied = applyTunables(source, found, choice);
    expect(applied.defines).toEqual({});
    expect(applied.source).toContain("#define FINAL_THREADS 512");
    expect(applied.source.replace("#define FINAL_THREADS 512", "#define FINAL_THREADS 256")).toBe(
      source,
    );
  });
});

describe("detection rules on synthetic sources", () => {
  it("a guarded #define becomes a -D value", () => {
    const source = "#ifndef TILE\n#define TILE 32\n#endif\n__global__ void k() {}\n";
    const [tile] = detectTunables(source);
    expect(tile).toMatchObject({ id: "TILE", kind: "define", current: 32, values: [16, 32, 64] });
    expect(applyTunables(source, [tile as Tunable], [64])).toEqual({
      source,
      defines: { TILE: "64" },
    });
    expect(applyTunables(source, [tile as Tunable], [32])).toEqual({ source, defines: {} });
  });

  it("#if !defined(NAME) counts as a guard too", () => {
    const source = "#if !defined(VEC_WIDTH)\n#define VEC_WIDTH 4\n#endif\n";
    expect(detectTunables(source)[0]).toMatchObject({ id: "VEC_WIDTH", kind: "define" });
  });

  it("an unguarded #define with a knob's name is edited in place", () => {
    const source = "#define BLOCK_ROWS 8\n__global__ void k() {}\n";
    const [rows] = detectTunables(source);
    expect(rows).toMatchObject({ id: "BLOCK_ROWS", kind: "macro", current: 8, values: [4, 8, 16] });
    expect(applyTunables(source, [rows as Tunable], [16]).source).toBe(
      "#define BLOCK_ROWS 16\n__global__ void k() {}\n",
    );
  });

  it("an unguarded #define without a knob's name, or with a meaning, is left alone", () => {
    const source =
      "#define LIMIT 100\n#define EPS_SCALE 4\n#define IGNORE_INDEX 7\n#ifndef SEED\n#define SEED 3\n#endif\n";
    expect(detectTunables(source)).toEqual([]);
  });

  it("a guard closed before the #define does not count", () => {
    const source = "#ifndef TILE\n#endif\n#define TILE 32\n";
    expect(detectTunables(source)[0]).toMatchObject({ id: "TILE", kind: "macro" });
  });

  it("constexpr constants with a knob's name", () => {
    const source =
      "constexpr int kThreads = 256;\nstatic constexpr int kWarpSize = 32;\nconstexpr int kMagic = 7;\n";
    const found = detectTunables(source);
    expect(found.map((t) => t.id)).toEqual(["kThreads"]);
    expect(found[0]).toMatchObject({ kind: "constexpr", values: [64, 128, 256, 512, 1024] });
    expect(applyTunables(source, found, [512]).source).toContain("constexpr int kThreads = 512;");
  });

  it("a macro used as a launch's block size is a block size (powers of two, 32..1024)", () => {
    const source = "#ifndef NT\n#define NT 64\n#endif\nvoid f() { k<<<g, NT, 0, s>>>(); }\n";
    expect(detectTunables(source)[0]).toMatchObject({ id: "NT", values: [32, 64, 128, 256] });
  });

  it("literal block sizes: launches and __launch_bounds__ of that value move together", () => {
    const source = [
      "__global__ void __launch_bounds__(256) k(float* x) {}",
      "__global__ void __launch_bounds__(128) other(float* x) {}",
      "void f(float* x, cudaStream_t s) {",
      "  k<<<dim3(4, 2), 256, 0, s>>>(x);",
      "  k<<<n / 256 + 1, 256>>>(x);",
      "}",
    ].join("\n");
    const found = detectTunables(source);
    const block = byId(found, "launch-block(256)");
    expect(block.kind).toBe("launch-block");
    expect(block.sites.map((s) => s.line)).toEqual([4, 5, 1]);
    expect(block.values).toEqual([64, 128, 256, 512, 1024]);
    const bound = byId(found, "launch-bounds(128)");
    expect(bound.values).toEqual([128, 256, 512]); // raised only
    const choice = found.map((t) => (t.id === "launch-block(256)" ? 512 : t.current));
    const edited = applyTunables(source, found, choice).source;
    expect(edited).toContain("__launch_bounds__(512) k(");
    expect(edited).toContain("k<<<dim3(4, 2), 512, 0, s>>>(x);");
    expect(edited).toContain("k<<<n / 256 + 1, 512>>>(x);"); // the grid expression is not a block size
  });

  it("#pragma unroll N, grouped by value; a bare #pragma unroll is not tunable", () => {
    const source = [
      "#pragma unroll 4",
      "for (;;) {}",
      "#pragma unroll",
      "for (;;) {}",
      "  #pragma unroll 4",
      "for (;;) {}",
      "#pragma unroll 2",
    ].join("\n");
    const found = detectTunables(source);
    expect(found.map((t) => [t.id, t.sites.length])).toEqual([
      ["unroll(4)", 2],
      ["unroll(2)", 1],
    ]);
    expect(found[0]?.values).toEqual([1, 2, 4, 8, 16]);
    const edited = applyTunables(source, found, [8, 2]).source;
    expect(edited.match(/#pragma unroll 8/g)).toHaveLength(2);
    expect(edited).toContain("#pragma unroll 2");
  });

  it("__launch_bounds__(X) gets a minimum-blocks argument (the in-source register cap)", () => {
    const source =
      "__global__ void __launch_bounds__(BS) k() {}\n__global__ void __launch_bounds__(64, 2) j() {}\n";
    const found = detectTunables(source);
    const minBlocks = byId(found, "min-blocks");
    expect(minBlocks.values).toEqual([null, 2, 4]);
    expect(minBlocks.sites).toHaveLength(1); // the one that has no second argument yet
    expect(applyTunables(source, [minBlocks], [4]).source).toContain(
      "__launch_bounds__(BS, 4) k()",
    );
    expect(applyTunables(source, [minBlocks], [null]).source).toBe(source);
  });

  it("declared tunables: -D when guarded or absent, an edit when unguarded, values as declared", () => {
    const source = "#ifndef BM\n#define BM 128\n#endif\n#define BN 64\n";
    const found = detectTunables(source, {
      BM: [64, 128],
      BN: [64, 128],
      VEC: ["float2", "float4"],
    });
    expect(found.map((t) => [t.id, t.kind, t.current, t.values])).toEqual([
      ["BM", "define", 128, [64, 128]],
      ["BN", "macro", 64, [64, 128]],
      ["VEC", "define", null, [null, "float2", "float4"]],
    ]);
    const applied = applyTunables(source, found, [64, 128, "float4"]);
    expect(applied.defines).toEqual({ BM: "64", VEC: "float4" });
    expect(applied.source).toContain("#define BN 128");
  });

  it("a declared value list that lacks the source's value gets it added", () => {
    const found = detectTunables("#ifndef BS\n#define BS 96\n#endif\n", { BS: [128, 256] });
    expect(found[0]?.values).toEqual([96, 128, 256]);
  });

  it("looks past comments and strings", () => {
    const source = [
      "// #define BLOCK_SIZE 256",
      "/* k<<<g, 128>>>(); #pragma unroll 4 */",
      'const char* s = "k<<<g, 64>>>";',
    ].join("\n");
    expect(detectTunables(source)).toEqual([]);
    expect(maskComments(source)).toHaveLength(source.length);
  });

  it("finds nothing where there is nothing", () => {
    expect(detectTunables("__global__ void k(float* x) { x[0] = 1.f; }\n")).toEqual([]);
  });
});
