// Every built-in kernel compiles for Hopper (sm_90) with plain nvcc, the way the harness
// builds the evk format. Runs without a GPU; in CI a missing nvcc is a failure.
import { existsSync } from "node:fs";
import { readdir, readFile, mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { basename, delimiter, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { childEnv, runProcess } from "../../runner/src/harness/exec.js";
import { createLimit } from "../../runner/src/util/limit.js";
import { repo } from "../helpers/cli.js";
import { inCi } from "../helpers/python.js";

function findNvcc(): string | null {
  const onPath = (process.env["PATH"] ?? "").split(delimiter).map((dir) => join(dir, "nvcc"));
  return [...onPath, "/usr/local/cuda/bin/nvcc"].find((file) => existsSync(file)) ?? null;
}

async function kernelSources(): Promise<string[]> {
  const entries = await readdir(join(repo, "kernels"), { recursive: true }).catch(() => []);
  return entries
    .filter((entry) => entry.endsWith(".cu"))
    .map((entry) => join(repo, "kernels", entry))
    .sort();
}

const nvcc = findNvcc();
const sources = await kernelSources();
const out = await mkdtemp(join(tmpdir(), "evokernel-nvcc-"));
const limit = createLimit(availableParallelism());

if (nvcc === null && !inCi)
  console.warn("skipping kernel compilation: nvcc not found (install the CUDA toolkit)");

afterAll(() => rm(out, { recursive: true, force: true }));

describe.skipIf(nvcc === null && !inCi)("kernels compile with nvcc for sm_90", () => {
  it("has nvcc (CI images carry it at /usr/local/cuda/bin)", () => {
    expect(nvcc).not.toBeNull();
  });

  it("has kernels to compile", () => {
    expect(sources.length).toBeGreaterThan(0);
  });

  it.concurrent.each(sources.map((file) => [file.slice(repo.length), file]))(
    "%s",
    async (_name, file) => {
      const source = await readFile(file, "utf8");
      // torch-ext kernels need torch's headers; the harness builds those through torch.
      if (source.includes("PYBIND11_MODULE")) return;
      const library = join(
        out,
        `${basename(file, ".cu")}-${Math.random().toString(36).slice(2)}.so`,
      );
      const args = ["-O3", "-std=c++17", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC"];
      const include = ["-I", join(repo, "runner", "harness", "include")];
      const compiled = await limit(() =>
        runProcess(nvcc ?? "nvcc", [...args, ...include, "-o", library, file], {
          env: childEnv(),
          timeoutMs: 600_000,
        }),
      );
      expect(compiled.output.trim() === "" ? compiled.exitCode : compiled.output).toBe(0);
    },
    600_000,
  );
});

// The template kernels (task.json "tunables"): every value of every tunable compiles, each
// with the others at their defaults (or the nearest combination the constraints allow), and
// every combination of the structural knobs (VEC, CACHE, ONLINE, WELFORD) at a warp per row,
// four rows a block. Device code only (-cubin: where the combinations differ; the full build
// of the defaults is above). lab/template-sweep.py builds, checks and times every
// combination on the GPU.
type Spec = { tunables?: Record<string, (number | string)[]>; constraints?: string[] };
const STRUCTURAL = ["VEC", "CACHE", "ONLINE", "WELFORD"];
const { parseConstraints, satisfies } = await import("../../runner/src/tasks/constraints.js");

async function templates(): Promise<{ name: string; file: string; spec: Spec; source: string }[]> {
  const dirs = await readdir(join(repo, "kernels"), { withFileTypes: true });
  const out = [];
  for (const dir of dirs.filter((d) => d.isDirectory())) {
    const spec = JSON.parse(
      await readFile(join(repo, "kernels", dir.name, "task.json"), "utf8"),
    ) as Spec;
    if (!spec.constraints) continue; // the templates declare which combinations exist
    const file = join(repo, "kernels", dir.name, "kernel.cu");
    out.push({ name: dir.name, file, spec, source: await readFile(file, "utf8") });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

function defaultsOf(source: string, names: string[]): Record<string, number | string> {
  return Object.fromEntries(
    names.map((name) => {
      const m = new RegExp(`#ifndef ${name}\\s*\\n\\s*#define ${name} (\\S+)`).exec(source);
      const value = m?.[1] ?? "";
      return [name, /^-?\d+$/.test(value) ? Number(value) : value];
    }),
  );
}

/** The combinations to compile: each value once, then the structural knobs' product. */
function coveringSet(spec: Spec, defaults: Record<string, number | string>) {
  const tunables = spec.tunables ?? {};
  const rules = parseConstraints(spec.constraints);
  const names = Object.keys(tunables);
  const all: Record<string, number | string>[] = [{}];
  for (const name of names) {
    const next = [];
    for (const partial of all)
      for (const v of tunables[name] ?? []) next.push({ ...partial, [name]: v });
    all.splice(0, all.length, ...next);
  }
  const valid = all.filter((combo) => satisfies(rules, combo));
  const distance = (combo: Record<string, number | string>) =>
    names.filter((n) => combo[n] !== defaults[n]).length;
  const picked = new Map<string, Record<string, number | string>>();
  const take = (combo: Record<string, number | string> | undefined) => {
    if (combo) picked.set(JSON.stringify(combo), combo);
  };
  for (const name of names)
    for (const v of tunables[name] ?? [])
      take(valid.filter((c) => c[name] === v).sort((a, b) => distance(a) - distance(b))[0]);
  const structural = names.filter((n) => STRUCTURAL.includes(n));
  for (const combo of valid) {
    const split = { THREADS_PER_ROW: 32, ROWS_PER_BLOCK: 4 };
    const others = names.filter((n) => !structural.includes(n) && !(n in split));
    if (
      Object.entries(split).every(([n, v]) => combo[n] === v) &&
      others.every((n) => combo[n] === defaults[n])
    )
      take(combo);
  }
  return { valid, picked: [...picked.values()] };
}

const templateKernels = await templates();

describe.skipIf(nvcc === null && !inCi)("template kernels", () => {
  it("are the row kernels", () => {
    expect(templateKernels.map((t) => t.name)).toEqual(
      expect.arrayContaining(["cross_entropy", "layernorm", "rmsnorm", "row_sum", "softmax"]),
    );
  });

  it("share one row toolkit, word for word (the row kernels: THREADS_PER_ROW)", () => {
    const toolkit = (source: string) =>
      source.slice(
        source.indexOf("// ---- row toolkit"),
        source.indexOf("// ---- end of the row toolkit ----"),
      );
    const rowKernels = templateKernels.filter((t) => "THREADS_PER_ROW" in (t.spec.tunables ?? {}));
    expect(rowKernels.map((t) => t.name)).toEqual(
      expect.arrayContaining(["cross_entropy", "layernorm", "rmsnorm", "row_sum", "softmax"]),
    );
    const first = toolkit(rowKernels[0]?.source ?? "");
    expect(first.length).toBeGreaterThan(1000);
    for (const t of rowKernels) expect(toolkit(t.source), t.name).toBe(first);
  });

  it.each(templateKernels.map((t) => [t.name, t]))(
    "%s: every tunable has a default under #ifndef, among its values, and the defaults keep the constraints",
    (_name, t) => {
      const names = Object.keys(t.spec.tunables ?? {});
      const defaults = defaultsOf(t.source, names);
      for (const name of names) expect(t.spec.tunables?.[name], name).toContain(defaults[name]);
      expect(satisfies(parseConstraints(t.spec.constraints), defaults)).toBe(true);
    },
  );

  const jobs = templateKernels.flatMap((t) => {
    const names = Object.keys(t.spec.tunables ?? {});
    return coveringSet(t.spec, defaultsOf(t.source, names)).picked.map((combo) => {
      const label = Object.entries(combo)
        .map(([k, v]) => `${k}=${v}`)
        .join(" ");
      return [`${t.name} ${label}`, t.file, combo] as const;
    });
  });

  it.concurrent.each(jobs)(
    "%s",
    async (_label, file, combo) => {
      const cubin = join(out, `t-${Math.random().toString(36).slice(2)}.cubin`);
      const args = [
        "-O3",
        "-std=c++17",
        "-arch=sm_90",
        "-cubin",
        "-I",
        join(repo, "runner", "harness", "include"),
      ];
      const defines = Object.entries(combo).map(([k, v]) => `-D${k}=${v}`);
      const compiled = await limit(() =>
        runProcess(nvcc ?? "nvcc", [...args, ...defines, "-o", cubin, file], {
          env: childEnv(),
          timeoutMs: 600_000,
        }),
      );
      expect(compiled.output.trim() === "" ? compiled.exitCode : compiled.output).toBe(0);
    },
    600_000,
  );
});
